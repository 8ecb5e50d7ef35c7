"""The frame observables modes, effective_rank and pair_density against independent
computations from the recorded positions: scipy's Gegenbauer polynomials, numpy's SVD and a
numpy count of the pairs, in single-run files and in sweep files, read with nadyn.open."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from scipy import special

import nadyn


def zonal(k: int, d: int, x: np.ndarray) -> np.ndarray:
    """G_k of S^{d-1} normalised to G_k(1) = 1, from scipy (Chebyshev T_k for d = 2)."""
    if d == 2:
        return special.eval_chebyt(k, x)
    lam = (d - 2) / 2
    return special.eval_gegenbauer(k, lam, x) / special.eval_gegenbauer(k, lam, 1.0)


def modes_of(theta: np.ndarray, K: int) -> np.ndarray:
    """m_1..m_K of one frame (n, d) by the definition, with scipy's polynomials."""
    n, d = theta.shape
    gram = np.clip(theta @ theta.T, -1.0, 1.0)
    return np.array([zonal(k, d, gram).sum() / n**2 for k in range(1, K + 1)])


def effective_rank_of(theta: np.ndarray) -> float:
    s = np.linalg.svd(theta, compute_uv=False)
    p = s / s.sum()
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


def pair_density_of(theta: np.ndarray, eps: float) -> float:
    n = theta.shape[0]
    lower = np.tril_indices(n, -1)
    return float(np.mean((theta @ theta.T)[lower] >= 1 - eps))


@pytest.mark.parametrize("d", [2, 3, 5, 16])
def test_simulate_file_matches_scipy_and_numpy(simulate, d):
    K, eps = 7, 0.05
    path = simulate(f"spectral-d{d}.h5", "--scheme", "post-ln", "--n", "40", "--d", str(d),
                    "--beta", "6", "--T", "6", "--every", "50", "--cluster-eps", str(eps),
                    "--observe", "modes,effective_rank,pair_density", "--mode-count", str(K))
    ds = nadyn.open(path)
    assert ds.modes.dims == ("time", "mode")
    assert list(ds["mode"].values) == list(range(1, K + 1))
    assert ds.modes.attrs["unit"] == "1" and "Gegenbauer" in ds.modes.attrs["description"]
    assert int(ds.attrs["mode_count"]) == K
    theta = ds.theta.values
    for f in range(theta.shape[0]):
        np.testing.assert_allclose(ds.modes.values[f], modes_of(theta[f], K), rtol=0,
                                   atol=1e-12)
        assert ds.effective_rank.values[f] == pytest.approx(effective_rank_of(theta[f]),
                                                            rel=1e-12)
        assert ds.pair_density.values[f] == pair_density_of(theta[f], eps)
    # The clustering shows: the modes grow towards 1 and the rank falls.
    assert ds.modes.values[-1].max() > ds.modes.values[0].max()
    assert ds.effective_rank.values[-1] < ds.effective_rank.values[0]


def test_one_cluster_and_orthonormal_closed_forms(simulate):
    # --init orthogonal: n = d orthonormal directions (docs/model.md section 3): rank d, no
    # linked pair; every m_k = (1/n^2)(n + n (n-1) G_k(0)).
    d = 8
    path = simulate("orthogonal.h5", "--init", "orthogonal", "--n", str(d), "--d", str(d),
                    "--T", "1", "--every", "100", "--observe", "modes,effective_rank,pair_density",
                    "--mode-count", "6")
    ds = nadyn.open(path)
    first = ds.isel(time=0)
    assert first.effective_rank.item() == pytest.approx(d, rel=1e-12)
    assert first.pair_density.item() == 0.0
    expected = [(d + d * (d - 1) * zonal(k, d, 0.0)) / d**2 for k in range(1, 7)]
    np.testing.assert_allclose(first.modes.values, expected, rtol=0, atol=1e-14)
    # post-ln at large beta collapses to one cluster: every m_k -> 1, rank -> 1, density 1.
    path = simulate("collapse.h5", "--scheme", "post-ln", "--n", "32", "--d", "4", "--beta",
                    "1", "--T", "60", "--observe", "modes,effective_rank,pair_density")
    last = nadyn.open(path).isel(time=-1)
    assert last.clusters.item() == 1
    np.testing.assert_allclose(last.modes.values, 1.0, atol=1e-6)
    assert last.effective_rank.item() == pytest.approx(1.0, abs=1e-3)
    assert last.pair_density.item() == 1.0


def test_sweep_file_has_a_mode_dimension_and_agrees_with_numpy(cli, tmp_path):
    # mode_count is an axis: the file's mode dimension is the largest K, NaN beyond a run's own.
    experiment = tmp_path / "modes.toml"
    experiment.write_text('[run]\nn = 24\nd = 3\nbeta = 5\nT = 3\nevery = 100\n'
                          'observe = "modes,effective_rank,pair_density"\npositions = "all"\n'
                          '[sweep]\nmode_count = [3, 5]\nseed = [1, 2]\n')
    out = tmp_path / "modes.h5"
    subprocess.run([cli, "sweep", str(experiment), "--out", str(out), "--quiet"], check=True,
                   capture_output=True)
    ds = nadyn.open(out)
    assert ds.modes.dims == ("mode_count", "seed", "time", "mode")
    assert list(ds["mode"].values) == [1, 2, 3, 4, 5]
    for K in (3, 5):
        for seed in (1, 2):
            point = ds.sel(mode_count=K, seed=seed)
            for f in range(point.sizes["time"]):
                theta = point.positions.isel(time=f).values
                np.testing.assert_allclose(point.modes.isel(time=f).values[:K],
                                           modes_of(theta, K), rtol=0, atol=1e-12)
                assert np.isnan(point.modes.isel(time=f).values[K:]).all()
                assert point.effective_rank.isel(time=f).item() == pytest.approx(
                    effective_rank_of(theta), rel=1e-12)
                assert point.pair_density.isel(time=f).item() == pair_density_of(theta, 1e-3)
    summary = subprocess.run([cli, "inspect", str(out)], check=True, capture_output=True,
                             text=True).stdout
    assert "optional observables: effective_rank pair_density modes (x mode 5)" in summary


def test_inspect_prints_modes_and_csv_columns(cli, simulate):
    path = simulate("inspect.h5", "--n", "16", "--T", "1", "--observe", "modes", "--mode-count", "3")
    csv = subprocess.run([cli, "inspect", str(path), "--csv"], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert csv[0].endswith(",modes_1,modes_2,modes_3")
    ds = nadyn.open(path)
    last = [float(v) for v in csv[-1].split(",")[-3:]]
    assert last == list(ds.modes.values[-1])
    summary = subprocess.run([cli, "inspect", str(path)], check=True, capture_output=True,
                             text=True).stdout
    assert "modes at t = 1 (k = 1..3):" in summary


def test_inspect_table_shows_the_recorded_optional_observables(cli, simulate):
    path = simulate("table.h5", "--n", "16", "--T", "1", "--observe",
                    "pair_density,log_energy,effective_rank")
    summary = subprocess.run([cli, "inspect", str(path), "--rows", "2"], check=True,
                             capture_output=True, text=True).stdout.splitlines()
    header = next(line for line in summary if line.split()[:2] == ["time", "mean_cos"])
    # After the default columns, in the order of the optional observables, not of --observe.
    # E itself (energy) beside the stored log_energy.
    names = ["log_energy", "energy", "effective_rank", "pair_density"]
    assert header.split()[-4:] == names
    last = summary[summary.index(header) + 2].split()
    ds = nadyn.open(path)
    for name, printed in zip(names, last[-4:]):
        assert float(printed) == pytest.approx(ds[name].values[-1], rel=1e-7)


@pytest.mark.parametrize("value", ["0", "1025", "-3", "x"])
def test_bad_modes_is_refused_before_anything_is_written(cli, tmp_path, value):
    out = tmp_path / "bad.h5"
    result = subprocess.run([cli, "simulate", "--mode-count", value, "--out", str(out), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "mode-count" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_resume_continues_the_modes_bitwise_and_keeps_their_width(cli, simulate):
    flags = ["--n", "32", "--d", "4", "--every", "10", "--observe",
             "modes,effective_rank,pair_density", "--mode-count", "5"]
    whole = simulate("whole.h5", *flags, "--T", "4")
    part = simulate("part.h5", *flags, "--T", "2")
    # K is the file's: another one is refused, naming the parameter.
    other = subprocess.run([cli, "simulate", "--resume", str(part), "--T", "4",
                            "--mode-count", "6", "--quiet"], capture_output=True, text=True)
    assert other.returncode == 2 and "mode_count" in other.stderr
    subprocess.run([cli, "simulate", "--resume", str(part), "--T", "4", "--quiet"], check=True,
                   capture_output=True)
    a, b = nadyn.open(whole), nadyn.open(part)
    for name in ("modes", "effective_rank", "pair_density"):
        assert a[name].values.tobytes() == b[name].values.tobytes(), name
    assert b.modes.shape == (41, 5)


@pytest.mark.skipif(not nadyn.has_core, reason="nadyn._core is not built")
def test_simulate_in_python_returns_the_modes_per_frame(tmp_path):
    memory = nadyn.simulate(n=12, d=4, T=0.5, mode_count=5, observe="modes,pair_density")
    assert memory.observables["modes"].shape == (len(memory.ts), 5)
    for frame in (0, len(memory.ts) - 1):
        np.testing.assert_allclose(memory.observables["modes"][frame],
                                   modes_of(memory.ys[frame], 5), rtol=1e-12, atol=1e-14)
    ds = memory.to_xarray()
    assert ds["modes"].dims == ("time", "mode") and list(ds["mode"].values) == [1, 2, 3, 4, 5]
    # Written to a file and read back: the same numbers, every frame's K of them.
    stored = nadyn.simulate(n=12, d=4, T=0.5, mode_count=5, observe="modes,pair_density",
                            out=tmp_path / "run.h5")
    np.testing.assert_array_equal(stored.observables["modes"], memory.observables["modes"])
    np.testing.assert_array_equal(stored.observables["pair_density"],
                                  memory.observables["pair_density"])
