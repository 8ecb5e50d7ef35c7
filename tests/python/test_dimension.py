"""The study studies/dimension: its plateau and crossing rules on series with known answers,
and its quick form against the runs repeated one by one by `nadyn simulate` and against the
scalar ODE integrated here, apart from reduce.py."""
from __future__ import annotations

import importlib.util
import subprocess

import numpy as np
import pytest

from conftest import REPO

import nadyn
import nadyn.closed_forms as closed

DIMENSION = REPO / "studies" / "dimension"


def reduce_module():
    spec = importlib.util.spec_from_file_location("dimension_reduce", DIMENSION / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_first_plateau_and_time_to_one():
    reduce = reduce_module()
    t = np.arange(0.0, 20.0, 0.5)  # 40 frames
    # 30 at the start (sits still for 3: not below the start's count), 6 for 4.5, then 1.
    counts = np.array([30] * 6 + [29] * 2 + [6] * 9 + [1] * 23, dtype=float)
    assert reduce.first_plateau_count(t, counts, 4.0) == 6
    assert reduce.first_plateau_count(t, counts, 5.0) == 1  # the 6s are too short
    assert np.isnan(reduce.first_plateau_count(t, np.full(40, 30.0), 4.0))
    assert reduce.time_to_one(t, counts) == (8.5, True)
    # A run that never gets to one cluster is censored at its last frame; NaN frames (a
    # sweep's run that ended early) are not frames.
    short = counts.copy()
    short[10:] = np.nan
    assert reduce.time_to_one(t, short) == (4.5, False)
    assert reduce.histogram(np.array([2, 3, 2, np.nan, 3, 3])) == "3x3 2x2 -x1"


def test_ode_time_is_the_scalar_odes_crossing(cli):
    # nadyn reduced (the program, not the bindings reduce.py calls) on a fine grid: the first
    # sample with gamma >= 1 - 1e-3, against reduce.py's interpolated crossing.
    reduce = reduce_module()
    for beta in (2.0, 4.0):
        out = subprocess.run(
            [str(cli), "reduced", "--scheme", "post-ln", "--n", "32", "--beta", str(beta), "--T", "20",
             "--samples", "20000", "--csv"], capture_output=True, text=True, check=True).stdout
        rows = [line.split(",") for line in out.splitlines()[1:] if line]
        t = np.array([float(r[0]) for r in rows])
        gamma = np.array([float(r[1]) for r in rows])
        first = t[np.flatnonzero(gamma >= 1 - 1e-3)[0]]
        assert reduce.ode_time_to_one(32, beta, 20.0) == pytest.approx(first, abs=2e-3)
    assert reduce.ode_time_to_one(32, 16.0, 50.0) == np.inf  # e^16: far beyond the horizon


def test_quick_form_against_the_runs(quick_twice, cli, tmp_path):
    result = quick_twice(DIMENSION, figures=True)
    assert result.figure is not None and result.figure.stat().st_size > 0
    table = result.table
    data = nadyn.open(result.sweep_file)
    assert sorted(table.d) == [3, 128] and set(table.beta) == {4.0}
    assert data.sizes["seed"] == 4
    for _, row in table.iterrows():
        assert row["k_max"] == closed.fastest_mode(row["beta"], int(row["d"]))
        assert row["n <= d"] == ("yes" if row["d"] >= 32 else "no")
    # d = 128 (n < d): each seed's run repeated by `nadyn simulate`, its first frame with one
    # cluster read from its own file; all four seeds get there, so the Kaplan-Meier survival
    # is exactly 1/2 between the second and third times, and the median is their midpoint.
    times = []
    for seed in data.seed.values:
        path = tmp_path / f"run{seed}.h5"
        subprocess.run([str(cli), "simulate", "--scheme", "post-ln", "--n", "32", "--d", "128",
                        "--beta", "4", "--init", "uniform", "--seed", str(seed), "--integrator",
                        "rk4", "--T", "60", "--dt", "0.1", "--every", "2", "--positions", "none",
                        "--out", str(path), "--quiet"], check=True)
        run = nadyn.open(path)
        clusters = run.clusters.values
        times.append(float(run.time.values[np.flatnonzero(clusters == 1)[0]]))
    row = table[table.d == 128].iloc[0]
    assert row["reached"] == "4/4"
    ordered = sorted(times)
    assert row["t_one"] == pytest.approx(0.5 * (ordered[1] + ordered[2]), abs=1e-9)
    assert row["first plateau"] == "1x4"
    # The study's claim where n <= d: the uniform start reaches one cluster when the
    # orthogonal start does (the full form: within 6 % at beta = 2 and 4).
    assert abs(row["ratio"] - 1.0) < 0.1
