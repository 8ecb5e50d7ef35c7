"""The study mean_field_limit (docs/model.md §16): n particles against the density solver.

Its quick form runs; the W1 of n i.i.d. draws to the density they are drawn from falls like
n^-1/2 (the central limit theorem for the empirical CDF: sqrt(n) (F_n - F) tends to a
Brownian bridge, and W1 on the circle is an L1 norm of F_n - F - c); the uniform density is
stationary in the solver; the departure time is found exactly on an exponential; and the
study writes the same bytes twice.
"""
from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from conftest import REPO

import nadyn.study as study

STUDY = REPO / "studies" / "mean_field_limit"
# The start only, 64 draws at each n: the fitted slope's 95 % interval is then about
# +-0.04, well inside the +-0.1 asserted.
START_ONLY = ["n=[256, 1024, 4096]", "seeds=[64, 64, 64]", "horizon=[0.0, 0.0, 0.0]"]


def _reduce_module():
    spec = importlib.util.spec_from_file_location("mean_field_limit_reduce", STUDY / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def start_only(tmp_path_factory):
    out = tmp_path_factory.mktemp("start_only")
    return study.run(STUDY, out_dir=out, sets=START_ONLY, figures=False), out


def test_w1_falls_like_one_over_sqrt_n(start_only):
    result, _ = start_only
    rate = result.extra_tables["mean_field_limit_rate"]
    for start in ("uniform", "perturbed:3,0.05"):
        row = rate[(rate.start == start) & (rate.t == 0.0)].iloc[0]
        assert (row.n_from, row.n_to, row.runs) == (256, 4096, 192)
        assert row.slope == pytest.approx(-0.5, abs=0.1), start
        assert row.slope_low < row.slope < row.slope_high


def test_the_uniform_density_is_stationary(tmp_path):
    # The quick form runs n = 256 to t = 3; the solver's uniform density never moves (every
    # rate of the weak form vanishes at rho = 1) and the perturbed one stays resolved.
    result = study.run(STUDY, out_dir=tmp_path, quick=True, figures=True)
    density = result.extra_tables["mean_field_limit_density"].set_index("start")
    assert density.loc["uniform", "max_density_at_last"] == pytest.approx(1.0, abs=1e-12)
    assert density.loc["perturbed:3,0.05", "status"] == "complete"
    assert density.loc["uniform", "lambda_max"] == pytest.approx(
        9 * 10.331150169151138 / (5 * 27.239871823604453), rel=1e-12)  # 9 I_3(5) / (5 I_0(5))
    table = result.table
    assert set(table.n) == {256, 1024, 4096}
    assert table[(table.n == 256)].t.max() == 3.0
    assert result.figure is not None and result.figure.stat().st_size > 0
    # The departure as the statistics standard asks: every run counted (started above, reached
    # or censored at the horizon) and a Kaplan-Meier median over all of them. At w* = 0.05
    # every n = 256 run starts above (W1(0) ~ 1.3 / sqrt(256) = 0.08): an event at t = 0 in
    # each, so the median and both ends of its interval are 0.
    departure = result.extra_tables["mean_field_limit_departure"]
    assert (departure.started_above + departure.reached + departure.censored == departure.runs).all()
    low = departure[(departure.n == 256) & (departure.threshold == 0.05)
                    & (departure.start == "uniform")].iloc[0]
    assert (low.started_above, low.reached, low.censored) == (16, 0, 0)
    assert low.t_leave_median == "0 [0, 0]"
    # The W1 table's standard error is the sample standard deviation over sqrt(runs): its
    # 95 % interval is mean +- t_{15} sem.
    row = table[(table.n == 1024) & (table.t == 0.0)].iloc[0]
    assert row.w1_high - row.w1_mean == pytest.approx(2.131449545559323 * row.w1_sem, rel=1e-9)
    # One fit per threshold with a verdict; the quick form has too few runs below w* / 2 to fit.
    fit = result.extra_tables["mean_field_limit_departure_fit"]
    assert set(fit.verdict) == {"no fit"} and fit.same.all()


def test_departure_is_exact_on_an_exponential():
    reduce = _reduce_module()
    times = np.arange(0.0, 8.01, 0.5)
    w1 = 0.01 * np.exp(0.7 * times)
    assert reduce.departure(times, w1, 0.1) == pytest.approx(math.log(10) / 0.7, rel=1e-12)
    assert reduce.departure(times, w1, 0.005) == 0.0          # starts above
    assert math.isnan(reduce.departure(times, w1, 10.0))     # censored


def test_the_study_writes_the_same_bytes_twice(start_only, tmp_path):
    _, first = start_only
    study.run(STUDY, out_dir=tmp_path, sets=START_ONLY, figures=False)
    for name in ("mean_field_limit.csv", "mean_field_limit_rate.csv", "mean_field_limit.md"):
        assert (tmp_path / name).read_bytes() == (first / name).read_bytes(), name
