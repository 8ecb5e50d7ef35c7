"""The study studies/causal: its Renyi centres and strong Renyi centres against a hand-computed
example, its clustering on the circle against nadyn's own cluster count, its time to one
cluster on series with known answers, and its quick form against runs repeated by
`nadyn simulate`, apart from reduce.py."""
from __future__ import annotations

import importlib.util
import math
import subprocess

import numpy as np
import pandas as pd
import pytest

from conftest import REPO

import nadyn

CAUSAL = REPO / "studies" / "causal"


def reduce_module():
    spec = importlib.util.spec_from_file_location("causal_reduce", CAUSAL / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def circle(phi):
    phi = np.asarray(phi, float)
    return np.column_stack([np.cos(phi), np.sin(phi)])


def test_centres_of_a_hand_computed_example():
    reduce = reduce_module()
    # Tokens in causal order at these angles on the circle, delta = 0.5 rad:
    #   0: 0      first token: strong and Renyi
    #   1: 0.3    0.3 from token 0: neither
    #   2: 0.65   0.35 from token 1 (not strong), 0.65 from the accepted token 0: Renyi
    #   3: 1.0    0.35 from token 2 (not strong), 0.35 from the accepted token 2: neither
    #   4: 1.6    at least 0.6 from every earlier token: strong and Renyi
    #   5: 3.0    1.4 from token 4 and farther from the others: strong and Renyi
    #   6: -2.9   0.383 from token 5 across -pi = pi (the geodesic angle, not 5.9): neither
    theta = circle([0.0, 0.3, 0.65, 1.0, 1.6, 3.0, -2.9])
    assert reduce.strong_renyi_centres(theta, 0.5) == [0, 4, 5]
    assert reduce.renyi_centres(theta, 0.5) == [0, 2, 4, 5]
    # A smaller delta: token 3 is 0.35 from tokens 2 and from token 6's neighbour 5 is 0.383.
    assert reduce.strong_renyi_centres(theta, 0.34) == [0, 2, 3, 4, 5, 6]
    assert reduce.renyi_centres(theta, 0.34) == [0, 2, 3, 4, 5, 6]
    # On S^2 the same rule with the angle between unit vectors.
    e = np.eye(3)
    sphere = np.array([e[0], (e[0] + 0.1 * e[1]) / math.hypot(1, 0.1), e[2], -e[0]])
    assert reduce.strong_renyi_centres(sphere, 1.0) == [0, 2, 3]
    assert reduce.renyi_centres(sphere, 1.0) == [0, 2, 3]


def test_strong_centre_count_against_its_expectation():
    # docs/model.md §18.1: on the circle, token k is strong with probability
    # (1 - delta/pi)^(k-1), so E[strong] = (pi/delta) (1 - (1 - delta/pi)^n).
    reduce = reduce_module()
    rng = np.random.default_rng(11)
    n, delta, draws = 40, 0.5, 2000
    counts = [len(reduce.strong_renyi_centres(circle(rng.uniform(-math.pi, math.pi, n)), delta))
              for _ in range(draws)]
    expected = (math.pi / delta) * (1.0 - (1.0 - delta / math.pi) ** n)
    assert abs(np.mean(counts) - expected) < 4.0 * np.std(counts) / math.sqrt(draws)


def test_circle_clusters_and_time_to_one():
    reduce = reduce_module()
    # Linked when cos(gap) >= 1 - eps: at eps = 1e-3 the link distance is 0.0447 rad. The
    # tokens near 0 and near 2 pi are one arc across the cut; 3 and 3.01 another; 1.5 alone.
    theta = circle([0.0, 0.01, 0.02, 3.0, 3.01, 2 * math.pi - 0.03, 1.5])
    labels = reduce.circle_labels(theta, 1e-3)
    assert reduce.circle_count(theta, 1e-3) == 3
    assert labels[0] == labels[1] == labels[2] == labels[5]
    assert labels[3] == labels[4] != labels[0] != labels[6] != labels[3]
    assert reduce.circle_count(theta, 1e-6) == 7  # every gap wider than 0.0014 rad
    assert reduce.circle_count(circle([0.0, 0.02, 0.04]), 1e-3) == 1
    t = np.arange(8.0)
    assert reduce.time_to_one(t, [9, 5, 2, 1, 2, 1, 1, 1]) == (5.0, True)
    assert reduce.time_to_one(t, [9, 5, 2, 2, 2, 2, np.nan, np.nan]) == (5.0, False)


def test_quick_form_against_runs_repeated(quick_twice, cli, tmp_path):
    reduce = reduce_module()
    result = quick_twice(CAUSAL, figures=True)
    assert result.figure is not None and result.figure.stat().st_size > 0
    table = result.table
    assert set(table.weights) == {"identity", "gaussian"}
    assert set(table.beta) == {1.0, 4.0} and (table.runs == 2).all()
    runs = pd.read_csv(tmp_path / "a" / "causal_runs.csv")
    parking = pd.read_csv(tmp_path / "a" / "causal_parking_runs.csv")
    assert len(runs) == 8 and len(parking) == 2
    # The time to one cluster of Gaussian Q, K with V = I, repeated by `nadyn simulate`.
    for seed in (1, 2):
        path = tmp_path / f"conv{seed}.h5"
        subprocess.run([cli, "simulate", "--scheme", "post-ln", "--causal", "--n", "16",
                        "--d", "2", "--beta", "4", "--init", "uniform", "--seed", str(seed),
                        "--weights", "gaussian", "--value", "identity",
                        "--integrator", "dopri5", "--dt", "0.5", "--T", "100",
                        "--frame-times", "logspace:-1,2,40", "--positions", "none",
                        "--observables", "clusters,mean_cos", "--out", str(path), "--quiet"],
                       check=True)
        run = nadyn.open(path)
        counts, times = run.clusters.values, run.time.values
        row = runs[(runs.weights == "gaussian") & (runs.beta == 4) & (runs.seed == seed)].iloc[0]
        if counts[-1] == 1:
            above = np.flatnonzero(counts != 1)
            assert bool(row["merged"])
            assert row["t_one"] == pytest.approx(float(times[above[-1] + 1]), rel=1e-12)
        else:
            assert not bool(row["merged"])
    # The parking picture of seed 1, repeated: the centres of its start, nadyn's cluster count
    # equal to the circle's single linkage at every frame, and token 1 (index 0) never moving
    # (it attends only to itself; the projection back onto the sphere after each step may
    # round its last bit).
    path = tmp_path / "parking1.h5"
    subprocess.run([cli, "simulate", "--scheme", "post-ln", "--causal", "--n", "40", "--d", "2",
                    "--beta", "64", "--init", "uniform", "--seed", "1", "--integrator", "dopri5",
                    "--dt", "0.1", "--T", "30", "--frame-times", "linspace:0,30,13",
                    "--observables", "clusters", "--out", str(path), "--quiet"], check=True)
    run = nadyn.open(path)
    theta = run.theta.values
    delta = 4.0 / math.sqrt(64.0)
    gaps = np.arccos(np.clip(theta[0] @ theta[0].T, -1, 1))
    strong = [k for k in range(40) if all(gaps[k, j] >= delta for j in range(k))]
    row = parking[parking.seed == 1].iloc[0]
    assert row["strong"] == len(strong) >= 1
    for frame in range(theta.shape[0]):
        assert reduce.circle_count(theta[frame], 1e-3) == int(run.clusters.values[frame])
    np.testing.assert_allclose(theta[:, 0], np.repeat(theta[:1, 0], len(theta), 0),
                               rtol=0, atol=1e-14)
    assert row["moved_strong_median"] <= row["moved_other_median"] + 1e-12
