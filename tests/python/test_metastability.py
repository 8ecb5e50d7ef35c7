"""The study metastability (docs/model.md §15): the merge time of two point clusters against
an independent integration of their angle's ODE, particle runs from caps:2,EPS,DELTA against
it, the clock of sqrt-scaling, and the quick form against the same numbers.
"""
from __future__ import annotations

import importlib.util
import math
import subprocess

import h5py
import numpy as np
import pandas as pd
import pytest
from scipy.integrate import solve_ivp

from conftest import REPO

import nadyn.study as study

STUDY = REPO / "studies" / "metastability"


def _reduce_module():
    spec = importlib.util.spec_from_file_location("metastability_reduce", STUDY / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ode_merge_time(beta, delta, eps=1e-3):
    """dD/dt = -2 sin D / (1 + exp(beta (1 - cos D))) integrated until 1 - cos D = eps."""
    def reached(_, y):
        return 1.0 - math.cos(y[0]) - eps
    reached.terminal = True
    solution = solve_ivp(lambda _, y: [-2.0 * math.sin(y[0]) / (1.0 + math.exp(beta * (1.0 - math.cos(y[0]))))],
                         [0.0, 1e7], [delta], events=reached, rtol=1e-10, atol=1e-12)
    return float(solution.t_events[0][0])


@pytest.mark.parametrize("beta,delta", [(2.0, 1.0), (5.0, math.pi / 2), (8.0, 2.0)])
def test_merge_time_is_the_odes(beta, delta):
    reduce = _reduce_module()
    assert reduce.merge_time(beta, delta) == pytest.approx(ode_merge_time(beta, delta), rel=1e-6)


def test_plateau_extraction():
    reduce = _reduce_module()
    times = np.arange(10.0)
    counts = np.array([5, 3, 3, 3, 2, 2, 2, 2, 1, 1])
    # Twos from t = 4 to the first frame at one cluster, t = 8; the final single cluster
    # (censored, 2 long) does not count unless asked for.
    assert reduce.longest_plateau(times, counts) == (4.0, 2.0)
    assert reduce.longest_plateau(times, counts, least=1) == (4.0, 2.0)
    length, count = reduce.longest_plateau(times, np.ones(10))
    assert length == 0.0 and math.isnan(count)
    assert reduce.scheme_clock("sqrt-scaling", 10.0, 0.0) == pytest.approx(35.0)
    assert reduce.scheme_clock("pre-ln", 3.0, 0.0) == pytest.approx(math.e ** 3 - 1.0)


def _merge_frame(path):
    """The time of the first frame with a single cluster."""
    with h5py.File(path, "r") as f:
        times = f["observables/clusters/time"][()]
        counts = f["observables/clusters/value"][()]
    return float(times[np.flatnonzero(counts == 1)[0]])


@pytest.mark.parametrize("scheme", ["post-ln", "sqrt-scaling"])
def test_point_clusters_merge_when_the_ode_says(simulate, scheme):
    # Caps of radius 1e-7: two point clusters 90 degrees apart, 4 tokens each, in d = 3.
    reduce = _reduce_module()
    beta, delta = 4.0, math.pi / 2
    out = simulate(f"{scheme}.h5", "--scheme", scheme, "--n", "8", "--d", "3", "--beta", str(beta),
                   "--init", f"caps:2,1e-7,{delta!r}", "--integrator", "dopri5", "--T", "60",
                   "--dt", "0.01", "--every", "1", "--rtol", "1e-10", "--atol", "1e-12",
                   "--positions", "none")
    t_post = ode_merge_time(beta, delta)
    expected = reduce.scheme_clock(scheme, t_post, 0.0)  # sqrt-scaling: (1 + T/2)^2 - 1
    # The first frame with one cluster lies within one frame (0.01) after the merger.
    assert _merge_frame(out) == pytest.approx(expected, abs=0.02)


def _centroid_angle(theta):
    """The angle between the centroids of the two caps of a caps:2 start, the caps found as
    the two connected groups of tokens within 0.2 rad of each other (apart from reduce.py)."""
    near = theta @ theta.T > math.cos(0.2)
    first = near[0]
    a, b = theta[first].sum(axis=0), theta[~first].sum(axis=0)
    return math.atan2(np.linalg.norm(np.cross(a, b)), a @ b)


def check_realised_angles(cli, tmp_path, result):
    """Issue 37: the prediction at each run's realised angle. The quick form's runs (seed 1),
    each start redrawn here by `nadyn simulate` with its positions, the angle between the
    caps' centroids measured apart from reduce.py, and the merge time from the ODE: the
    plateau ends at the first frame after it (frames 0.25 apart)."""
    runs = pd.read_csv(result.markdown.parent / "metastability_runs.csv")
    assert len(runs) == 3 * 2 and (runs["seed"] == 1).all()
    for row in runs.itertuples():
        out = tmp_path / f"start-{row.delta}-{row.beta}.h5"
        subprocess.run([cli, "simulate", "--n", "16", "--d", "3", "--T", "0.25", "--dt", "0.25",
                        "--integrator", "rk4", "--seed", "1", "--beta", str(row.beta),
                        "--init", f"caps:2,0.02,{row.delta!r}", "--out", str(out), "--quiet"],
                       check=True, capture_output=True)
        with h5py.File(out, "r") as f:
            angle = _centroid_angle(f["particles/tokens/position/value"][0])
        assert row.angle == pytest.approx(angle, abs=1e-12)
        assert abs(angle - row.delta) > 1e-4  # seed 1's caps are not at the nominal angle
        if not row.merged:
            assert ode_merge_time(row.beta, angle) > 200.0  # the quick form's horizon
            continue
        assert row.predicted_realised == pytest.approx(ode_merge_time(row.beta, angle), rel=1e-6)
        assert -0.01 <= row.plateau - row.predicted_realised <= 0.25
    summary = result.table.set_index(["delta_deg", "beta"])
    assert summary.loc[(90.0, 5.0), "merged"] == 1 and summary.loc[(90.0, 5.0), "runs"] == 1


def test_quick_form_against_the_ode_at_the_realised_angle(quick_twice, cli, tmp_path):
    result = quick_twice(STUDY)
    check_realised_angles(cli, tmp_path, result)
    runs = pd.read_csv(tmp_path / "a" / "metastability_runs.csv")
    merged = runs[np.isfinite(runs["plateau"])]
    assert len(merged) >= 5
    for row in merged.itertuples():
        # Caps of radius 0.02 contract first (a time of order one) and frames are 0.25 apart.
        assert row.plateau == pytest.approx(ode_merge_time(row.beta, row.delta), rel=0.1, abs=1.0)
    schemes = pd.read_csv(tmp_path / "a" / "metastability_schemes.csv")
    post = schemes[schemes.scheme == "post-ln"].set_index("beta")["plateau"]
    sqrt = schemes[schemes.scheme == "sqrt-scaling"].set_index("beta")["plateau"]
    for beta in post.index:
        assert sqrt[beta] == pytest.approx((1.0 + post[beta] / 2.0) ** 2 - 1.0, rel=0.05)
    # pre-ln and peri-ln: the clock log(1 + t) puts the merger beyond the horizon.
    assert not schemes[schemes.scheme.isin(["pre-ln", "peri-ln"])]["merged_by_T"].any()
