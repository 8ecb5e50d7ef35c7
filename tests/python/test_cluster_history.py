"""Cluster histories (docs/model.md section 5.2): the labels and merge events a run records,
recomputed from its recorded positions with scipy's single linkage and the tracker's rules
written out again here; t_k against the clusters series; --resume after SIGINT bitwise;
nadyn inspect --merges; the merge tree of a run and of a sweep point."""

from __future__ import annotations

import signal
import subprocess
import time

import numpy as np
import pytest
from scipy.cluster import hierarchy

import nadyn
import nadyn.clusters
import nadyn.plot

EPS = 0.02
SETTINGS = {"init": "caps:3,0.4", "n": 20, "d": 3, "beta": 1, "dt": 0.05, "every": 2, "cluster-eps": EPS,
            "seed": 3}


def flags(**changes) -> list[str]:
    settings = {**SETTINGS, **{key.replace("_", "-"): value for key, value in changes.items()}}
    return [item for key, value in settings.items() for item in (f"--{key}", str(value))]


FLAGS = flags()


def components(theta: np.ndarray) -> np.ndarray:
    """Single-linkage components of cos >= 1 - EPS, numbered by smallest token (scipy)."""
    distance = 1.0 - np.clip(theta @ theta.T, -1.0, 1.0)
    np.fill_diagonal(distance, 0.0)
    flat = hierarchy.fcluster(hierarchy.linkage(distance[np.triu_indices(len(theta), 1)], "single"),
                              EPS, criterion="distance")
    order = {}
    return np.array([order.setdefault(c, len(order)) for c in flat])


def replay(frames: list[np.ndarray], times: np.ndarray):
    """The tracker's rules (include/nadyn/model/cluster_history.hpp), written out again."""
    labels, events, fresh = None, [], 0
    history = []
    for f, comp in enumerate(frames):
        count = comp.max() + 1
        if labels is None:
            labels, fresh = comp.copy(), count
            history.append(labels.copy())
            continue
        share = {}
        for old, new in zip(labels, comp):
            share[(old, new)] = share.get((old, new), 0) + 1
        home = {}
        for (old, new), size in sorted(share.items()):
            if old not in home or size > home[old][1]:
                home[old] = (new, size)
        new_label = np.empty(count, dtype=np.int64)
        for c in range(count):
            parts = sorted(((size, old) for old, (new, size) in home.items() if new == c),
                           key=lambda p: (-p[0], p[1]))
            if not parts:
                new_label[c], fresh = fresh, fresh + 1
                continue
            total = parts[0][0]
            for size, old in parts[1:]:
                events.append((times[f], f, parts[0][1], old, total, size, count))
                total += size
            new_label[c] = parts[0][1]
        labels = new_label[comp]
        history.append(labels.copy())
    return np.array(history), events


def as_rows(ds) -> list[tuple]:
    e = nadyn.clusters.merge_events(ds)
    return [(e["time"][i], *(int(e[k][i]) for k in ("frame", "label", "absorbed", "size", "absorbed_size",
                                                      "clusters_after"))) for i in range(e["time"].size)]


def test_labels_and_events_match_single_linkage_of_the_recorded_positions(simulate):
    ds = nadyn.open(simulate("caps.h5", *FLAGS, "--T", "12"))
    frames = [components(theta) for theta in ds.theta.values]
    # The partition is the clusters observable's.
    assert [c.max() + 1 for c in frames] == list(ds.clusters.values)
    labels, events = replay(frames, ds.time.values)
    np.testing.assert_array_equal(ds.cluster_label.values, labels)
    assert as_rows(ds) == events
    assert len(events) >= 5  # the run does merge
    # t_k: the first time the clusters series is <= k, NaN if never.
    for k, t_k in zip(ds.k.values, ds.clustering_time.values):
        reached = np.nonzero(ds.clusters.values <= k)[0]
        if reached.size:
            assert t_k == ds.time.values[reached[0]]
        else:
            assert np.isnan(t_k)
    assert list(ds.k.values) == [1, 2, 4, 8, 16]


def test_resume_after_sigint_gives_the_same_events_bitwise(cli, simulate, tmp_path):
    # Long enough (8001 frames) to be going when 20 frames are readable: the writer flushes
    # the first frame, then blocks of up to 64 frames, half a second apart at most.
    long = flags(n=64, T=400, dt=0.01, every=5)
    whole = simulate("whole.h5", *long)
    part = tmp_path / "part.h5"
    process = subprocess.Popen([cli, "simulate", *long, "--out", str(part), "--quiet"],
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if nadyn.frame_count(part) >= 20:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    # Read while the run goes (SWMR): the events so far, a prefix of the whole run's (this
    # start merges at frames 1, 4, 8 and 14, before the 20th).
    live = as_rows(nadyn.open(part))
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130, "the run ended before SIGINT: make it longer"
    assert len(live) >= 4 and live == as_rows(nadyn.open(whole))[: len(live)]
    stopped = nadyn.open(part)
    assert stopped.attrs["status"] == "interrupted"
    subprocess.run([cli, "simulate", "--resume", str(part), "--quiet"], check=True, capture_output=True)
    a, b = nadyn.open(whole), nadyn.open(part)
    assert a.merges.values.tobytes() == b.merges.values.tobytes()
    assert a.cluster_label.values.tobytes() == b.cluster_label.values.tobytes()
    assert a.clustering_time.values.tobytes() == b.clustering_time.values.tobytes()
    # An extension of a complete run continues the history too.
    short = simulate("short.h5", *flags(n=64, T=200, dt=0.01, every=5))
    subprocess.run([cli, "simulate", "--resume", str(short), "--T", "400", "--quiet"], check=True,
                   capture_output=True)
    assert nadyn.open(short).merges.values.tobytes() == a.merges.values.tobytes()


def test_inspect_merges_prints_the_events(cli, simulate):
    path = simulate("caps.h5", *FLAGS, "--T", "12")
    out = subprocess.run([cli, "inspect", str(path), "--merges"], check=True, capture_output=True,
                         text=True).stdout
    rows = as_rows(nadyn.open(path))
    assert f"merge events: {len(rows)}" in out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["time", "frame"]) + 1
    printed = [tuple(float(v) for v in line.split()) for line in lines[start:start + len(rows)]]
    for got, want in zip(printed, rows):
        assert got[0] == pytest.approx(want[0], rel=1e-7) and got[1:] == want[1:]
    assert "k = 1" in out


@pytest.mark.parametrize("args", [["--merges", "--point", "beta=1"], ["--point", "beta=1"]])
def test_inspect_bad_merges_requests_exit_2_with_one_line(cli, simulate, args):
    path = simulate("caps.h5", *FLAGS, "--T", "1")
    result = subprocess.run([cli, "inspect", str(path), *args], capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "--point" in result.stderr


def test_merge_tree_of_a_run(simulate, tmp_path):
    ds = nadyn.open(simulate("caps.h5", *FLAGS, "--T", "12"))
    tree = nadyn.clusters.merge_tree(ds)
    events = nadyn.clusters.merge_events(ds)
    assert tree.leaves == int(ds.clusters.values[0])
    assert tree.merged == events["time"].size
    np.testing.assert_array_equal(tree.linkage[: tree.merged, 2], events["time"])
    assert hierarchy.is_valid_linkage(tree.linkage)
    assert tree.linkage.shape == (tree.leaves - 1, 4)
    assert tree.complete == (int(ds.clusters.values[-1]) == 1)
    # The tokens of each merged cluster are the sizes its event joined.
    np.testing.assert_array_equal(tree.tokens[: tree.merged], events["size"] + events["absorbed_size"])
    fig = nadyn.plot.merge_tree(ds)
    assert fig.axes[0].get_ylabel() == "time t"
    fig.savefig(tmp_path / "tree.png")


def test_sweep_records_t_k_and_merges_per_point(cli, tmp_path):
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        '[run]\ninit = "caps:3,0.4"\nn = 20\nd = 3\nT = 6\ndt = 0.05\nevery = 2\ncluster_eps = 0.02\n'
        "[sweep]\nbeta = [0.5, 1.0]\nseed = [1, 2]\n")
    out = tmp_path / "s.h5"
    subprocess.run([cli, "sweep", str(experiment), "--out", str(out), "--quiet"], check=True,
                   capture_output=True)
    sweep = nadyn.open(out)
    assert sweep.clustering_time.dims == ("beta", "seed", "k")
    assert sweep.merges.dims == ("beta", "seed", "merge", "merge_field")
    for beta in (0.5, 1.0):
        for seed in (1, 2):
            # The same run alone, as a single-run file: the same events and t_k.
            single = tmp_path / f"run_{beta}_{seed}.h5"
            subprocess.run([cli, "simulate", "--init", "caps:3,0.4", "--n", "20", "--d", "3", "--T", "6",
                            "--dt", "0.05", "--every", "2", "--cluster-eps", "0.02", "--beta", str(beta),
                            "--seed", str(seed), "--out", str(single), "--quiet"], check=True)
            ds = nadyn.open(single)
            point = sweep.sel(beta=beta, seed=seed)
            assert as_rows(point) == as_rows(ds)
            np.testing.assert_array_equal(point.clustering_time.values, ds.clustering_time.values)
            assert int(point.merge_count) == len(as_rows(ds))
    tree = nadyn.clusters.merge_tree(sweep, beta=1.0, seed=2)
    assert tree.merged == len(as_rows(sweep.sel(beta=1.0, seed=2)))
    nadyn.plot.merge_tree(sweep, beta=1.0, seed=2)
    text = subprocess.run([cli, "inspect", str(out), "--merges", "--point", "beta=1,seed=2"], check=True,
                          capture_output=True, text=True).stdout
    assert f"merge events: {tree.merged}" in text and "beta=1" in text
    bad = subprocess.run([cli, "inspect", str(out), "--merges", "--point", "beta=3,seed=2"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "beta in {0.5, 1}" in bad.stderr or "beta in {0.5, 1.0}" in bad.stderr
    with pytest.raises(ValueError, match="name one run"):
        nadyn.clusters.merge_tree(sweep, beta=1.0)


def test_merges_of_a_file_without_a_cluster_history_exit_2(cli, tmp_path):
    # nadyn reduced writes a trajectory of the scalar ODE: no tokens, so no cluster history.
    path = tmp_path / "reduced.h5"
    subprocess.run([cli, "reduced", "--T", "1", "--samples", "4", "--out", str(path)], check=True,
                   capture_output=True)
    result = subprocess.run([cli, "inspect", str(path), "--merges"], capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "no merge events" in result.stderr
    with pytest.raises(ValueError, match="no merge events"):
        nadyn.clusters.merge_tree(nadyn.open(path))
