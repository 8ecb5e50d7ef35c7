"""Terminal-velocity laws (docs/model.md §3) and their least-squares fits, as in
`nadyn table terminal` (src/fit.cpp):

    exponential  v = C e^{-a t}                          log v      = log C - a t
    polynomial   v = C t^{-p}                            log v      = log C - p log t
    stretched    v = C e^{-c s} / s,  s = sqrt(t + 1)    log(v s)   = log C - c s

Each is a straight line in its own variables, so a fit is one linear regression. The theory
predicts a = 2 for post-ln and ngpt (alpha = 1), p = 3 for pre-ln, mix-ln and peri-ln, and
c = 4 for sqrt-scaling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LAWS", "PREDICTED", "LawFit", "fit_law", "terminal_window", "fit_terminal"]

LAWS = ("exponential", "polynomial", "stretched")
# The law each scheme's velocity gamma'(t) follows at large t, and its parameter.
PREDICTED = {
    "post-ln": ("exponential", 2.0),
    "ngpt": ("exponential", 2.0),
    "pre-ln": ("polynomial", 3.0),
    "mix-ln": ("polynomial", 3.0),
    "peri-ln": ("polynomial", 3.0),
    "sqrt-scaling": ("stretched", 4.0),
}


@dataclass(frozen=True)
class LawFit:
    law: str
    parameter: float  # a, p or c
    log_prefactor: float
    rms_residual: float  # in log v
    start: float
    end: float
    samples: int

    def __call__(self, t):
        """The fitted velocity at times t."""
        t = np.asarray(t, dtype=float)
        if self.law == "exponential":
            return np.exp(self.log_prefactor - self.parameter * t)
        if self.law == "polynomial":
            return np.exp(self.log_prefactor) * t ** (-self.parameter)
        s = np.sqrt(t + 1.0)
        return np.exp(self.log_prefactor - self.parameter * s) / s


def _line_variables(law: str, t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if law == "exponential":
        return t, np.log(v)
    if law == "polynomial":
        return np.log(t), np.log(v)
    if law == "stretched":
        s = np.sqrt(t + 1.0)
        return s, np.log(v) + np.log(s)
    raise ValueError(f"unknown law '{law}'; valid laws: {', '.join(LAWS)}")


def fit_law(law: str, t, v, start: float, end: float) -> LawFit:
    """Fits `law` to the samples with start <= t <= end and v > 0."""
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    keep = (t >= start) & (t <= end) & (v > 0.0)
    if law == "polynomial":
        keep &= t > 0.0
    if keep.sum() < 3:
        raise ValueError(f"too few samples ({int(keep.sum())}) in the window [{start}, {end}] for a decay law")
    x, y = _line_variables(law, t[keep], v[keep])
    # Centred sums keep the regression accurate when x is large (t ~ 1e5).
    mx, my = x.mean(), y.mean()
    slope = np.sum((x - mx) * (y - my)) / np.sum((x - mx) ** 2)
    intercept = my - slope * mx
    rms = float(np.sqrt(np.mean((y - (intercept + slope * x)) ** 2)))
    return LawFit(law, float(-slope), float(intercept), rms, float(start), float(end), int(keep.sum()))


def terminal_window(t, v, gap, *, v_floor: float = 1e-300, gap_floor: float = 1e-18,
                    near_cluster: float = 1e-3) -> tuple[float, float] | None:
    """The window of the asymptotic regime: ends at the last sample of the leading run with
    v > v_floor and gap > gap_floor (above round-off: the particles' gap is accurate while
    sqrt(gap) is far above 1e-16), starts at the first sample with gap < near_cluster past a
    twentieth of the end (offsets such as r = t + r0 have faded). None when it holds fewer than
    ten samples."""
    t = np.asarray(t, dtype=float)
    v = np.asarray(v, dtype=float)
    gap = np.asarray(gap, dtype=float)
    last = None
    for i in range(len(t)):
        if v[i] > v_floor and gap[i] > gap_floor and np.isfinite(v[i]):
            last = i
        elif last is not None:
            break
    if last is None:
        return None
    end = t[last]
    first = last
    for i in range(last + 1):
        if gap[i] < near_cluster and t[i] >= end / 20.0:
            first = i
            break
    if last < first + 10:
        return None
    return float(t[first]), float(end)


def fit_terminal(ds) -> LawFit | None:
    """The scheme's predicted law fitted to a run's velocity over `terminal_window`; None when
    the run has not reached the terminal regime (or its scheme has no predicted law)."""
    scheme = str(ds.attrs.get("scheme", ""))
    if scheme not in PREDICTED or "velocity" not in ds or "gap" not in ds:
        return None
    t, v, gap = ds["time"].values, ds["velocity"].values, ds["gap"].values
    window = terminal_window(t, v, gap)
    if window is None:
        return None
    return fit_law(PREDICTED[scheme][0], t, v, *window)
