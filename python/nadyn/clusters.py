"""Cluster histories (docs/model.md section 5.2): merge events, clustering times t_k and the
merge tree of a run, from a Dataset of ``nadyn.open`` (a single run, or a sweep and a point).

    ds = nadyn.open("run.h5")
    nadyn.clusters.merge_events(ds)["time"]        # when each merge happened
    ds.clustering_time.sel(k=1)                    # t_1: the first time with one cluster
    tree = nadyn.clusters.merge_tree(ds)           # scipy-style linkage, height = time
    sweep = nadyn.open("beta.h5")
    tree = nadyn.clusters.merge_tree(sweep, beta=4, seed=1)

Pure Python (numpy, xarray); the linkage matrix is the one scipy.cluster.hierarchy reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["merge_events", "merge_tree", "MergeTree", "run_of"]

_INTEGER_FIELDS = ("frame", "label", "absorbed", "size", "absorbed_size", "clusters_after")


def run_of(item: str | os.PathLike | xr.Dataset, **point: Any) -> xr.Dataset:
    """The Dataset of one run: a single-run Dataset as it is, a sweep's at ``point``
    (``beta=4, seed=1``: a value of every axis with more than one)."""
    if not isinstance(item, xr.Dataset):
        from .io import open as _open  # noqa: PLC0415

        item = _open(item)
    if "merges" not in item:
        chose = "observables" in item.attrs or item.attrs.get("nadyn_kind") == "sweep"
        if chose and "clusters" not in item:  # the run did not ask for it: not "no merges"
            raise ValueError("merge events not recorded (add clusters to observables)")
        raise ValueError("this file records no merge events (written by a nadyn without cluster histories)")
    ds = item.sel(**point) if point else item
    # A run of a sweep whose runs differ in what they record (``recorded``): its merges are
    # fill values, not "no merges".
    if "recorded" in ds.variables and "observable" in ds["recorded"].dims \
            and "clusters" in ds["observable"].values:
        clusters = ds["recorded"].sel(observable="clusters")
        if clusters.dims == () and not bool(clusters):
            raise ValueError("merge events not recorded (add clusters to observables)")
    extra = [dim for dim in ds["merges"].dims if dim not in ("merge", "merge_field")]
    if extra:
        values = "; ".join(f"{dim} in {list(np.asarray(ds[dim].values))}" for dim in extra if dim in ds.coords)
        raise ValueError(f"name one run of the sweep: a value for each of {extra} ({values})")
    return ds


def merge_events(item: str | os.PathLike | xr.Dataset, **point: Any) -> dict[str, np.ndarray]:
    """The merge events of a run, in order: arrays ``time`` (float) and ``frame``, ``label``,
    ``absorbed``, ``size``, ``absorbed_size``, ``clusters_after`` (int64), one entry per event
    (the padding rows of a sweep file dropped)."""
    ds = run_of(item, **point)
    table = ds["merges"].transpose("merge", "merge_field")
    fields = [str(name) for name in table["merge_field"].values]
    values = np.asarray(table.values, dtype=np.float64)
    values = values[~np.isnan(values[:, fields.index("time")])]
    out = {"time": values[:, fields.index("time")]}
    for name in _INTEGER_FIELDS:
        out[name] = values[:, fields.index(name)].astype(np.int64)
    return out


@dataclass
class MergeTree:
    """The merge tree of a run, in the form of ``scipy.cluster.hierarchy.linkage``.

    ``linkage`` is (leaves - 1, 4): row i joins nodes ``linkage[i, 0]`` and ``linkage[i, 1]``
    (a node below ``leaves`` is the cluster of that label at the start, or born in a split;
    node leaves + i is row i's result) at height ``linkage[i, 2]``, the merge time, and
    ``linkage[i, 3]`` counts the leaves below. Its first ``merged`` rows are the run's merge
    events; when the run did not end in one cluster, the clusters left are joined in further
    rows at height ``end_time`` (the last frame's time), so that the tree is whole
    (``complete`` is then False)."""

    linkage: np.ndarray
    leaves: int
    merged: int
    end_time: float
    complete: bool
    tokens: np.ndarray = field(default_factory=lambda: np.zeros(0))  # tokens of each row's result

    def dendrogram(self, **kwargs: Any) -> dict[str, Any]:
        """``scipy.cluster.hierarchy.dendrogram(linkage, no_plot=True, **kwargs)``."""
        from scipy.cluster.hierarchy import dendrogram  # noqa: PLC0415 (optional)

        return dendrogram(self.linkage, no_plot=True, **kwargs)


def merge_tree(item: str | os.PathLike | xr.Dataset, **point: Any) -> MergeTree:
    """The merge tree of a run (a single-run Dataset, or a sweep Dataset and its point):
    leaves are the cluster labels, heights the merge times."""
    ds = run_of(item, **point)
    events = merge_events(ds)
    counts = np.asarray(ds["clusters"].values, dtype=np.float64).reshape(-1)
    counts = counts[np.isfinite(counts) & (counts >= 0)]
    times = np.asarray(ds["time"].values, dtype=np.float64).reshape(-1) if "time" in ds else np.zeros(0)
    times = times[np.isfinite(times)]
    end_time = float(times[-1]) if times.size else float(np.nanmax(events["time"], initial=0.0))
    initial = int(counts[0]) if counts.size else 1
    labels_seen = np.concatenate([events["label"], events["absorbed"]])
    leaves = max(initial, int(labels_seen.max()) + 1 if labels_seen.size else 0)
    node = {label: label for label in range(leaves)}
    below = {label: 1 for label in range(leaves)}
    tokens_of = {}
    rows, tokens = [], []
    for i in range(events["time"].size):
        label, absorbed = int(events["label"][i]), int(events["absorbed"][i])
        a, b = node.pop(label), node.pop(absorbed)
        new = leaves + len(rows)
        below[new] = below[a] + below[b]
        rows.append([min(a, b), max(a, b), float(events["time"][i]), below[new]])
        tokens_of[new] = int(events["size"][i] + events["absorbed_size"][i])
        tokens.append(tokens_of[new])
        node[label] = new
    merged = len(rows)
    # Clusters that never merged: joined at the end of the run, in label order.
    roots = [node[label] for label in sorted(node)]
    while len(roots) > 1:
        a, b = roots[0], roots[1]
        new = leaves + len(rows)
        below[new] = below[a] + below[b]
        rows.append([min(a, b), max(a, b), end_time, below[new]])
        tokens.append(-1)
        roots = [new] + roots[2:]
    return MergeTree(linkage=np.asarray(rows, dtype=np.float64).reshape(-1, 4), leaves=leaves, merged=merged,
                     end_time=end_time, complete=len(rows) == merged, tokens=np.asarray(tokens, dtype=np.int64))


def final_stretch_at_one(times, counts) -> tuple[float, bool]:
    """(t, True): the first frame of a run's final stretch of frames at one cluster; or (the
    last frame's time, False) when the run does not end at one cluster (censored there). A
    count that returns to 2 or more (a cluster shedding a token at the edge of cluster_eps)
    starts the wait again: only the final stretch counts. Frames with a NaN time or count
    (a sweep pads a shorter run's series) are left out; (nan, False) when none is left. The
    studies lifetimes and causal time their last merger with it."""
    t, c = np.asarray(times, float), np.asarray(counts, float)
    kept = np.isfinite(t) & np.isfinite(c)
    t, c = t[kept], c[kept]
    if c.size == 0:
        return float("nan"), False
    if c[-1] != 1:
        return float(t[-1]), False
    above = np.flatnonzero(c != 1)
    return (float(t[above[-1] + 1]) if above.size else float(t[0])), True
