"""The study studies/periodicity: its plateau extraction on series with known answers, and
its quick form against the sweep file re-read here apart from reduce.py."""
from __future__ import annotations

import importlib.util
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from conftest import REPO

import nadyn
import nadyn.closed_forms as closed
import nadyn.study as study

PERIODICITY = REPO / "studies" / "periodicity"


def reduce_module():
    spec = importlib.util.spec_from_file_location("periodicity_reduce", PERIODICITY / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_first_long_plateau():
    plateau = reduce_module().first_long_plateau
    t = np.arange(0.0, 10.0, 0.5)  # 20 frames
    counts = np.array([9, 9, 7, 7, 7, 7, 7, 7, 7, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3])
    # The 7s: from t = 1 to the first 3 at t = 4.5, 3.5 long; the 3s last to the end (5).
    assert plateau(t, counts, 0, 3.0) == (1.0, 4.5, 7)
    assert plateau(t, counts, 0, 3.5) == (1.0, 4.5, 7)  # inclusive
    assert plateau(t, counts, 0, 4.0) == (4.5, 9.5, 3)  # too short: the next one
    # Starting inside the 7s, the plateau is what remains of them from the start frame.
    assert plateau(t, counts, 3, 3.0) == (1.5, 4.5, 7)
    assert plateau(t, counts, 3, 3.5) == (4.5, 9.5, 3)
    assert plateau(t, counts, 0, 6.0) is None


def test_density_measure():
    measure = reduce_module().density_measure
    t = np.round(np.arange(0.0, 4.0, 0.1), 10)  # 40 frames, the last at 3.9
    modes = np.full((40, 4), 1e-4)
    modes[25:, 2] = 0.06  # mode 3 reaches 0.05 at t = 2.5
    modes[30:, 1] = 0.5   # later the harmonics take over: the dominant mode is read at 2.5
    peaks = np.zeros(40)
    peaks[26:] = 2
    peaks[28:] = 3        # 3 from t = 2.8 to the last frame, 3.9: held 1.1
    assert measure(t, modes, peaks, 1.0) == (3, 3.0, 2.5, pytest.approx(1.1))
    assert np.isnan(measure(t, modes, peaks, 1.2)[1])  # held too short: censored
    peaks[35:] = np.nan   # the run stopped at 3.4 (unresolved): 3 held 0.6
    assert np.isnan(measure(t, modes, peaks, 1.0)[1])
    assert np.isnan(measure(t, modes, np.zeros(40), 1.0)[1])  # no peak ever: censored
    assert reduce_module().wilson(16, 16)[0] == pytest.approx(0.806, abs=1e-3)
    assert reduce_module().wilson(0, 16)[1] == pytest.approx(0.194, abs=1e-3)


def test_quick_form_against_the_sweep(quick_twice, tmp_path):
    result = quick_twice(PERIODICITY, figures=True)
    table = result.table
    assert result.figure is not None and result.figure.stat().st_size > 0
    data = nadyn.open(result.sweep_files["plateaus"])
    assert list(table.beta) == [5.0]
    for _, row in table.iterrows():
        assert row["k_max"] == closed.fastest_mode(row["beta"], int(row["d"]))
        modes = []
        for seed in data.seed.values:
            m = data.modes.sel(d=row["d"], beta=row["beta"], seed=seed).transpose("time", "mode")
            values = m.values
            first = next(i for i in range(len(values)) if np.nanmax(values[i]) >= 0.05)
            modes.append(str(1 + int(np.argmax(values[first]))))
        # A histogram of the seeds' modes: "VALUExSEEDS" entries.
        listed = dict(entry.split("x") for entry in row["mode"].split())
        assert {k: int(v) for k, v in listed.items()} == dict(Counter(modes))
    # The paper's example: three-fold at beta = 5 on the circle, in both seeds.
    assert table.loc[table.beta == 5.0, "mode"].item() == "3x2"

    # The density (experiments/density.toml): re-read apart from reduce.py. Every run stops
    # when its grid gives out (status 4) or at T; the mass stays 1 (docs/model.md §16.2); the
    # `peaks` of the last frame are the strict local maxima above 2 of the final density.
    density = nadyn.open(result.sweep_files["density"])
    assert set(np.unique(density.status.values)) <= {1, 4}
    assert np.nanmax(np.abs(density.mass.values - 1.0)) < 1e-10
    rows = pd.read_csv(tmp_path / "a" / "periodicity_density.csv")
    assert sorted(set(rows.beta)) == [5.0, 20.0] and (rows.seeds == 2).all()
    for _, row in rows.iterrows():
        init = next(i for i in density.init.values if float(i.split(":")[1].split(",")[0]) == row["eps"])
        modes, counts = [], []
        for seed in density.seed.values:
            point = {"init": init, "beta": row["beta"], "seed": seed}
            m = density.modes.sel(point).transpose("time", "mode").values
            p = density.peaks.sel(point).values
            t = density.time.values
            last = np.flatnonzero(np.isfinite(p))[-1]
            rho = density.density.sel(point).values
            local = (rho > np.roll(rho, 1)) & (rho > np.roll(rho, -1)) & (rho > 2.0)
            assert p[last] == local.sum()
            first = next(i for i in range(len(m)) if np.nanmax(m[i]) >= 0.05)
            modes.append(1 + int(np.argmax(m[first])))
            j = last
            while j > 0 and p[j - 1] == p[last]:
                j -= 1
            counts.append(int(p[last]) if t[last] - t[j] >= 1.0 and p[last] >= 1 else None)
        k_max = closed.fastest_mode(row["beta"], 2)
        assert row["k_max"] == k_max
        assert row["mode_agree"] == np.mean([m == k_max for m in modes])
        assert row["censored"] == sum(c is None for c in counts)
        measured = [c for c in counts if c is not None]
        if measured:
            assert row["peaks_agree"] == pytest.approx(np.mean([c == k_max for c in measured]))
    # The n = infinity columns of the main table are the EPS = 1e-4 rows.
    infinite = rows[rows.eps == 1e-4].set_index("beta")
    assert table.loc[table.beta == 5.0, "mode_agree_inf"].item() == infinite.loc[5.0, "mode_agree"]

    # Finite n against the density: the counts of seeds whose mode is k_max, and Fisher's
    # exact test of the particles against each density row, from the counts above.
    from scipy.stats import fisher_exact

    finite = pd.read_csv(tmp_path / "a" / "periodicity_finite_n.csv").set_index("beta")
    particles = table.set_index("beta").loc[5.0]
    k = round(particles["mode_agree"] * particles["seeds"])
    assert finite.loc[5.0, "particles"] == f"{k} of 2"
    for label, eps in (("same_noise", 0.03125), ("infinite", 1e-4)):
        density_row = rows[(rows.eps == eps) & (rows.beta == 5.0)].iloc[0]
        kd = round(density_row["mode_agree"] * density_row["seeds"])
        assert finite.loc[5.0, f"density_{label}"] == f"{kd} of 2"
        expected = fisher_exact([[k, 2 - k], [kd, 2 - kd]])[1]
        assert finite.loc[5.0, f"p_{label}"] == pytest.approx(expected, rel=1e-12)
    sensitivity = pd.read_csv(tmp_path / "a" / "periodicity_sensitivity.csv")
    assert sorted(set(sensitivity.factor)) == [0.5, 1.0, 2.0]
    assert (sensitivity[sensitivity.threshold_of.str.startswith("ALPHA")].threshold.unique()
            == [0.025, 0.05, 0.1]).all()

    # The rows per scheme (experiments/fast.toml, slow.toml). sqrt-scaling is post-ln on the clock
    # tau(t) = 2 (sqrt(t + 1) - 1) for every configuration (docs/model.md §2.6): the same path,
    # so the same plateau count per seed, starting where post-ln's start is moved by the clock
    # (up to a frame: 0.2 apart).
    schemes = pd.read_csv(tmp_path / "a" / "periodicity_schemes.csv", comment="#")
    assert sorted(schemes.scheme) == sorted(["post-ln", "sqrt-scaling", "ngpt", "mix-ln",
                                             "pre-ln", "peri-ln"])
    sweep = nadyn.open(result.sweep_files["fast"])
    assert (sweep.status == 1).all() and (nadyn.open(result.sweep_files["slow"]).status == 1).all()
    # The same rows on the study's page (PAGE_TABLES), one per scheme.
    page = (tmp_path / "a" / "periodicity.md").read_text().split("## Per scheme", 1)[1]
    assert all(page.count(f"| {s} |") == 1 for s in schemes.scheme)
    post = schemes[schemes.scheme == "post-ln"].iloc[0]
    sqrt = schemes[schemes.scheme == "sqrt-scaling"].iloc[0]
    assert "-" not in post["clusters"]
    assert sqrt["clusters"] == post["clusters"] and sqrt["same_as_post_ln"] == 1.0
    assert post["rel_diff"] == 0.0
    assert abs(sqrt["t_plateau"] - sqrt["t_predicted"]) <= max(0.4, 0.1 * sqrt["t_predicted"])
    # post-ln's plateau count per seed from the sweep file, apart from reduce.py: the first
    # stretch of >= 3 time units at one count after the modes reach 0.05.
    starts = []
    for seed, expected in zip(sweep.seed.values, post["clusters"].split()):
        point = {"scheme": "post-ln", "d": 2, "beta": 5.0, "seed": seed}
        m = sweep.modes.sel(point).transpose("time", "mode").values
        c = sweep.clusters.sel(point).values
        t = sweep.time.values
        first = next(i for i in range(len(m)) if np.nanmax(m[i]) >= 0.05)
        count = None
        i = first
        while i < len(c) and count is None:
            j = i
            while j + 1 < len(c) and c[j + 1] == c[i]:
                j += 1
            end = t[j + 1] if j + 1 < len(c) else t[j]
            if end - t[i] >= 3.0:
                count = int(c[i])
                starts.append(t[i])
            i = j + 1
        assert str(count) == expected
    assert post["t_plateau"] == pytest.approx(np.mean(starts), rel=1e-9)
    # sqrt-scaling's clock inverted by hand: t = (tau / 2 + 1)^2 - 1.
    assert sqrt["t_predicted"] == pytest.approx(np.mean([(s / 2 + 1) ** 2 - 1 for s in starts]),
                                                rel=1e-6)
