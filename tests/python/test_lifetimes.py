"""The study studies/lifetimes: its last-merger and last-plateau rules on series with known
answers, its bootstrap median against nadyn.stats' Kaplan-Meier median, the two-cluster
prediction against the closed forms of docs/model.md §15, the fit on lifetimes with a known
rate, and its quick form against a run repeated by `nadyn simulate`, apart from reduce.py."""
from __future__ import annotations

import importlib.util
import math
import subprocess

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad

from conftest import REPO

import nadyn
from nadyn import stats

LIFETIMES = REPO / "studies" / "lifetimes"


def reduce_module():
    spec = importlib.util.spec_from_file_location("lifetimes_reduce", LIFETIMES / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_last_merger_and_last_plateau():
    reduce = reduce_module()
    t = np.arange(10.0)
    # One chain at t = 0 (a dense start), then 5, 3, 2 clusters, one at t = 6.
    counts = np.array([1, 5, 3, 2, 2, 2, 1, 1, 1, 1], dtype=float)
    assert reduce.last_merger(t, counts) == (6.0, True)
    assert reduce.last_plateau(t, counts) == (3.0, True, True)  # from t = 3 to t = 6
    assert reduce.last_two_stretch(counts) == (3, 6, True)
    # A cluster that sheds a token and takes it back: only the final stretch at one counts.
    shed = np.array([5, 2, 1, 1, 2, 1, 1, 1, 1, 1], dtype=float)
    assert reduce.last_merger(t, shed) == (5.0, True)
    assert reduce.last_plateau(t, shed) == (1.0, True, True)
    # Still at two at the end: censored at the last finite frame (NaN frames are padding).
    waiting = np.array([5, 3, 2, 2, 2, 2, 2, np.nan, np.nan, np.nan])
    assert reduce.last_merger(t, waiting) == (6.0, False)
    assert reduce.last_plateau(t, waiting) == (4.0, False, True)
    # From three straight to one between two frames: no two-cluster stretch to measure.
    jump = np.array([5, 3, 3, 1, 1, 1, 1, 1, 1, 1], dtype=float)
    assert reduce.last_merger(t, jump) == (3.0, True)
    assert reduce.last_plateau(t, jump)[2] is False


def test_order_median_is_the_kaplan_meier_median():
    # Censoring at the horizon only (as in the study): the bootstrap's order statistic is
    # nadyn.stats.km_median's median, ties, exact halves and censored halves included.
    reduce = reduce_module()
    rng = np.random.default_rng(7)
    horizon = 50.0
    for trial in range(300):
        m = int(rng.integers(1, 12))
        times = np.round(rng.exponential(30.0, size=m))  # ties on purpose
        reached = times < horizon
        times = np.where(reached, times, horizon)
        expected = stats.km_median(times, reached).median
        got = float(reduce.order_median(np.where(reached, times, np.inf)))
        assert got == expected or (math.isinf(got) and math.isinf(expected)), (times, reached)


def test_two_cluster_time_against_the_closed_forms():
    reduce = reduce_module()
    eps = 1e-3
    end = math.acos(1 - eps)
    # Equal masses: docs/model.md §15's integral of (1 + exp(beta (1 - cos D))) / (2 sin D).
    for beta, angle in ((3.0, 1.5), (6.0, 2.5)):
        equal, _ = quad(lambda x: (1 + math.exp(beta * (1 - math.cos(x)))) / (2 * math.sin(x)),
                        end, angle, limit=200)
        assert reduce.pair_merge_time(beta, angle, 0.5, eps) == pytest.approx(equal, rel=1e-8)
    # Unequal masses at large beta: the Laplace form exp(beta (1 - cos D)) /
    # (beta sin^2 D (w/(1-w) + (1-w)/w)) of §15.1, to O(1/beta).
    beta, angle, w = 60.0, 2.0, 0.2
    laplace = math.exp(beta * (1 - math.cos(angle))) / (
        beta * math.sin(angle) ** 2 * (w / (1 - w) + (1 - w) / w))
    assert reduce.pair_merge_time(beta, angle, w, eps) / laplace == pytest.approx(1.0, abs=0.05)
    assert reduce.pair_merge_time(beta, math.pi, w, eps) == math.inf
    # The angle from the mean cosine of two point clusters (pairs k != l), 7 and 25 tokens.
    n, k, angle = 32, 7, 2.2
    theta = np.array([[1.0, 0.0]] * k + [[math.cos(angle), math.sin(angle)]] * (n - k))
    gram = theta @ theta.T
    mean_cos = (gram.sum() - n) / (n * (n - 1))
    assert reduce.pair_angle(mean_cos, n, k / n) == pytest.approx(angle, abs=1e-9)


def test_fit_recovers_a_known_rate_and_finds_curvature():
    reduce = reduce_module()
    rng = np.random.default_rng(3)
    betas = [2.0, 3.0, 4.0, 5.0, 6.0]

    def groups(log_median):
        # 64 seeds per beta, log-normal scatter of a factor e around the median.
        return [(b, np.exp(log_median(b) + rng.normal(0.0, 1.0, size=64))) for b in betas]

    linear = reduce.fit(groups(lambda b: 1.5 * b), resamples=500)
    assert linear["rate_low"] < 1.5 < linear["rate_high"]
    assert linear["rate_high"] - linear["rate_low"] < 0.5
    assert reduce.linear_verdict(linear) == "yes"
    curved = reduce.fit(groups(lambda b: 0.4 * b * b), resamples=500)
    assert curved["curvature_low"] > 0.2
    assert reduce.linear_verdict(curved) == "no"
    # Censored medians leave their beta out of the fit; one beta left is no fit, and says so.
    censored = [(2.0, np.full(8, 5.0)), (3.0, np.full(8, np.inf))]
    alone = reduce.fit(censored, resamples=50)
    assert alone["betas"] == "2" and math.isnan(alone["rate"])
    assert reduce.linear_verdict(alone) == "no test (fewer than 3 betas below T)"


def test_quick_form_against_a_run_repeated(quick_twice, cli, tmp_path):
    reduce = reduce_module()
    result = quick_twice(LIFETIMES, figures=True)
    assert result.figure is not None and result.figure.stat().st_size > 0
    table = result.table
    assert sorted(set(table.n)) == [32, 128, 512]
    assert set(table.d) == {2, 3} and set(table.beta) == {2.0, 3.0}
    assert (table.runs == 2).all()
    runs = pd.read_csv(tmp_path / "a" / "lifetimes_runs.csv")
    mergers = pd.read_csv(tmp_path / "a" / "lifetimes_mergers.csv")
    assert len(runs) == 24
    # Every merged run's t_last, repeated one by one: n = 32 and d = 3 at beta = 2, each seed,
    # by `nadyn simulate` with the quick form's settings, its last frame at more than one
    # cluster read from its own file.
    for seed in (1, 2):
        path = tmp_path / f"run{seed}.h5"
        subprocess.run([cli, "simulate", "--scheme", "post-ln", "--n", "32", "--d", "3",
                        "--beta", "2", "--init", "uniform", "--seed", str(seed),
                        "--integrator", "dopri5", "--dt", "0.5", "--T", "100",
                        "--frame-times", "logspace:-1,2,40", "--positions", "none",
                        "--observables", "clusters,mean_cos", "--out", str(path), "--quiet"],
                       check=True)
        run = nadyn.open(path)
        counts, times = run.clusters.values, run.time.values
        assert counts[-1] == 1
        last_above = np.flatnonzero(counts != 1)[-1]
        row = runs[(runs.n == 32) & (runs.d == 3) & (runs.beta == 2) & (runs.seed == seed)].iloc[0]
        assert bool(row["merged"])
        assert row["t_last"] == pytest.approx(float(times[last_above + 1]), rel=1e-12)
        events = nadyn.clusters.merge_events(run)
        mine = mergers[(mergers.n == 32) & (mergers.d == 3) & (mergers.beta == 2)
                       & (mergers.seed == seed)]
        last = events["clusters_after"] <= reduce.LAST_MERGERS
        np.testing.assert_allclose(mine["time"].to_numpy(), events["time"][last], rtol=1e-12)
        assert row["mergers"] == len(events["time"])
    # The per-point counts agree with the runs: merged is the seeds with a finite t_last.
    for _, point in table.iterrows():
        chosen = runs[(runs.n == point["n"]) & (runs.d == point["d"])
                      & (runs.beta == point["beta"])]
        assert point["merged"] == int(chosen["t_last"].notna().sum())
        if point["merged"] == 0:
            assert point["t_last"] == f"> {point['T']:.4g}"
