"""Terminal-velocity laws (docs/model.md §3.5) and their least-squares fits, from the library:

    exponential  v = C e^{-a t}                          log v      = log C - a t
    polynomial   v = C t^{-p}                            log v      = log C - p log t
    stretched    v = C e^{-c s} / s,  s = sqrt(t + 1)    log(v s)   = log C - c s

Each is a straight line in its own variables, so a fit is one linear regression. The theory
predicts a = 2 for post-ln and ngpt (alpha = 1), p = 3 for pre-ln, mix-ln and peri-ln, and
c = 4 for sqrt-scaling. The fits exist once, in the library (src/model/fit.cpp); this module calls
them through the compiled module ``nadyn._core.fits`` (``nadyn.has_core``), the code behind
``nadyn table terminal``, and adds the result type the plots use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LAWS", "LawFit", "predicted", "fit_law", "terminal_window", "fit_terminal"]

LAWS = ("exponential", "polynomial", "stretched")


def _fits():
    from . import _core as core  # the package's compiled module, when built

    if core is None:
        raise RuntimeError("nadyn.laws needs the compiled module nadyn._core, which is not "
                           "built here (build it: bash scripts/setup.sh)")
    return core.fits


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


def predicted(scheme: str) -> tuple[str, float] | None:
    """(law, parameter) that the theory predicts for the scheme's gamma'(t); None for a scheme
    whose gap does not go to zero (no-norm)."""
    try:
        return tuple(_fits().predicted(scheme))
    except ValueError:
        return None


def fit_law(law: str, t, v, start: float, end: float) -> LawFit:
    """Fits `law` to the samples with start <= t <= end and v > 0 (ValueError when the window
    holds fewer than three)."""
    fit = _fits().fit_law(law, np.asarray(t, dtype=float), np.asarray(v, dtype=float),
                          float(start), float(end))
    return LawFit(fit["law"], fit["parameter"], fit["log_prefactor"], fit["rms_residual"],
                  float(start), float(end), int(fit["samples"]))


def terminal_window(t, v, gap, *, v_floor: float = 1e-300, gap_floor: float = 1e-18,
                    near_cluster: float = 1e-3) -> tuple[float, float] | None:
    """The window of the asymptotic regime: ends at the last sample of the leading run with
    v > v_floor and gap > gap_floor (above round-off: the particles' gap is accurate while
    sqrt(gap) is far above 1e-16), starts at the first sample with gap < near_cluster past a
    twentieth of the end (offsets such as r = t + r0 have faded). None when it holds fewer than
    ten samples."""
    as_array = lambda a: np.asarray(a, dtype=float)  # noqa: E731
    window = _fits().choose_window(as_array(t), as_array(v), as_array(gap), v_floor, gap_floor,
                                   near_cluster)
    return None if window is None else (float(window[0]), float(window[1]))


def fit_terminal(ds) -> LawFit | None:
    """The scheme's predicted law fitted to a run's velocity over `terminal_window`; None when
    the run has not reached the terminal regime (or its scheme has no predicted law)."""
    if "velocity" not in ds or "gap" not in ds:
        return None
    law = predicted(str(ds.attrs.get("scheme", "")))
    if law is None:
        return None
    t, v, gap = ds["time"].values, ds["velocity"].values, ds["gap"].values
    window = terminal_window(t, v, gap)
    if window is None:
        return None
    return fit_law(law[0], t, v, *window)
