"""The statistics the studies report (docs/studies.md, "The statistics standard").

- :func:`mean_interval`: a mean over independent runs (seeds) with its standard error and
  Student's t interval.
- :func:`kaplan_meier`, :func:`km_median`: times to an event that some runs never reach by
  the horizon T (censored at T): the product-limit estimate of the survival S(t) = P(time > t)
  with Greenwood's variance, and its median with the Brookmeyer-Crowley interval (the times
  where the pointwise log-log interval of S contains 1/2). A censored time is counted, never
  averaged as if it were observed.
- :func:`proportion_interval`: a fraction of runs (k of n) with its Wilson score interval.
- :func:`sensitivity`: a verdict recomputed with a threshold moved by x0.5 and x2.
- :func:`interval_text`, :func:`median_text`: the same as one string for a Markdown table.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _scipy_stats

LEVEL = 0.95


@dataclasses.dataclass(frozen=True)
class Interval:
    """A mean over ``n`` runs: ``sem`` its standard error (sample standard deviation over
    sqrt(n)), [``low``, ``high``] its ``level`` interval mean +- t_{n-1} sem (NaN for n < 2)."""

    mean: float
    sem: float
    low: float
    high: float
    n: int
    level: float = LEVEL


def mean_interval(values: Iterable[float], level: float = LEVEL) -> Interval:
    """The mean of the finite ``values`` with its standard error and Student's t interval.
    NaN values are dropped (a study reports how many runs it left out, and why)."""
    x = np.asarray(list(values), dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, math.nan, 0, level)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, math.nan, math.nan, math.nan, 1, level)
    sem = float(x.std(ddof=1) / math.sqrt(n))
    half = float(_scipy_stats.t.ppf(0.5 + level / 2.0, n - 1)) * sem
    return Interval(mean, sem, mean - half, mean + half, n, level)


def kaplan_meier(times: Sequence[float], reached: Sequence[bool]) -> pd.DataFrame:
    """The product-limit estimate from ``times`` (the event's time where ``reached``, else the
    time the run was last seen, its horizon T). One row per distinct event time t_j:
    ``at_risk`` n_j (runs with time >= t_j), ``events`` d_j, ``survival``
    S(t_j) = prod_{i <= j} (1 - d_i / n_i) and ``greenwood`` = sum_{i <= j} d_i / (n_i (n_i - d_i))
    (Var S = S^2 greenwood). A run censored at the same time as an event is at risk at it."""
    t = np.asarray(times, dtype=float)
    seen = np.asarray(reached, dtype=bool)
    if t.shape != seen.shape:
        raise ValueError("kaplan_meier: times and reached differ in length")
    if not np.all(np.isfinite(t)):
        raise ValueError("kaplan_meier: every run needs a time (its event's or its horizon)")
    rows, survival, greenwood = [], 1.0, 0.0
    for tj in np.unique(t[seen]):
        at_risk = int(np.sum(t >= tj))
        events = int(np.sum((t == tj) & seen))
        survival *= 1.0 - events / at_risk
        greenwood += (events / (at_risk * (at_risk - events)) if at_risk > events else math.inf)
        rows.append({"time": float(tj), "at_risk": at_risk, "events": events,
                     "survival": survival, "greenwood": greenwood})
    return pd.DataFrame(rows, columns=["time", "at_risk", "events", "survival", "greenwood"])


def survival_band(curve: pd.DataFrame, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The pointwise ``level`` interval of S(t_j) on the log-log scale (Kalbfleisch and
    Prentice): S^exp(+-z sqrt(greenwood) / log S), inside [0, 1]; S = 0 gives [0, 0]."""
    z = float(_scipy_stats.norm.ppf(0.5 + level / 2.0))
    s = curve["survival"].to_numpy(float)
    g = curve["greenwood"].to_numpy(float)
    low, high = np.zeros_like(s), np.zeros_like(s)
    inside = (s > 0.0) & (s < 1.0)
    spread = z * np.sqrt(g[inside]) / np.log(s[inside])  # negative: log S < 0
    low[inside] = s[inside] ** np.exp(-spread)
    high[inside] = s[inside] ** np.exp(spread)
    low[s >= 1.0], high[s >= 1.0] = 1.0, 1.0
    return low, high


@dataclasses.dataclass(frozen=True)
class Median:
    """The Kaplan-Meier median of a time to an event: ``median`` the first t with S(t) <= 1/2
    (inf: S stays above 1/2 up to the last run's time, so the median is beyond ``horizon``),
    [``low``, ``high``] the Brookmeyer-Crowley interval, the times whose pointwise interval of
    S holds 1/2: from the first t where its lower end is <= 1/2 to the first where its upper
    end is (inf when there is none: the bound is beyond ``horizon``), ``events`` the runs
    that reached the event, ``censored`` those that did not by ``horizon``."""

    median: float
    low: float
    high: float
    events: int
    censored: int
    horizon: float
    level: float = LEVEL

    @property
    def runs(self) -> int:
        return self.events + self.censored


def km_median(times: Sequence[float], reached: Sequence[bool], level: float = LEVEL) -> Median:
    """The Kaplan-Meier median of ``times`` with its interval (see :class:`Median`)."""
    t = np.asarray(times, dtype=float)
    seen = np.asarray(reached, dtype=bool)
    curve = kaplan_meier(t, seen)
    horizon = float(t.max()) if t.size else math.nan
    if curve.empty:
        return Median(math.inf, math.inf, math.inf, 0, int(t.size), horizon, level)
    low_band, high_band = survival_band(curve, level)
    s = curve["survival"].to_numpy(float)
    event_times = curve["time"].to_numpy(float)

    def first(mask):
        hits = np.flatnonzero(mask)
        return float(event_times[hits[0]]) if hits.size else math.inf

    # S(t) = 1/2 exactly on a flat stretch: the median is the stretch's midpoint, as usual.
    median = first(s <= 0.5)
    exact = np.flatnonzero(np.isclose(s, 0.5, rtol=0.0, atol=1e-12))
    if exact.size and exact[0] + 1 < len(event_times):
        median = 0.5 * (event_times[exact[0]] + event_times[exact[0] + 1])
    return Median(median=median, low=first(low_band <= 0.5), high=first(high_band <= 0.5),
                  events=int(seen.sum()), censored=int((~seen).sum()), horizon=horizon,
                  level=level)


def proportion_interval(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval (low, high) of a fraction of ``successes`` in ``trials`` runs:
    unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or n
    successes. (nan, nan) for no trials."""
    if trials <= 0:
        return math.nan, math.nan
    z = float(_scipy_stats.norm.ppf(0.5 + level / 2.0))
    p = successes / trials
    scale = 1.0 + z * z / trials
    centre = (p + z * z / (2.0 * trials)) / scale
    half = z * math.sqrt(p * (1.0 - p) / trials + z * z / (4.0 * trials * trials)) / scale
    return max(0.0, centre - half), min(1.0, centre + half)


def sensitivity(verdict: Callable[[float], object], threshold: float,
                factors: Sequence[float] = (0.5, 1.0, 2.0)) -> pd.DataFrame:
    """The verdict at the threshold and at the threshold moved by each factor: rows of
    ``factor``, ``threshold`` and ``verdict`` (whatever ``verdict(threshold)`` returns), and
    ``same`` (whether it equals the verdict at factor 1)."""
    at = {f: verdict(threshold * f) for f in factors}
    base = verdict(threshold) if 1.0 not in at else at[1.0]
    return pd.DataFrame([{"factor": f, "threshold": threshold * f, "verdict": v, "same": v == base}
                         for f, v in at.items()])


def _number(x: float, digits: int) -> str:
    return f"{x:.{digits}g}"


def interval_text(interval: Interval, digits: int = 3) -> str:
    """``mean +- sem [low, high]`` (``mean (1 run)`` when there is one)."""
    if interval.n == 0:
        return "-"
    if interval.n == 1:
        return f"{_number(interval.mean, digits)} (1 run)"
    return (f"{_number(interval.mean, digits)} +- {_number(interval.sem, 2)} "
            f"[{_number(interval.low, digits)}, {_number(interval.high, digits)}]")


def median_text(median: Median, digits: int = 3) -> str:
    """``median [low, high]``, with ``> T`` for a median or bound beyond the horizon."""
    def show(x):
        return f"> {_number(median.horizon, digits)}" if math.isinf(x) else _number(x, digits)

    if math.isinf(median.median):
        return f"> {_number(median.horizon, digits)}"
    return f"{show(median.median)} [{show(median.low)}, {show(median.high)}]"
