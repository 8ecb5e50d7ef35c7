"""nadyn.stats, the statistics every study reports (docs/studies.md): each helper against a
hand-worked example, a closed form, or an independent computation (scipy, a simulation)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

import conftest  # noqa: F401  (puts the source tree's package first)
from nadyn import stats


def test_mean_interval_is_students_t_interval():
    values = [1.0, 2.5, 2.0, 4.0, 3.5, np.nan]  # the NaN is left out
    result = stats.mean_interval(values)
    x = np.array(values[:-1])
    low, high = scipy.stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=scipy.stats.sem(x))
    assert result.n == 5
    assert result.mean == pytest.approx(2.6)
    assert result.sem == pytest.approx(scipy.stats.sem(x))
    assert (result.low, result.high) == pytest.approx((low, high))
    one = stats.mean_interval([3.0])
    assert one.mean == 3.0 and math.isnan(one.sem) and one.n == 1
    assert stats.interval_text(one) == "3 (1 run)"


# A hand-worked product-limit estimate: 8 runs, censored (+) at 3, 5 and 7.
#   t = 1: 8 at risk, 1 event: S = 7/8,             greenwood 1/(8*7)
#   t = 2: 7 at risk, 2 events: S = 7/8 * 5/7 = 5/8, greenwood + 2/(7*5)
#   t = 4: 4 at risk (4, 5+, 6, 7+), 1 event: S = 5/8 * 3/4 = 15/32, greenwood + 1/(4*3)
#   t = 6: 2 at risk, 1 event: S = 15/64,           greenwood + 1/(2*1)
TIMES = [1, 2, 2, 3, 4, 5, 6, 7]
REACHED = [True, True, True, False, True, False, True, False]


def test_kaplan_meier_by_hand():
    curve = stats.kaplan_meier(TIMES, REACHED)
    assert curve["time"].tolist() == [1, 2, 4, 6]
    assert curve["at_risk"].tolist() == [8, 7, 4, 2]
    assert curve["events"].tolist() == [1, 2, 1, 1]
    assert curve["survival"].tolist() == pytest.approx([7 / 8, 5 / 8, 15 / 32, 15 / 64])
    g = np.cumsum([1 / 56, 2 / 35, 1 / 12, 1 / 2])
    assert curve["greenwood"].tolist() == pytest.approx(g.tolist())


def test_km_median_by_hand():
    median = stats.km_median(TIMES, REACHED)
    assert median.median == 4.0  # the first time S <= 1/2
    assert (median.events, median.censored, median.horizon) == (5, 3, 7.0)
    # The log-log band by hand: S^exp(-+1.96 sqrt(g) / log S) (log S < 0).
    s = np.array([7 / 8, 5 / 8, 15 / 32, 15 / 64])
    g = np.cumsum([1 / 56, 2 / 35, 1 / 12, 1 / 2])
    z = scipy.stats.norm.ppf(0.975)
    upper = s ** np.exp(z * np.sqrt(g) / np.log(s))
    lower = s ** np.exp(-z * np.sqrt(g) / np.log(s))
    low_band, high_band = stats.survival_band(stats.kaplan_meier(TIMES, REACHED))
    assert low_band == pytest.approx(lower) and high_band == pytest.approx(upper)
    # lower = 0.387, 0.229, 0.120, 0.013: <= 1/2 from t = 1, the interval's lower end;
    # upper = 0.981, 0.861, 0.763, 0.616: never <= 1/2, so the upper end is beyond T = 7.
    assert lower[0] <= 0.5 and np.all(upper > 0.5)
    assert (median.low, median.high) == (1.0, math.inf)
    assert stats.median_text(median) == "4 [1, > 7]"


def test_greenwood_without_censoring_is_the_binomial_variance():
    # No censoring: S is one minus the empirical distribution, Var S = S (1 - S) / n.
    rng = np.random.default_rng(3)
    times = rng.exponential(size=40)
    curve = stats.kaplan_meier(times, np.ones(40, bool))
    s = curve["survival"].to_numpy()
    assert s == pytest.approx(1.0 - np.arange(1, 41) / 40)
    inside = s > 0
    assert (s[inside] ** 2 * curve["greenwood"].to_numpy()[inside]) == \
        pytest.approx(s[inside] * (1 - s[inside]) / 40)
    median = stats.km_median(times, np.ones(40, bool))
    assert median.median == pytest.approx(np.sort(times)[19] / 2 + np.sort(times)[20] / 2)


def test_km_median_interval_covers_the_true_median():
    # Exponential times (median log 2) censored at T = 1.5: the 95 % interval holds log 2 in
    # about 95 % of 400 repetitions of 16 runs (binomial sd 1.1 %), and every all-censored
    # sample is reported as beyond the horizon.
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(400):
        t = rng.exponential(size=16)
        reached = t <= 1.5
        m = stats.km_median(np.minimum(t, 1.5), reached)
        hits += m.low <= math.log(2) <= m.high
    assert 0.91 <= hits / 400 <= 0.99
    never = stats.km_median([200.0] * 4, [False] * 4)
    assert never.median == math.inf and never.censored == 4
    assert stats.median_text(never) == "> 200"


def test_sensitivity_reports_each_factor():
    table = stats.sensitivity(lambda x: x > 1.0, 1.5)
    assert table["threshold"].tolist() == [0.75, 1.5, 3.0]
    assert table["verdict"].tolist() == [False, True, True]
    assert table["same"].tolist() == [False, True, True]


def test_proportion_interval_is_scipys_wilson_interval():
    # scipy's own Wilson interval (scipy.stats.binomtest), independent of ours.
    for k, n in ((0, 16), (3, 16), (8, 16), (16, 16), (1, 3)):
        expected = scipy.stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        low, high = stats.proportion_interval(k, n)
        assert low == pytest.approx(expected.low, abs=1e-12)
        assert high == pytest.approx(expected.high, abs=1e-12)
    # By hand: 8 of 16 is centred on 1/2, half-width z sqrt(1/64 + z^2/1024) / (1 + z^2/16).
    z = scipy.stats.norm.ppf(0.975)
    half = z * math.sqrt(0.25 / 16 + z * z / 1024) / (1 + z * z / 16)
    assert stats.proportion_interval(8, 16) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-15)
    assert all(math.isnan(x) for x in stats.proportion_interval(0, 0))
