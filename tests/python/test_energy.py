"""The optional observable `log_energy` (docs/model.md §5.1) against numpy from the recorded
positions, magnitudes and weights; at beta = 0 (the limit), at beta = 1e3 (where exp
overflows naively); in sweep files, `nadyn.open` and `nadyn inspect`, which also give E itself
as `energy`, from files of today and from older ones that called log_energy `energy`."""
from __future__ import annotations

import subprocess

import h5py
import numpy as np
import pytest

import nadyn


def numpy_energy(path, scheme):
    """(1/beta) log of the mean over heads and pairs of exp(beta <Q_h y_i, K_h y_j>), per
    frame, from the file's positions (y = theta, or r theta for no-norm) and /parameters."""
    with h5py.File(path, "r") as f:
        theta = f["particles/tokens/position/value"][()]
        r = f["particles/tokens/magnitude/value"][()]
        params = f["parameters"]
        beta = float(params.attrs["beta"])
        heads = int(params.attrs["heads"])
        d = theta.shape[2]
        eye = np.stack([np.eye(d)] * heads)
        q = params["Q"][()].reshape(heads, d, d) if "Q" in params else eye
        k = params["K"][()].reshape(heads, d, d) if "K" in params else eye
    y = theta * r[:, :, None] if scheme == "no-norm" else theta
    # logits[f, h, i, j] = <Q_h y_i, K_h y_j>
    logits = np.einsum("fia,hba,hbc,fjc->fhij", y, q, k, y)
    flat = logits.reshape(len(y), -1)
    if beta == 0.0:
        return flat.mean(axis=1)
    # The largest beta G subtracted: exp(1e3) overflows a double.
    top = (beta * flat).max(axis=1)
    return (top + np.log(np.exp(beta * flat - top[:, None]).mean(axis=1))) / beta


@pytest.mark.parametrize("flags", [
    ["--scheme", "pre-ln", "--beta", "2", "--weights", "gaussian", "--heads", "2",
     "--head-combine", "sum", "--T", "2"],
    ["--scheme", "no-norm", "--beta", "0.5", "--T", "1", "--r0", "0.7"],
    ["--scheme", "post-ln", "--beta", "1000", "--weights", "symmetric", "--value", "qk",
     "--T", "2"],
    ["--scheme", "peri-ln", "--beta", "0", "--weights", "orthogonal", "--T", "2"],
])
def test_energy_matches_numpy_from_the_positions(simulate, flags):
    path = simulate("energy.h5", "--n", "12", "--d", "4", "--dt", "0.01",
                    "--observe", "log_energy", "--positions", "all", *flags)
    scheme = flags[1]
    expected = numpy_energy(path, scheme)
    with h5py.File(path, "r") as f:
        energy = f["observables/log_energy/value"][()]
        assert f["observables/log_energy"].attrs["unit"] in (b"1", "1")
        assert "interaction energy" in str(f["observables/log_energy"].attrs["description"])
    assert np.isfinite(energy).all()
    np.testing.assert_allclose(energy, expected, rtol=1e-11, atol=1e-13)
    # nadyn.open reads it as a series over time.
    assert nadyn.open(path).log_energy.dims == ("time",)


def test_energy_rises_for_identity_weights_and_falls_for_minus_identity(simulate):
    for value, sign in (("same", 1.0), ("minus-identity", -1.0)):
        path = simulate(f"{value}.h5", "--scheme", "post-ln", "--n", "16", "--d", "3",
                        "--beta", "3", "--T", "4", "--value", value, "--observe", "log_energy",
                        "--positions", "none")
        energy = nadyn.open(path).log_energy.values
        steps = sign * np.diff(energy)
        assert (steps >= -1e-11).all() and steps.sum() > 1e-3, value


def test_energy_in_sweeps_and_inspect(cli, tmp_path):
    for observe in ("none", "log_energy"):
        experiment = tmp_path / f"{observe}.toml"
        experiment.write_text('[run]\nn = 8\nd = 3\nT = 2\ndt = 0.1\npositions = "none"\n'
                              f'observe = "{observe}"\n'
                              '[sweep]\nbeta = [0, 2, 1000]\nseed = [1, 2]\n')
        subprocess.run([cli, "sweep", str(experiment), "--out", str(tmp_path / f"{observe}.h5"),
                        "--quiet"], check=True, capture_output=True)
    assert "energy" not in nadyn.open(tmp_path / "none.h5")
    assert "log_energy" not in nadyn.open(tmp_path / "none.h5")
    data = nadyn.open(tmp_path / "log_energy.h5")
    assert set(data.log_energy.dims) == {"beta", "seed", "time"}
    assert np.isfinite(data.log_energy.values).all()
    # E itself where beta != 0: NaN at beta = 0 (infinite there), inf where it overflows.
    energy = data.energy.transpose(*data.log_energy.dims)
    expected = np.exp(data.beta * data.log_energy) / (2 * data.beta)
    np.testing.assert_allclose(energy.sel(beta=2).values, expected.sel(beta=2).values,
                               rtol=1e-14)
    assert np.isnan(energy.sel(beta=0).values).all()
    # Each sweep point equals the run alone (nadyn rerun repeats it bit for bit).
    rerun = tmp_path / "point.h5"
    subprocess.run([cli, "rerun", str(tmp_path / "log_energy.h5"), "--point", "5", "--out",
                    str(rerun)], check=True, capture_output=True)
    alone = nadyn.open(rerun).log_energy.values
    point = data.log_energy.stack(point=("beta", "seed")).transpose("point", "time").values[5]
    np.testing.assert_array_equal(alone, point[: len(alone)])
    described = subprocess.run([cli, "inspect", str(rerun), "--describe"], check=True,
                               capture_output=True, text=True).stdout
    assert "log_energy" in described and "interaction energy" in described


def test_energy_refused_with_qkv_norm(simulate):
    simulate("refused.h5", "--observe", "log_energy", "--qkv-norm", expect=2)


def numpy_E(path):
    """E = (1 / (2 beta n^2)) sum_{i,j} exp(beta <Q_h y_i, K_h y_j>), the heads' mean or sum
    (docs/model.md §5.1), per frame, from the file's positions."""
    with h5py.File(path, "r") as f:
        theta = f["particles/tokens/position/value"][()]
        params = f["parameters"]
        beta = float(params.attrs["beta"])
        heads = int(params.attrs["heads"])
        combine = params.attrs["head_combine"]
        combine = combine.decode() if isinstance(combine, bytes) else str(combine)
        d = theta.shape[2]
        q = params["Q"][()].reshape(heads, d, d)
        k = params["K"][()].reshape(heads, d, d)
    logits = np.einsum("fia,hba,hbc,fjc->fhij", theta, q, k, theta)
    n = theta.shape[1]
    per_head = np.exp(beta * logits).sum(axis=(2, 3)) / (2 * beta * n * n)
    return per_head.sum(axis=1) if combine == "sum" else per_head.mean(axis=1)


def test_the_stored_form_is_log_energy_and_energy_is_E_itself(cli, simulate, tmp_path):
    # The stored variable is named for what it is; nadyn.open and nadyn inspect give E.
    path = simulate("E.h5", "--scheme", "pre-ln", "--n", "10", "--d", "4", "--beta", "2",
                    "--weights", "gaussian", "--heads", "2", "--head-combine", "sum", "--T", "1",
                    "--observe", "log_energy", "--positions", "all")
    with h5py.File(path, "r") as f:
        assert "log_energy" in f["observables"] and "energy" not in f["observables"]
    expected = numpy_E(path)
    ds = nadyn.open(path)
    np.testing.assert_allclose(ds.energy.values, expected, rtol=1e-12)
    assert "itself" in ds.energy.attrs["description"]
    table = subprocess.run([cli, "inspect", str(path), "--csv"], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    header = table[0].split(",")
    assert header.index("energy") == header.index("log_energy") + 1
    printed = [float(line.split(",")[header.index("energy")]) for line in table[1:]]
    np.testing.assert_allclose(printed, expected, rtol=1e-12)
    described = subprocess.run([cli, "inspect", str(path), "--describe"], check=True,
                               capture_output=True, text=True).stdout
    assert "  log_energy " in described
    assert "  energy        the interaction energy E itself" in described

    # A file of an older nadyn, whose log_energy is called energy: read as today's.
    old = tmp_path / "old.h5"
    old.write_bytes(path.read_bytes())
    with h5py.File(old, "r+") as f:
        f.move("observables/log_energy", "observables/energy")
        f["parameters"].attrs["observe"] = "energy"
    ds = nadyn.open(old)
    np.testing.assert_array_equal(ds.log_energy.values, nadyn.open(path).log_energy.values)
    np.testing.assert_allclose(ds.energy.values, expected, rtol=1e-12)
    table = subprocess.run([cli, "inspect", str(old), "--csv"], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    assert table[0].split(",")[-2:] == ["log_energy", "energy"]
    described = subprocess.run([cli, "inspect", str(old), "--describe"], check=True,
                               capture_output=True, text=True).stdout
    assert "this file's energy is log_energy" in described
