"""Pictures of nadyn runs: tokens on the sphere, observables against time, sweep heatmaps,
and movies.

    import nadyn, nadyn.plot
    ds = nadyn.open("run.h5")
    nadyn.plot.sphere(ds, times=[0, 5, 20])                  # d = 3 snapshots
    nadyn.plot.observables(["a.h5", "b.h5"], law="initial-slope")
    nadyn.plot.heatmap(sweep, "mean_cos", x="time", y="beta", col="scheme")
    nadyn.plot.movie("run.h5", out="run.mp4")                # GIF when ffmpeg is missing
    nadyn.plot.merge_tree(ds)                                # dendrogram, height = time
    nadyn.plot.merge_tree(sweep, beta=4, seed=1)             # of one run of a sweep
    nadyn.plot.density(nadyn.open("meanfield.h5"), times=[0, 10])   # a density run

From the shell:

    python3 -m nadyn.plot FILE [FILE...] [--sphere OUT.png] [--observables OUT.png]
                                         [--movie OUT.mp4] [--times T...] [--law initial-slope]
                                         [--point AXIS=VALUE,...|INDEX] [--dpi DPI]

A sweep file is drawn one run at a time: ``point`` ("beta=4,seed=1", an index, or a dict;
none needed when the sweep has one run), as ``nadyn rerun --point`` takes it.

Every function returns the matplotlib Figure (movie: the path written) and leaves showing
or saving it to the caller.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from typing import Iterable, Sequence

import numpy as np
import xarray as xr

from .closed_forms import initial_velocity
from .io import not_recorded, short_number, sweep_axes, sweep_run
from .io import open as open_file
from .laws import fit_terminal, predicted

__all__ = ["sphere", "density", "observables", "heatmap", "movie", "merge_tree", "main", "LAWS"]

# What `observables(law=...)` can overlay.
LAWS = ("initial-slope", "terminal")


def _dataset(item: str | os.PathLike | xr.Dataset, *, positions: bool = True,
             point: str | int | dict | None = None) -> xr.Dataset:
    ds = item if isinstance(item, xr.Dataset) else open_file(item, positions=positions)
    if ds.attrs.get("nadyn_kind") == "sweep":
        return _sweep_run(ds, point)
    if point is not None and point != "":
        raise ValueError(f"point picks a run of a sweep file; '{ds.attrs.get('file', 'the dataset')}' "
                         "is a single run")
    return ds


def _run_parameters(record: str) -> dict[str, object]:
    """A sweep run's parameter record ("scheme=post-ln; n=16; ...") as attributes."""
    out: dict[str, object] = {}
    for item in record.split(";"):
        name, _, value = item.strip().partition("=")
        if not name:
            continue
        try:
            number = float(value)
            out[name] = int(number) if number.is_integer() and "." not in value else number
        except ValueError:
            out[name] = value
    return out


def _sweep_run(sweep: xr.Dataset, point: str | int | dict | None) -> xr.Dataset:
    """One run of a sweep Dataset laid out as a single-run one: ``theta`` (time, token, dim)
    from ``positions`` (one frame, the run's last, when the sweep kept only the final ones),
    the run's own tokens and frames (the sweep pads to the largest), its parameters as
    attributes, and the point in ``attrs["point"]``."""
    run = sweep_run(sweep, point)
    axes = sweep_axes(sweep)
    label = " ".join(f"{a}={short_number(run[a].values.item())}" for a in axes)
    attrs = dict(sweep.attrs)
    record = run["parameters"].values.item() if "parameters" in run else ""
    attrs.update(_run_parameters(str(record)))
    for axis in axes:  # the point's own values, whatever the record holds
        value = run[axis].values.item()
        attrs[axis] = value
    attrs["point"] = label
    frames = int(run["frames"].values) if "frames" in run else run.sizes.get("time", 0)
    out = run.drop_vars([v for v in ("positions", "magnitudes") if v in run])
    out = out.drop_vars([a for a in axes if a in out.coords])
    if "time" in out.dims and frames < out.sizes["time"]:
        out = out.isel(time=slice(0, frames))
    if "positions" in run:
        positions = run["positions"]
        if "time" not in positions.dims:
            last = float(sweep["time"].values[frames - 1]) if frames else float("nan")
            positions = positions.expand_dims(time=[last])
        else:
            positions = positions.isel(time=slice(0, frames))
        keep = ~np.isnan(positions.isel(time=0, dim=0).values)
        out = out.assign(theta=positions.isel(token=np.flatnonzero(keep)).transpose(
            "time", "token", "dim"))
    out.attrs = attrs
    return out


def _number(value: object) -> str:
    return short_number(value)


def _label(ds: xr.Dataset) -> str:
    """The run's parameters, "post-ln, n = 16, d = 3, beta = 4", and where it comes from
    (the file, and the point of a sweep)."""
    a = ds.attrs
    parts = [str(a["scheme"])] if a.get("scheme") else []
    parts += [f"{key} = {_number(a[key])}" for key in ("n", "d", "beta") if key in a]
    name = os.path.basename(str(a.get("file", "")))
    where = name + (f" ({a['point']})" if a.get("point") else "")
    text = ", ".join(parts)
    if where:
        text = f"{text}; {where}" if text else where
    return text or "run"


def _require_sphere(ds: xr.Dataset, what: str) -> None:
    if "theta" not in ds:
        written = ("positions = \"none\"" if ds.attrs.get("nadyn_kind") == "sweep"
                   else "--positions none")
        raise ValueError(
            f"{what} needs the positions, but '{ds.attrs.get('file', 'the dataset')}' has none "
            f"(written with {written})"
        )
    if ds.sizes["dim"] != 3:
        raise ValueError(f"{what} draws tokens on S^2 and needs d = 3, got d = {ds.sizes['dim']}")


def _frame_indices(ds: xr.Dataset, times: Iterable[float] | None) -> list[int]:
    time = ds["time"].values
    # The frames with positions (a sweep that kept only each run's last has one).
    frames = (np.flatnonzero(~np.isnan(ds["theta"].values[:, 0, 0])) if "theta" in ds
              and ds["theta"].sizes["token"] else np.arange(len(time)))
    if len(frames) == 0:
        raise ValueError(f"'{ds.attrs.get('file', 'the dataset')}' holds no frame yet")
    if times is None:
        return sorted({int(frames[0]), int(frames[(len(frames) - 1) // 2]), int(frames[-1])})
    return [int(frames[np.argmin(np.abs(time[frames] - float(t)))]) for t in times]


def _disk(ax, title: str | None = None) -> None:
    import matplotlib.patches as patches

    ax.add_patch(patches.Circle((0, 0), 1.0, fill=False, lw=0.8, color="0.3"))
    ax.set_xlim(-1.08, 1.08)
    ax.set_ylim(-1.08, 1.08)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    if title:
        ax.set_title(title, fontsize=9)


def _hemispheres(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthographic views of the two hemispheres: z >= 0 seen from +z as (x, y), and z < 0
    seen from -z, which mirrors x: (-x, y). A token near the equator sits near the rim of
    both disks, at mirrored places, as on a globe cut in two and opened like a book."""
    front = theta[:, 2] >= 0.0
    return front, np.where(front[:, None], theta[:, :2], theta[:, :2] * np.array([-1.0, 1.0]))


def _token_colors(n: int):
    import matplotlib

    return matplotlib.colormaps["viridis"](np.linspace(0.0, 1.0, max(n, 1)))


# What the tokens' colours mean, said on every picture of them.
TOKEN_COLOURS = "colour: token index k (purple k = 0 to yellow k = n-1), the same in every panel"


def sphere(
    data: str | os.PathLike | xr.Dataset,
    times: Iterable[float] | None = None,
    *,
    marker_size: float | None = None,
    point: str | int | dict | None = None,
):
    """Snapshots of the tokens on S^2 (d = 3) at the frames nearest to `times` (default:
    first, middle and last frame). Each snapshot is two orthographic disks: the front
    hemisphere z >= 0 seen from +z (top row) and the back one z < 0 seen from -z (bottom
    row, x mirrored). Tokens keep their colour (by index) across snapshots. The title gives
    the run's scheme, n, d and beta; the foot says what the colours mean.

    A sweep file (or Dataset) is drawn at `point` ("beta=4,seed=1", an index, or a dict; none
    needed for a one-run sweep): every frame when the sweep kept them all, else its last.

    Returns a Figure with 2 axes per snapshot."""
    import matplotlib.pyplot as plt

    ds = _dataset(data, point=point)
    _require_sphere(ds, "nadyn.plot.sphere")
    indices = _frame_indices(ds, times)
    n = ds.sizes["token"]
    size = marker_size if marker_size is not None else max(6.0, 120.0 / math.sqrt(n))
    colors = _token_colors(n)
    fig, axes = plt.subplots(2, len(indices), figsize=(2.4 * len(indices), 4.9), squeeze=False)
    for column, index in enumerate(indices):
        theta = ds["theta"].values[index]
        front, xy = _hemispheres(theta)
        t = float(ds["time"].values[index])
        for row, (mask, name) in enumerate(((front, "front z \u2265 0"), (~front, "back z < 0"))):
            ax = axes[row, column]
            _disk(ax, f"t = {t:.4g}\n{name}" if row == 0 else name)
            ax.scatter(xy[mask, 0], xy[mask, 1], s=size, c=colors[mask], edgecolors="none")
    fig.suptitle(_label(ds), fontsize=10)
    fig.text(0.5, 0.005, TOKEN_COLOURS, ha="center", va="bottom", fontsize=7)
    fig.tight_layout(rect=(0.0, 0.03, 1.0, 1.0))
    return fig


def density(
    data: str | os.PathLike | xr.Dataset,
    times: Iterable[float] | None = None,
    *,
    ax=None,
):
    """The density rho of a density run (``nadyn meanfield``, nadyn.meanfield) at the frames
    nearest to `times` (default: first, middle and last frame).

    circle  rho against the angle atan2(x_1, x_0) in [0, 2 pi), one line per time, one axes
    zonal   rho against x_{d-1} (the rings' cos), one line per time, one axes
    sphere  the nodes in a Mollweide projection (longitude atan2(x_1, x_0), latitude
            asin(x_2)) coloured by rho, one axes per time with a shared colour scale

    `ax`: draw the circle's or zonal lines there (its figure is returned). Returns the
    Figure."""
    import matplotlib.pyplot as plt

    ds = _dataset(data)
    if "density" not in ds or "point" not in ds.dims:
        raise ValueError("nadyn.plot.density draws density files (nadyn meanfield); "
                         f"'{ds.attrs.get('file', 'the dataset')}' is not one")
    indices = _frame_indices(ds, times)
    geometry = ds.attrs.get("geometry")
    label = f"{geometry}, beta = {ds.attrs.get('beta', '?')}, {ds.attrs.get('init', '')}"
    values = ds["density"].values
    if geometry in ("circle", "zonal"):
        x = ds["angle"].values if geometry == "circle" else ds["cos"].values
        order = np.argsort(x)
        if ax is None:
            fig, ax = plt.subplots(figsize=(6.0, 3.6))
        else:
            fig = ax.figure
        colors = plt.get_cmap("viridis")(np.linspace(0.0, 0.9, len(indices)))
        for color, index in zip(colors, indices):
            t = float(ds["time"].values[index])
            ax.plot(x[order], values[index][order], color=color, lw=1.2, label=f"t = {t:.4g}")
        if geometry == "circle":
            ax.set_xlabel("angle atan2(x_1, x_0)")
            ax.set_xlim(0.0, 2.0 * math.pi)
        else:
            ax.set_xlabel(f"x_{ds.sizes['dim'] - 1} (cos of the angle to e_{ds.sizes['dim']})")
            ax.set_xlim(-1.0, 1.0)
        ax.set_ylabel("density rho (uniform = 1)")
        ax.legend(fontsize=8)
        ax.set_title(label, fontsize=10)
        fig.tight_layout()
        return fig
    if geometry != "sphere":
        raise ValueError(f"nadyn.plot.density: unknown geometry {geometry!r}")
    points = ds["points"].values
    longitude = np.arctan2(points[:, 1], points[:, 0])
    latitude = np.arcsin(np.clip(points[:, 2], -1.0, 1.0))
    size = float(np.clip(4000.0 / points.shape[0], 0.5, 12.0))  # the nodes about tile the map
    low = float(np.min(values[indices]))
    high = float(np.max(values[indices]))
    fig, axes = plt.subplots(1, len(indices), figsize=(4.2 * len(indices), 2.9), squeeze=False,
                             subplot_kw={"projection": "mollweide"})
    for column, index in enumerate(indices):
        axis = axes[0, column]
        drawn = axis.scatter(longitude, latitude, c=values[index], s=size, cmap="viridis",
                             vmin=low, vmax=high, edgecolors="none")
        axis.set_title(f"t = {float(ds['time'].values[index]):.4g}", fontsize=9)
        axis.set_xticklabels([])
        axis.set_yticklabels([])
    fig.colorbar(drawn, ax=list(axes[0]), shrink=0.7, label="rho (uniform = 1)")
    fig.suptitle(label, fontsize=10)
    return fig


def _initial_slope(ds: xr.Dataset) -> float | None:
    """gamma'(0) when the run is the symmetric orthogonal start (n <= d, Q = K = V = I)."""
    a = ds.attrs
    if a.get("init") != "orthogonal" or a.get("weights") != "identity":
        return None
    if not {"scheme", "n", "beta"} <= a.keys():
        return None
    try:
        return initial_velocity(
            str(a["scheme"]),
            int(a["n"]),
            float(a["beta"]),
            r0=float(a.get("r0", 1.0)),
            alpha=float(a.get("alpha", 1.0)),
            t_switch=float(a.get("t_switch", 1.0)),
        )
    except ValueError:
        return None


def observables(
    data: Sequence[str | os.PathLike | xr.Dataset] | str | os.PathLike | xr.Dataset,
    names: Sequence[str] = ("mean_cos", "velocity"),
    law: str | None = None,
    *,
    labels: Sequence[str] | None = None,
    logy: bool | Sequence[str] = False,
    point: str | int | dict | None = None,
):
    """Observables against time for one or several runs: one panel per name (shared time
    axis), one line per run, a legend with one entry per run on the first panel.

    The overlays (law=...) need the compiled module nadyn._core, whose closed forms and fits
    they use. law="initial-slope" overlays, dashed in each run's colour, the closed-form start of the
    symmetric orthogonal start (docs/model.md §3): mean_cos ~ gamma'(0) t, gap ~ 1 - gamma'(0) t
    and velocity(0) = gamma'(0), with gamma'(0) from `nadyn.closed_forms.initial_velocity`
    (the formulas of `nadyn table initial`). It applies to runs made with --init orthogonal
    and --weights identity; a ValueError if none of the runs is one.

    law="terminal" fits each run's velocity with its scheme's predicted terminal law
    (`nadyn.laws`: C e^{-2t} for post-ln and ngpt, C/t^3 for pre-ln, mix-ln, peri-ln,
    C e^{-4 sqrt(t+1)}/sqrt(t+1) for sqrt-scaling) over the window of the asymptotic regime,
    as `nadyn table terminal` does, draws the fit dashed on the velocity panel (logarithmic),
    and adds the fitted parameter beside the theory's to the run's legend entry; a ValueError
    if no run has reached the terminal regime.

    logy: True (every panel) or the names of the panels with a logarithmic y axis.
    point: the run of each sweep among `data` (as in `sphere`)."""
    import matplotlib.pyplot as plt

    if law is not None and law not in LAWS:
        raise ValueError(f"unknown law '{law}'; valid laws: {', '.join(LAWS)}")
    items = [data] if isinstance(data, (str, os.PathLike, xr.Dataset)) else list(data)
    if not items:
        raise ValueError("nadyn.plot.observables needs at least one file or Dataset")
    datasets = [_dataset(item, positions=False, point=point) for item in items]
    if labels is not None and len(labels) != len(datasets):
        raise ValueError(f"{len(labels)} labels for {len(datasets)} runs")
    for ds in datasets:
        missing = [name for name in names if name not in ds]
        if missing:
            raise ValueError(f"'{ds.attrs.get('file', 'dataset')}': "
                             + "; ".join(not_recorded(ds, name) for name in missing))
    # The overlays use the library's closed forms and fits (nadyn._core): computed only when
    # asked for, so that plain plots need no compiled module.
    slopes = [_initial_slope(ds) if law == "initial-slope" else None for ds in datasets]
    if law == "initial-slope" and all(s is None for s in slopes):
        raise ValueError(
            "law 'initial-slope' applies to runs with --init orthogonal --weights identity "
            "(n <= d); none of the given runs is one"
        )
    fits = [fit_terminal(ds) if law == "terminal" else None for ds in datasets]
    if law == "terminal" and all(fit is None for fit in fits):
        raise ValueError(
            "law 'terminal': no run has reached its terminal regime (gap < 1e-3 over at least "
            "ten frames while the velocity is above round-off); run longer"
        )
    fig, axes = plt.subplots(
        len(names), 1, figsize=(6.4, 2.2 + 1.9 * len(names)), sharex=True, squeeze=False
    )
    axes = axes[:, 0]
    for index, ds in enumerate(datasets):
        label = labels[index] if labels is not None else _label(ds)
        fit = fits[index]
        if fit is not None:
            symbol = {"exponential": "a", "polynomial": "p", "stretched": "c"}[fit.law]
            theory = predicted(str(ds.attrs["scheme"]))[1]
            label += f"; fit {symbol} = {fit.parameter:.4g} (theory {theory:g})"
        color = f"C{index % 10}"
        t = ds["time"].values
        for ax, name in zip(axes, names):
            ax.plot(t, ds[name].values, color=color, lw=1.4, label=label)
            if fit is not None and name == "velocity":
                fit_t = np.linspace(fit.start, fit.end, 200)
                ax.plot(fit_t, fit(fit_t), color=color, ls="--", lw=1.2)
            slope = slopes[index]
            if law != "initial-slope" or slope is None:
                continue
            # The straight line is the first-order start; draw it while it stays in [0, 1].
            end = min(float(t[-1]) if len(t) else 0.0, 0.5 / slope if slope > 0 else 0.0)
            line_t = np.linspace(0.0, end, 50)
            if name == "mean_cos":
                ax.plot(line_t, slope * line_t, color=color, ls="--", lw=1.0)
            elif name == "gap":
                ax.plot(line_t, 1.0 - slope * line_t, color=color, ls="--", lw=1.0)
            elif name == "velocity":
                ax.plot([0.0], [slope], marker="x", color=color, ms=8, ls="none")
    for ax, name in zip(axes, names):
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        if logy is True or (not isinstance(logy, bool) and name in logy) or (
            law == "terminal" and name == "velocity"
        ):
            ax.set_yscale("log")
    axes[-1].set_xlabel("t")
    axes[0].legend(fontsize=8)
    if law == "initial-slope":
        axes[0].set_title("dashed / x: closed-form initial slope \u03b3'(0)", fontsize=9)
    elif law == "terminal":
        axes[0].set_title("dashed: the scheme's terminal law fitted to the velocity", fontsize=9)
    fig.tight_layout()
    return fig


def heatmap(
    data: xr.Dataset | xr.DataArray,
    observable: str | None = None,
    *,
    x: str = "time",
    y: str = "beta",
    col: str | None = "scheme",
    reduce: str = "mean",
    cmap: str = "viridis",
):
    """An observable of a sweep Dataset over two of its dimensions (default time x beta),
    one panel per value of `col` (default scheme; None or a missing dimension: one panel).
    Every other dimension (e.g. seed) is reduced with `reduce` ("mean", "median", "max",
    "min", "std"). Returns a Figure with one axes per panel plus one colour bar."""
    import matplotlib.pyplot as plt

    if isinstance(data, xr.Dataset):
        if observable is None:
            raise ValueError(f"name an observable; valid names: "
                             f"{', '.join(str(v) for v in data.data_vars)}")
        if observable not in data:
            raise ValueError(f"'{data.attrs.get('file', 'dataset')}': "
                             + not_recorded(data, observable))
        array = data[observable]
    else:
        array = data
        observable = observable or str(array.name)
    for dim in (x, y):
        if dim not in array.dims:
            raise ValueError(f"dimension '{dim}' not in {observable}'s dims {tuple(array.dims)}")
    if col is not None and col not in array.dims:
        col = None
    keep = {x, y} | ({col} if col else set())
    others = [dim for dim in array.dims if dim not in keep]
    if others:
        if reduce not in ("mean", "median", "max", "min", "std"):
            raise ValueError(f"unknown reduce '{reduce}'; valid: mean, median, max, min, std")
        array = getattr(array, reduce)(dim=others)
    panels = list(array[col].values) if col else [None]
    vmin = float(np.nanmin(array.values))
    vmax = float(np.nanmax(array.values))
    # Constrained layout: the axis labels and the colour bar inside the figure.
    fig, axes = plt.subplots(
        1, len(panels), figsize=(3.6 * len(panels) + 1.2, 3.6), squeeze=False, sharey=True,
        layout="constrained",
    )
    mesh = None
    for ax, value in zip(axes[0], panels):
        panel = array.sel({col: value}) if col else array
        panel = panel.transpose(y, x)
        mesh = ax.pcolormesh(
            _cell_edges(panel[x].values), _cell_edges(panel[y].values), panel.values,
            shading="flat", cmap=cmap, vmin=vmin, vmax=vmax,
        )
        ax.set_xlabel(x)
        if value is not None:
            ax.set_title(f"{col} = {value}", fontsize=9)
    axes[0, 0].set_ylabel(y)
    label = observable + (f" ({reduce} over {', '.join(others)})" if others else "")
    fig.colorbar(mesh, ax=list(axes[0]), label=label)
    if isinstance(data, xr.Dataset):
        fixed = _label(_fixed_parameters(data, {x, y} | ({col} if col else set()) | set(others)))
        fig.suptitle(f"{observable}" + (f": {fixed}" if fixed != "run" else "")
                     + f"; colour: {label}", fontsize=9)
    return fig


def _cell_edges(values: np.ndarray) -> np.ndarray:
    """The edges of the cells centred on `values` (midpoints between neighbours, half a gap
    beyond the ends), never below zero when every value is >= 0 (beta, time, n): a beta axis
    from 0 does not run to -0.25."""
    centres = np.asarray(values)
    if centres.dtype.kind not in "iuf":
        centres = np.arange(len(centres), dtype=float)
    centres = centres.astype(float)
    if len(centres) == 1:
        edges = np.array([centres[0] - 0.5, centres[0] + 0.5])
    else:
        middle = 0.5 * (centres[1:] + centres[:-1])
        edges = np.concatenate(([2 * centres[0] - middle[0]], middle, [2 * centres[-1] - middle[-1]]))
    if np.all(centres >= 0):
        edges = np.clip(edges, 0.0, None)
    return edges


def _fixed_parameters(sweep: xr.Dataset, swept: set[str]) -> xr.Dataset:
    """A Dataset whose attributes are the sweep's parameters that no axis varies (from its
    first run's record), for a title."""
    record = sweep["parameters"].values.ravel()[0] if "parameters" in sweep else ""
    attrs = {k: v for k, v in _run_parameters(str(record)).items() if k not in swept}
    attrs["file"] = sweep.attrs.get("file", "")
    return xr.Dataset(attrs=attrs)


def merge_tree(item: str | os.PathLike | xr.Dataset, ax=None, **point):
    """The merge tree of a run (nadyn.clusters.merge_tree) as a dendrogram whose height is
    time: each leaf a cluster label, each join a merge event at its time. Clusters still
    apart when the run ends are joined at its last time by dashed lines. ``point`` picks the
    run of a sweep Dataset (``beta=4, seed=1``). Returns the Figure."""
    import matplotlib.pyplot as plt

    from .clusters import merge_tree as build_tree  # noqa: PLC0415

    tree = build_tree(item, **point)
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4.0, 0.25 * tree.leaves + 2.0), 3.6))
    else:
        fig = ax.figure
    leaves = tree.leaves
    height = {label: 0.0 for label in range(leaves)}
    children = {}
    for i, (a, b, h, _) in enumerate(tree.linkage):
        children[leaves + i] = (int(a), int(b))
        height[leaves + i] = float(h)
    # Leaves left to right in the order a depth-first walk from the root meets them (no
    # recursion: a tree of n leaves can be n deep).
    root = leaves + len(tree.linkage) - 1 if len(tree.linkage) else 0
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        if node < leaves:
            order.append(node)
        else:
            stack.extend(reversed(children[node]))
    x = {label: float(i) for i, label in enumerate(order)}
    for node in sorted(children):
        a, b = children[node]
        x[node] = 0.5 * (x[a] + x[b])
        style = "-" if node - leaves < tree.merged else "--"
        color = "C0" if style == "-" else "0.6"
        ax.plot([x[a], x[a], x[b], x[b]], [height[a], height[node], height[node], height[b]],
                style, color=color, linewidth=1.2)
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([str(label) for label in order], fontsize=7)
    ax.set_xlabel("cluster label")
    ax.set_ylabel("time t")
    title = "merge tree" + ("" if tree.complete else " (dashed: not merged by the end)")
    if point:
        title += " at " + ", ".join(f"{k}={v}" for k, v in point.items())
    ax.set_title(title, fontsize=9)
    return fig


def movie(
    data: str | os.PathLike | xr.Dataset,
    out: str | os.PathLike = "run.mp4",
    *,
    fps: float = 15,
    every: int = 1,
    dpi: int = 100,
    marker_size: float | None = None,
    point: str | int | dict | None = None,
) -> str:
    """Animates the tokens on S^2 (d = 3), one video frame per file frame (every `every`-th
    frame), with the two hemispheres side by side as in `sphere`. Writes an MP4 (or any
    container ffmpeg knows from the suffix) with matplotlib's FFMpegWriter; when ffmpeg is
    missing, writes a GIF with PillowWriter instead, next to `out` with the suffix .gif, and
    warns. A sweep is animated at `point` (as in `sphere`; it needs positions = "all").
    Returns the path written."""
    import matplotlib.pyplot as plt
    from matplotlib import animation

    ds = _dataset(data, point=point)
    fig, draw, count = _movie_figure(ds, every=every, marker_size=marker_size)
    out = os.fspath(out)
    if animation.writers.is_available("ffmpeg"):
        writer = animation.FFMpegWriter(fps=fps, metadata={"title": _label(ds)})
    else:
        root, suffix = os.path.splitext(out)
        if suffix.lower() != ".gif":
            warnings.warn(f"ffmpeg is not available; writing a GIF ({root}.gif) instead of {out}")
            out = root + ".gif"
        writer = animation.PillowWriter(fps=fps)
    anim = animation.FuncAnimation(fig, draw, frames=count, blit=False, repeat=False)
    try:
        anim.save(out, writer=writer, dpi=dpi)
    finally:
        plt.close(fig)
    return out


def _movie_figure(ds: xr.Dataset, *, every: int = 1, marker_size: float | None = None):
    """The movie's figure (6.4 x 3.6 inches: 640 x 360 at the default dpi), the function that
    draws frame i into it, and the number of frames."""
    import matplotlib.pyplot as plt

    _require_sphere(ds, "nadyn.plot.movie")
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    frames = _frame_indices(ds, None)
    valid = np.flatnonzero(~np.isnan(ds["theta"].values[:, 0, 0]))[::every] if len(frames) else []
    theta = ds["theta"].values[valid]
    times = ds["time"].values[valid]
    n = ds.sizes["token"]
    size = marker_size if marker_size is not None else max(6.0, 120.0 / math.sqrt(n))
    colors = _token_colors(n)
    fig, (front_ax, back_ax) = plt.subplots(1, 2, figsize=(6.4, 3.6))
    _disk(front_ax, "front z \u2265 0 (from +z)")
    _disk(back_ax, "back z < 0 (from \u2212z)")
    front_points = front_ax.scatter([], [], s=size, edgecolors="none")
    back_points = back_ax.scatter([], [], s=size, edgecolors="none")
    # Two lines of title above the panels' own titles: the panels start below them.
    title = fig.suptitle("", fontsize=10, va="top", y=0.985)
    fig.text(0.5, 0.01, TOKEN_COLOURS, ha="center", va="bottom", fontsize=7)
    label = _label(ds)
    mean_cos = ds["mean_cos"].values[valid] if "mean_cos" in ds else None

    def draw(index: int):
        front, xy = _hemispheres(theta[index])
        for points, mask in ((front_points, front), (back_points, ~front)):
            points.set_offsets(xy[mask] if mask.any() else np.empty((0, 2)))
            points.set_facecolors(colors[mask])
        text = f"{label}\nt = {times[index]:.4g}"
        if mean_cos is not None:
            text += f", mean_cos = {mean_cos[index]:.4f}"
        title.set_text(text)
        return front_points, back_points, title

    fig.tight_layout(rect=(0.0, 0.05, 1.0, 0.84))
    return fig, draw, len(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m nadyn.plot",
        description="Pictures of nadyn trajectory and sweep files: sphere snapshots (d = 3), "
        "observables against time (every FILE), and a movie of the tokens on S^2; a sweep at "
        "--point.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="nadyn trajectory or sweep file(s)")
    parser.add_argument("--sphere", metavar="OUT.png", help="snapshots of the first FILE (d = 3)")
    parser.add_argument("--times", type=float, nargs="+", metavar="T",
                        help="times of the snapshots (default: first, middle, last frame)")
    parser.add_argument("--observables", metavar="OUT.png", help="observables of every FILE against time")
    parser.add_argument("--names", nargs="+", default=["mean_cos", "velocity"],
                        help="observables to plot (default: mean_cos velocity)")
    parser.add_argument("--law", choices=LAWS,
                        help="overlay on --observables: the closed-form initial slope (orthogonal "
                        "start) or the fitted terminal law")
    parser.add_argument("--movie", metavar="OUT.mp4", help="movie of the first FILE (d = 3)")
    parser.add_argument("--fps", type=float, default=15, help="movie frames per second (default 15)")
    parser.add_argument("--every", type=int, default=1, help="movie: every K-th frame (default 1)")
    parser.add_argument("--dpi", type=int, default=120, help="resolution of the pictures (default 120)")
    parser.add_argument("--point", metavar="AXIS=VALUE,...",
                        help="the run of a sweep FILE, as axis=value,... or its index (not needed "
                        "when the sweep has one run)")
    args = parser.parse_args(argv)
    if not (args.sphere or args.observables or args.movie):
        parser.error("nothing to do: give --sphere, --observables and/or --movie")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        if args.sphere:
            fig = sphere(args.files[0], times=args.times, point=args.point)
            fig.savefig(args.sphere, dpi=args.dpi)
            plt.close(fig)
            print(f"wrote {args.sphere}")
        if args.observables:
            fig = observables(args.files, names=args.names, law=args.law, point=args.point)
            fig.savefig(args.observables, dpi=args.dpi)
            plt.close(fig)
            print(f"wrote {args.observables}")
        if args.movie:
            written = movie(args.files[0], out=args.movie, fps=args.fps, every=args.every,
                            point=args.point)
            print(f"wrote {written}")
    except (ValueError, OSError, KeyError) as error:
        print(f"nadyn.plot: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
