"""Metastable plateaus of a cluster-count series (docs/model.md §5.3), computed by nadyn's
C++ library (``nadyn._core.find_plateaus``), the implementation behind a run file's
/plateaus table and a sweep file's ``plateau_length`` and ``plateau_clusters``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

__all__ = ["plateaus"]


def _core():
    from . import _core as core  # the compiled module; absent in a pure-Python install

    if core is None:
        raise ImportError("nadyn.plateaus needs nadyn's compiled module (nadyn._core)")
    return core


def plateaus(times: Any, counts: Any, plateau_min: str | float = "5%",
             horizon: float | None = None) -> xr.Dataset:
    """The plateaus of a (times, counts) series: the maximal stretches of frames with one
    cluster count lasting at least ``plateau_min``.

    ``plateau_min`` is what ``--plateau-min`` takes: a time (a number, or text such as
    ``"2.5"``) or a percentage of the run's horizon T (``"5%"``, the default), with
    ``horizon`` the T (default: the last time). Frames whose count is NaN at the end of the
    series (a sweep's run with fewer frames than the grid: the -1 fill, masked by xarray) are
    left out.

    Returns a Dataset with dimension ``plateau`` and variables ``start`` (time of the first
    frame), ``end`` (time of the first frame at another count; the last frame's time when
    ``censored``), ``length`` = end - start, ``clusters`` and ``censored`` (the plateau lasts
    to the last frame, so its length is a lower bound); attributes ``min_length`` (the
    threshold as a time), ``plateau_min``, ``longest_length`` and ``longest_clusters`` (the
    longest plateau, the earliest of equal ones; 0 and -1 when there is none)."""
    t = np.asarray(times, dtype=float).ravel()
    c = np.asarray(counts, dtype=float).ravel()
    if t.shape != c.shape:
        raise ValueError(f"plateaus: {t.size} times but {c.size} counts; give one of each per frame")
    # A frame a run did not write: NaN in the count (and in a per-run time grid).
    written = ~(np.isnan(c) | np.isnan(t))
    last = int(np.nonzero(written)[0][-1]) + 1 if written.any() else 0
    t, c = t[:last], c[:last]
    if horizon is None:
        horizon = float(t[-1]) if t.size else 0.0
    text = plateau_min if isinstance(plateau_min, str) else repr(float(plateau_min))
    core = _core()
    min_length = core.plateau_min_time(text, float(horizon))
    table = core.find_plateaus(t.tolist(), c.tolist(), min_length)
    length = table["end"] - table["start"]
    longest = int(np.argmax(length)) if length.size else None  # argmax: the earliest maximum
    return xr.Dataset(
        {
            "start": ("plateau", table["start"], {"description": "time of the plateau's first frame"}),
            "end": ("plateau", table["end"], {"description": "time of the first frame at another "
                                                             "count (censored: the last frame)"}),
            "length": ("plateau", length, {"description": "end - start"}),
            "clusters": ("plateau", table["clusters"], {"description": "the cluster count"}),
            "censored": ("plateau", table["censored"], {"description": "lasts to the last frame"}),
        },
        attrs={
            "plateau_min": text,
            "min_length": min_length,
            "longest_length": float(length[longest]) if longest is not None else 0.0,
            "longest_clusters": int(table["clusters"][longest]) if longest is not None else -1,
        },
    )
