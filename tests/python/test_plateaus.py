"""Metastable plateaus (docs/model.md §5.3): the /plateaus table of a run file against an
independent numpy recomputation from the file's recorded clusters series; `nadyn.open` and
`nadyn.plateaus` (the C++ function through nadyn._core) on run and sweep files."""
from __future__ import annotations

import subprocess

import h5py
import numpy as np
import pytest

import nadyn

CAPS = ["--scheme", "post-ln", "--init", "caps:3,0.01", "--n", "12", "--d", "3", "--T", "40",
        "--seed", "2"]


def numpy_plateaus(times, counts, min_length):
    """The definition, by change points: a stretch runs from a frame whose count differs from
    the previous one to the next such frame (or, censored, to the last frame)."""
    times, counts = np.asarray(times, float), np.asarray(counts)
    firsts = np.concatenate(([0], np.flatnonzero(np.diff(counts) != 0) + 1))
    nexts = np.concatenate((firsts[1:], [len(counts)]))
    censored = nexts == len(counts)
    ends = np.where(censored, times[-1], times[np.minimum(nexts, len(times) - 1)])
    keep = ends - times[firsts] >= min_length
    return times[firsts][keep], ends[keep], counts[firsts][keep], censored[keep]


def recorded(path):
    with h5py.File(path, "r") as f:
        times = f["observables/clusters/time"][()]
        counts = f["observables/clusters/value"][()]
        table = {name: f["plateaus"][name][()] for name in ("start", "end", "clusters", "censored")}
        about = dict(f["plateaus"].attrs)
        T = float(f["parameters"].attrs["T"])
    return times, counts, table, about, T


@pytest.mark.parametrize("beta, plateau_min", [("4", None), ("4", "1.5"), ("1", "0"), ("4", "60%")])
def test_table_matches_numpy_from_the_clusters_series(simulate, beta, plateau_min):
    flags = CAPS + ["--beta", beta] + (["--plateau-min", plateau_min] if plateau_min else [])
    path = simulate(f"caps_{beta}_{plateau_min}.h5", *flags)
    times, counts, table, about, T = recorded(path)
    expected_min = {None: 0.05 * T, "1.5": 1.5, "0": 0.0, "60%": 0.6 * T}[plateau_min]
    assert about["min_length"] == pytest.approx(expected_min, rel=1e-15)
    start, end, clusters, censored = numpy_plateaus(times, counts, about["min_length"])
    np.testing.assert_array_equal(table["start"], start)
    np.testing.assert_array_equal(table["end"], end)
    np.testing.assert_array_equal(table["clusters"], clusters)
    np.testing.assert_array_equal(table["censored"].astype(bool), censored)
    assert table["clusters"].dtype == np.int64
    if len(start):
        longest = int(np.argmax(end - start))
        assert about["longest_length"] == end[longest] - start[longest]
        assert about["longest_clusters"] == clusters[longest]
    else:
        assert (about["longest_length"], about["longest_clusters"]) == (0.0, -1)

    ds = nadyn.open(path)
    np.testing.assert_array_equal(ds.plateaus_start.values, start)
    np.testing.assert_array_equal(ds.plateaus_censored.values, censored)
    assert ds.plateaus_start.dims == ("plateau",)
    assert float(ds.plateau_length) == about["longest_length"]
    assert int(ds.plateau_clusters) == about["longest_clusters"]

    # The compiled function on the series read back gives the file's table.
    again = nadyn.plateaus(ds.time, ds.clusters, plateau_min or "5%", horizon=T)
    np.testing.assert_array_equal(again.start.values, start)
    np.testing.assert_array_equal(again.clusters.values, clusters)
    assert again.attrs["longest_length"] == about["longest_length"]


def test_sweep_scalars_match_the_series_of_each_run(cli, tmp_path):
    (tmp_path / "exp.toml").write_text("""[run]
scheme = "post-ln"
init = "caps:3,0.01"
n = 12
T = 40
seed = 2
plateau_min = "10%"

[sweep]
beta = [1.0, 2.0, 4.0]
""")
    subprocess.run([cli, "sweep", "exp.toml", "--out", "s.h5", "--quiet"], cwd=tmp_path,
                   check=True, capture_output=True, timeout=300)
    ds = nadyn.open(tmp_path / "s.h5")
    assert ds.plateau_length.dims == ("beta",)
    for beta in ds.beta.values:
        point = ds.sel(beta=beta)
        start, end, clusters, _ = numpy_plateaus(point.time.values, point.clusters.values, 4.0)
        longest = int(np.argmax(end - start))
        assert float(point.plateau_length) == end[longest] - start[longest]
        assert int(point.plateau_clusters) == clusters[longest]
        # nadyn.plateaus on the sweep's series is the same function.
        assert nadyn.plateaus(point.time, point.clusters, "10%").attrs["longest_length"] == \
            float(point.plateau_length)
    # The first merge of the three caps comes later at larger beta.
    first_end = [float(nadyn.plateaus(ds.time, ds.clusters.sel(beta=b), 0.0).end[0])
                 for b in ds.beta.values]
    assert first_end[0] < first_end[1] < first_end[2]


def test_plateaus_function_edges_and_errors():
    # A series a sweep run left short: the -1 fill reads as NaN and is left out.
    table = nadyn.plateaus([0, 1, 2, 3, 4], [3, 3, 1, np.nan, np.nan], 0.0)
    np.testing.assert_array_equal(table.clusters.values, [3, 1])
    np.testing.assert_array_equal(table.end.values, [2.0, 2.0])
    np.testing.assert_array_equal(table.censored.values, [False, True])
    empty = nadyn.plateaus([], [], "5%")
    assert empty.sizes["plateau"] == 0
    assert empty.attrs["longest_clusters"] == -1
    with pytest.raises(ValueError, match="plateau-min"):
        nadyn.plateaus([0, 1], [1, 1], "5 %")
    with pytest.raises(ValueError, match="whole number"):
        nadyn.plateaus([0, 1], [1, 1.5], 0.0)
