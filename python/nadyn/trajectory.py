"""The result of ``nadyn.simulate``: a run's frames as NumPy arrays, and as xarray."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

__all__ = ["Trajectory"]

# Datasets of /parameters and their dimensions, as nadyn.open labels them.
_MATRIX_DIMS = {
    "theta0": ("token", "dim"),
    "Q": ("dim_out", "dim_in"),
    "K": ("dim_out", "dim_in"),
    "V": ("dim_out", "dim_in"),
}


class Trajectory:
    """One run's frames (from ``nadyn.simulate``).

    ts           (frames,)          time t of each frame (continuous depth)
    steps        (frames,)          step index of each frame
    ys           (frames, n, d)     directions theta_k; None for positions="none"
    r            (frames, n)        magnitudes r_k
    observables  name -> (frames,)  mean_cos, gap, velocity, ... (docs/file-format.md)
    parameters   dict               every input, the provenance and the solver statistics,
                                    as the file's /parameters records them
    status       "complete" | "interrupted" | "failed"
    path         the H5MD file written (``out=``), or None
    theta0, r_initial, weights      the initial state and the recorded Q, K, V
    """

    def __init__(
        self,
        ts: np.ndarray,
        ys: np.ndarray | None,
        r: np.ndarray,
        observables: Mapping[str, np.ndarray],
        parameters: Mapping[str, Any],
        *,
        steps: np.ndarray,
        status: str = "complete",
        path: str | None = None,
        matrices: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self.ts = ts
        self.steps = steps
        self.ys = ys
        self.r = r
        self.observables = dict(observables)
        self.parameters = dict(parameters)
        self.status = status
        self.path = path
        matrices = dict(matrices or {})
        self.theta0 = matrices.pop("theta0", None)
        r_initial = matrices.pop("r_initial", None)
        self.r_initial = None if r_initial is None else r_initial.reshape(-1)
        self.weights = matrices  # Q, K, V when the run records them (random or file weights)

    @classmethod
    def _from_result(cls, result: Mapping[str, Any]) -> "Trajectory":
        return cls(
            result["ts"],
            result["ys"],
            result["r"],
            result["observables"],
            result["parameters"],
            steps=result["steps"],
            status=result["status"],
            path=result["path"],
            matrices=result["matrices"],
        )

    @property
    def n(self) -> int:
        return int(self.r.shape[1])

    @property
    def d(self) -> int:
        return int(self.parameters["d"])

    def __len__(self) -> int:
        return int(self.ts.shape[0])

    def __repr__(self) -> str:
        p = self.parameters
        where = f", file {self.path!r}" if self.path else ""
        return (
            f"<nadyn.Trajectory {p.get('scheme')} n={p.get('n')} d={p.get('d')} "
            f"beta={p.get('beta')}: {len(self)} frames to t = "
            f"{self.ts[-1] if len(self) else 0:g}, {self.status}{where}>"
        )

    def to_xarray(self):
        """The run as an xarray Dataset, laid out as ``nadyn.open`` reads its file: dims
        ``time``, ``token``, ``dim``; coordinate ``step`` on ``time``; variables ``theta``
        (unless positions="none"), ``r``, one per observable, ``theta0``, ``r_initial`` and
        the recorded weights; ``attrs`` the parameters, their descriptions and the status."""
        import xarray as xr

        from . import _core  # the registry itself: bindings.py imports this module

        coords = {
            "time": ("time", self.ts, {"long_name": "continuous depth t"}),
            "step": ("time", self.steps, {"long_name": "step index (layer for layers, accepted steps for dopri5)"}),
            "token": ("token", np.arange(self.n)),
            "dim": ("dim", np.arange(self.d)),
        }
        variables: dict[str, Any] = {}
        if self.ys is not None:
            variables["theta"] = (("time", "token", "dim"), self.ys, {"long_name": "directions theta_k on the unit sphere"})
        variables["r"] = (("time", "token"), self.r, {"long_name": "token magnitudes r_k > 0"})
        for name, values in self.observables.items():
            if np.ndim(values) == 2:  # modes: m_1 .. m_K per frame
                coords["mode"] = ("mode", np.arange(1, np.shape(values)[1] + 1))
                variables[name] = (("time", "mode"), values)
            else:
                variables[name] = (("time",), values)
        if self.theta0 is not None:
            variables["theta0"] = (_MATRIX_DIMS["theta0"], self.theta0)
        if self.r_initial is not None:
            variables["r_initial"] = (("token",), self.r_initial)
        for name, values in self.weights.items():
            variables[name] = (_MATRIX_DIMS.get(name, (f"{name}_0", f"{name}_1")), values)
        attrs: dict[str, Any] = dict(self.parameters)
        for row in _core.parameters():
            attrs[f"{row['name']}_description"] = row["description"]
        attrs["status"] = self.status
        attrs["frames_read"] = len(self)
        if self.path:
            attrs["file"] = self.path
        return xr.Dataset(variables, coords=coords, attrs=attrs)
