"""nadyn.open on every kind of single-run file the CLI writes, checked against h5py's raw
reads and against quantities recomputed from the positions."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
import xarray as xr

import matplotlib.pyplot as plt

import nadyn
import nadyn.plot
from nadyn.io import frame_count

OBS = "observables"
REPO = pathlib.Path(__file__).resolve().parents[2]


def raw_observable_names(path):
    with h5py.File(path, "r") as f:
        return list(f[OBS].keys())


def test_dims_coords_and_raw_values(simulate):
    path = simulate("run.h5", "--n", "12", "--d", "4", "--T", "1", "--dt", "0.01", "--every", "5")
    ds = nadyn.open(path)
    assert isinstance(ds, xr.Dataset)
    with h5py.File(path, "r") as f:
        frames = f["particles/tokens/position/value"].shape[0]
        assert frames == 21  # 100 steps, a frame every 5 plus the first
        events = f["cluster_history/merges/value"].shape[0]
        # `plateau`: the run's plateau table (test_plateaus.py checks it).
        assert dict(ds.sizes) == {"time": frames, "token": 12, "dim": 4, "k": 4, "merge": events,
                                  "merge_field": 7, "plateau": ds.sizes["plateau"]}  # k = 1, 2, 4, 8
        assert ds["theta"].dims == ("time", "token", "dim")
        # The cluster history as stored: labels per frame, events with their times first.
        np.testing.assert_array_equal(ds["cluster_label"].values,
                                      f["particles/tokens/cluster_label/value"][()])
        np.testing.assert_array_equal(ds["merges"].values[:, 1:], f["cluster_history/merges/value"][()])
        np.testing.assert_array_equal(ds["merges"].values[:, 0], f["cluster_history/merges/time"][()])
        assert ds["r"].dims == ("time", "token")
        np.testing.assert_array_equal(ds["theta"].values, f["particles/tokens/position/value"][()])
        np.testing.assert_array_equal(ds["r"].values, f["particles/tokens/magnitude/value"][()])
        np.testing.assert_array_equal(ds["time"].values, f["particles/tokens/position/time"][()])
        np.testing.assert_array_equal(ds["step"].values, f["particles/tokens/position/step"][()])
        np.testing.assert_array_equal(ds["step"].values, np.arange(0, 101, 5))
        np.testing.assert_array_equal(ds["token"].values, np.arange(12))
        np.testing.assert_array_equal(ds["dim"].values, np.arange(4))
        for name in f[OBS]:
            assert ds[name].dims == ("time",)
            np.testing.assert_array_equal(ds[name].values, f[f"{OBS}/{name}/value"][()])
            # The time coordinate is every observable's own time series.
            np.testing.assert_array_equal(ds["time"].values, f[f"{OBS}/{name}/time"][()])
        np.testing.assert_array_equal(ds["theta0"].values, f["parameters/theta0"][()])
        np.testing.assert_array_equal(ds["r_initial"].values, f["parameters/r_initial"][()])
        for name, value in f["parameters"].attrs.items():
            expected = value.decode() if isinstance(value, bytes) else value
            assert ds.attrs[name] == expected, name
        assert ds.attrs["status"] == f.attrs["status"] == "complete"
    assert ds.attrs["scheme"] == "peri-ln"
    assert ds.attrs["n"] == 12 and ds.attrs["d"] == 4


def test_mean_cos_recomputed_from_positions(simulate):
    path = simulate("run.h5", "--scheme", "post-ln", "--n", "20", "--d", "3", "--T", "3", "--every", "10")
    ds = nadyn.open(path)
    theta = ds["theta"].values
    n = theta.shape[1]
    s = theta.sum(axis=1)
    mean_cos = (np.einsum("fd,fd->f", s, s) - n) / (n * (n - 1))
    np.testing.assert_allclose(ds["mean_cos"].values, mean_cos, rtol=0, atol=1e-12)
    # The directions stay on the sphere (the numerical contract), and the run does move.
    np.testing.assert_allclose(np.linalg.norm(theta, axis=2), 1.0, rtol=0, atol=1e-12)
    assert ds["mean_cos"].values[-1] != ds["mean_cos"].values[0]


def test_random_weights_are_variables(simulate):
    path = simulate("w.h5", "--n", "5", "--d", "3", "--T", "0.1", "--weights", "random")
    ds = nadyn.open(path)
    with h5py.File(path, "r") as f:
        for name in ("Q", "K", "V"):
            assert ds[name].dims == ("dim_out", "dim_in")
            np.testing.assert_array_equal(ds[name].values, f[f"parameters/{name}"][()])


def test_positions_none(simulate):
    path = simulate("nopos.h5", "--n", "10", "--T", "0.5", "--positions", "none")
    ds = nadyn.open(path)
    assert "theta" not in ds and "cluster_label" not in ds  # labels come with the positions
    # 50 steps, every one a frame (the cluster history adds k, merge and merge_field;
    # `plateau`: the run's plateau table, test_plateaus.py)
    assert {dim: ds.sizes[dim] for dim in ("time", "token", "dim")} == {"time": 51, "token": 10, "dim": 3}
    assert ds.sizes["k"] == 4 and "merges" in ds and "plateau" in ds.sizes
    with h5py.File(path, "r") as f:
        assert "particles/tokens/position" not in f
        np.testing.assert_array_equal(ds["r"].values, f["particles/tokens/magnitude/value"][()])
        np.testing.assert_array_equal(ds["mean_cos"].values, f[f"{OBS}/mean_cos/value"][()])
    # positions=False skips them in a file that has them.
    full = simulate("full.h5", "--n", "10", "--T", "0.5")
    assert "theta" not in nadyn.open(full, positions=False)


def test_frames_selection(simulate):
    path = simulate("run.h5", "--n", "6", "--T", "1")
    every_tenth = nadyn.open(path, frames=slice(None, None, 10))
    ds = nadyn.open(path)
    xr.testing.assert_identical(every_tenth.drop_vars(["theta0", "r_initial"]),
                                ds.isel(time=slice(None, None, 10)).drop_vars(["theta0", "r_initial"]).assign_attrs(frames_read=11))


LAZY_SELECTIONS = [
    dict(time=5),
    dict(time=slice(3, 20, 4), token=[1, 5, 2]),
    dict(time=slice(None, None, -3)),
    dict(time=slice(5, 5)),
    dict(dim=1, token=3),
    dict(time=slice(90, 2, -7), dim=slice(None, None, -1), token=[3, 1]),
    dict(time=[5, 1, 7], token=slice(10, 2, -2)),
]


def test_lazy_reads_equal_eager_reads(simulate):
    path = simulate("run.h5", "--n", "16", "--T", "1")
    eager = nadyn.open(path)
    with nadyn.open(path, lazy=True) as lazy:
        assert lazy.identical(eager)
        for selection in LAZY_SELECTIONS:
            for name in ("theta", "r"):
                picked = {k: v for k, v in selection.items() if k in eager[name].dims}
                expected = eager[name].isel(**picked).values
                got = lazy[name].isel(**picked).values
                assert got.shape == expected.shape, selection
                np.testing.assert_array_equal(got, expected)
    every_seventh = nadyn.open(path, lazy=True, frames=slice(1, None, 7))
    np.testing.assert_array_equal(every_seventh["theta"].isel(time=slice(None, None, -2)).values,
                                  eager["theta"].values[1::7][::-2])
    assert every_seventh.load().identical(nadyn.open(path, frames=slice(1, None, 7)))
    every_seventh.close()


def test_dataset_and_group_attributes_are_copied(simulate, tmp_path):
    path = simulate("run.h5", "--n", "4", "--T", "0.2")
    # A file whose datasets carry descriptions (as newer nadyn versions write them).
    with h5py.File(path, "a") as f:
        f[f"{OBS}/gap/value"].attrs["description"] = "mean of 1 - cos over pairs"
        f[f"{OBS}/gap"].attrs["unit"] = "1"
        f["particles/tokens/magnitude/value"].attrs["description"] = "r_k"
        f["parameters/theta0"].attrs["description"] = "initial directions"
        descriptions = f["parameters"].require_group("descriptions")
        descriptions.attrs["beta"] = "inverse temperature"
    ds = nadyn.open(path)
    assert ds["gap"].attrs["description"] == "mean of 1 - cos over pairs"
    assert ds["gap"].attrs["unit"] == "1"
    assert ds["r"].attrs["description"] == "r_k"
    assert ds["theta0"].attrs["description"] == "initial directions"
    assert ds.attrs["beta_description"] == "inverse temperature"


def test_series_of_different_lengths_read_the_common_prefix(simulate):
    path = simulate("run.h5", "--n", "4", "--T", "0.3", "--every", "1")
    with h5py.File(path, "a") as f:
        total = f[f"{OBS}/mean_cos/value"].shape[0]
        # A writer stopped after the values of a frame, before its time and step.
        f[f"{OBS}/velocity/step"].resize((total - 3,))
        f[f"{OBS}/gap/time"].resize((total - 1,))
    assert frame_count(path) == total - 3
    ds = nadyn.open(path)
    assert ds.sizes["time"] == total - 3
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(ds["mean_cos"].values, f[f"{OBS}/mean_cos/value"][: total - 3])


def test_failed_run(simulate):
    # pre-ln with r0 = 1e-300 overflows 1/r in the first step: exit 1, status failed.
    path = simulate("nan.h5", "--scheme", "pre-ln", "--r0", "1e-300", "--n", "8", "--T", "1",
                    "--dt", "0.1", expect=1)
    ds = nadyn.open(path)
    assert ds.attrs["status"] == "failed"
    assert ds.sizes["time"] >= 1
    assert np.isfinite(ds["theta"].values).all()


def test_not_a_trajectory(tmp_path):
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros(3)
    with pytest.raises(ValueError, match="not a nadyn trajectory"):
        nadyn.open(path)
    with pytest.raises(OSError, match="cannot open"):
        nadyn.open(tmp_path / "missing.h5")


def _start_long_run(cli, path):
    return subprocess.Popen(
        [cli, "simulate", "--n", "200", "--d", "3", "--T", "100000", "--every", "1",
         "--out", str(path), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _wait_for_frames(path, count, process, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        if os.path.exists(path):
            try:
                if frame_count(path) >= count:
                    return
            except (OSError, KeyError, ValueError):
                pass  # the writer is still creating the layout
        time.sleep(0.05)
    raise AssertionError(f"no {count} frames in {path} after {timeout} s")


def _check_consistent(ds):
    frames = ds.sizes["time"]
    assert frames >= 1
    assert ds["theta"].shape == (frames, 200, 3)
    assert ds["r"].shape == (frames, 200)
    np.testing.assert_array_equal(ds["step"].values, np.arange(frames))
    np.testing.assert_allclose(ds["time"].values, 0.01 * np.arange(frames), rtol=0, atol=1e-12)
    assert np.isfinite(ds["theta"].values).all()
    np.testing.assert_allclose(np.linalg.norm(ds["theta"].values, axis=2), 1.0, atol=1e-12)
    s = ds["theta"].values.sum(axis=1)
    mean_cos = (np.einsum("fd,fd->f", s, s) - 200) / (200 * 199)
    np.testing.assert_allclose(ds["mean_cos"].values, mean_cos, rtol=0, atol=1e-12)


def test_interrupted_run(cli, tmp_path):
    path = tmp_path / "long.h5"
    process = _start_long_run(cli, path)
    try:
        _wait_for_frames(path, 3, process)
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    ds = nadyn.open(path)
    assert ds.attrs["status"] == "interrupted"
    _check_consistent(ds)
    with h5py.File(path, "r") as f:
        assert ds.sizes["time"] == f["particles/tokens/position/value"].shape[0]


def test_killed_run(cli, tmp_path):
    # SIGKILL: no chance to finish, the status stays "running"; every flushed frame reads.
    path = tmp_path / "killed.h5"
    process = _start_long_run(cli, path)
    try:
        _wait_for_frames(path, 3, process)
    finally:
        process.kill()
        process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    ds = nadyn.open(path)
    assert ds.attrs["status"] == "running"
    assert ds.sizes["time"] >= 3
    _check_consistent(ds)


def test_damaged_killed_run_fails_fast(cli, tmp_path):
    # A run killed in SWMR mode, then bytes flipped in its metadata (the first 8 KiB): a SWMR
    # reader used to retry each failing checksum 100 times with a growing sleep (minutes,
    # Ctrl-C unanswered). nadyn.open now reads the file whole or raises at once. In a child
    # interpreter, so that a hang or a crash inside libhdf5 fails this test, not the suite.
    path = tmp_path / "killed.h5"
    process = _start_long_run(cli, path)
    try:
        _wait_for_frames(path, 3, process)
    finally:
        process.kill()
        process.communicate(timeout=60)
    original = path.read_bytes()
    rng = np.random.default_rng(7)
    outcomes = []
    for trial in range(12):
        data = bytearray(original)
        for offset in rng.integers(0, 8192, size=4):
            data[offset] ^= 1 << int(rng.integers(0, 8))
        damaged = tmp_path / f"damaged{trial}.h5"
        damaged.write_bytes(bytes(data))
        code = ("import nadyn, sys\n"
                "try:\n    nadyn.open(sys.argv[1]).load()\n"
                "except (OSError, ValueError, KeyError) as e:\n    print(type(e).__name__)\n")
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-c", code, str(damaged)], capture_output=True,
                                text=True, timeout=60)
        seconds = time.monotonic() - started
        assert result.returncode == 0, result.stderr
        assert seconds < 20, f"trial {trial}: {seconds:.1f} s"
        outcomes.append(result.stdout.strip() or "read")
    assert "OSError" in outcomes, outcomes  # the damage was met, not only missed


def test_growing_swmr_file(cli, tmp_path):
    path = tmp_path / "growing.h5"
    process = _start_long_run(cli, path)
    try:
        _wait_for_frames(path, 2, process)
        first = nadyn.open(path)
        assert process.poll() is None  # read while the writer runs
        assert first.attrs["status"] == "running"
        _check_consistent(first)
        _wait_for_frames(path, first.sizes["time"] + 5, process)
        second = nadyn.open(path)
        _check_consistent(second)
        assert second.sizes["time"] > first.sizes["time"]
        lazy = nadyn.open(path, lazy=True)
        frames = lazy.sizes["time"]
        _wait_for_frames(path, frames + 3, process)
        # A lazy read of a growing file keeps the frames present when it was opened.
        assert lazy["theta"].values.shape[0] == frames
        np.testing.assert_array_equal(lazy["theta"].values, nadyn.open(path)["theta"].values[:frames])
        lazy.close()
        # The earlier read is a prefix of the later one.
        prefix = second.isel(time=slice(0, first.sizes["time"]))
        np.testing.assert_array_equal(prefix["theta"].values, first["theta"].values)
        np.testing.assert_array_equal(prefix["mean_cos"].values, first["mean_cos"].values)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)


def test_sweep_file_dispatch(tmp_path):
    # Sweep files (written by `nadyn sweep`) are netCDF-shaped HDF5 with dimension scales and
    # the root attribute nadyn_kind = "sweep"; made here with xarray itself.
    betas = np.array([1.0, 2.0, 4.0])
    times = np.linspace(0.0, 1.0, 5)
    values = np.arange(2 * 3 * 5, dtype=float).reshape(2, 3, 5)
    sweep = xr.Dataset(
        {"mean_cos": (("scheme", "beta", "time"), values)},
        coords={"scheme": ["pre-ln", "peri-ln"], "beta": betas, "time": times},
        attrs={"nadyn_kind": "sweep"},
    )
    path = tmp_path / "sweep.h5"
    sweep.to_netcdf(path, engine="h5netcdf")
    with h5py.File(path, "a") as f:
        f.create_group("parameters").attrs["n"] = 64
    ds = nadyn.open(path)
    assert ds["mean_cos"].dims == ("scheme", "beta", "time")
    np.testing.assert_array_equal(ds["mean_cos"].values, values)
    np.testing.assert_array_equal(ds["beta"].values, betas)
    assert list(ds["scheme"].values) == ["pre-ln", "peri-ln"]
    assert ds.attrs["nadyn_kind"] == "sweep"
    assert ds.attrs["n"] == 64
    sub = nadyn.open(path, frames=slice(1, None, 2))
    np.testing.assert_array_equal(sub["time"].values, times[1::2])
    np.testing.assert_array_equal(sub["mean_cos"].values, values[:, :, 1::2])
    with nadyn.open(path, lazy=True) as lazy:
        np.testing.assert_array_equal(lazy["mean_cos"].sel(scheme="peri-ln").values, values[1])
    fig = nadyn.plot.heatmap(ds, "mean_cos", x="time", y="beta", col="scheme")
    assert len(fig.axes) == 3  # two schemes and the colour bar
    plt.close(fig)


def test_no_swmr_file(simulate):
    # --no-swmr writes the HDF5 1.8 format, which cannot be opened in SWMR-read mode.
    path = simulate("old.h5", "--n", "6", "--T", "0.2", "--no-swmr")
    ds = nadyn.open(path)
    assert ds.attrs["swmr"] == 0
    with h5py.File(path, "r") as f:
        assert f.attrs["status"] == ds.attrs["status"] == "complete"
        np.testing.assert_array_equal(ds["theta"].values, f["particles/tokens/position/value"][()])


def test_reduced_ode_file(cli, tmp_path):
    # `nadyn reduced --out` writes the scalar ODE in the observables layout with one
    # representative magnitude; its gamma'(0) is the closed form.
    path = tmp_path / "reduced.h5"
    subprocess.run([cli, "reduced", "--scheme", "peri-ln", "--n", "256", "--beta", "5", "--T", "10",
                    "--samples", "20", "--out", str(path)], check=True, capture_output=True)
    ds = nadyn.open(path)
    assert ds.attrs["model"] == "reduced" and ds.attrs["scheme"] == "peri-ln"
    assert ds.sizes["time"] == 21 and ds.sizes["token"] == 1
    assert "theta" not in ds
    with h5py.File(path, "r") as f:
        for name in ("mean_cos", "gap", "velocity", "r_mean"):
            np.testing.assert_array_equal(ds[name].values, f[f"{OBS}/{name}/value"][()])
            np.testing.assert_array_equal(ds["time"].values, f[f"{OBS}/{name}/time"][()])
    assert ds["mean_cos"].values[0] == 0.0
    assert ds["velocity"].values[0] == pytest.approx(nadyn.initial_velocity("peri-ln", 256, 5.0), rel=1e-12)
    np.testing.assert_allclose(ds["gap"].values, 1.0 - ds["mean_cos"].values, rtol=0, atol=1e-15)


def test_package_imports_without_the_compiled_module():
    import importlib.util

    # Until the bindings are built, nadyn is the pure-Python reader and plotter.
    assert nadyn.has_core == (importlib.util.find_spec("nadyn._core") is not None)
    assert callable(nadyn.open) and callable(nadyn.initial_velocity)


@pytest.mark.parametrize("core, expected", [
    ("__all__ = ['simulate']\ndef simulate():\n    return 'compiled'\n", "True compiled"),
    ("raise ImportError('undefined symbol')\n", "False absent"),
])
def test_compiled_module_extension_point(tmp_path, core, expected):
    # A copy of the package with a stand-in nadyn._core: a loadable one is re-exported, a
    # broken one leaves the pure-Python package working, with a warning.
    from conftest import REPO

    shutil.copytree(REPO / "python" / "nadyn", tmp_path / "nadyn",
                    ignore=shutil.ignore_patterns("__pycache__", "_core*.so"))
    (tmp_path / "nadyn" / "_core.py").write_text(core)
    code = ("import nadyn; print(nadyn.has_core, "
            "nadyn.simulate() if hasattr(nadyn, 'simulate') else 'absent')")
    result = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected
    assert ("cannot be loaded (undefined symbol)" in result.stderr) == expected.startswith("False")


def test_open_while_h5py_holds_the_file(simulate):
    # A notebook often keeps an h5py handle (default locking) open on the same file.
    path = simulate("run.h5", "--n", "4", "--T", "0.2")
    with h5py.File(path, "r") as f:
        ds = nadyn.open(path)
        np.testing.assert_array_equal(ds["r"].values, f["particles/tokens/magnitude/value"][()])


def test_netcdf_round_trip(simulate, tmp_path):
    # What nadyn.open returns can be saved as netCDF and read back unchanged.
    path = simulate("run.h5", "--n", "6", "--T", "0.2", "--weights", "random")
    ds = nadyn.open(path)
    ds.to_netcdf(tmp_path / "saved.nc", engine="h5netcdf")
    with xr.open_dataset(tmp_path / "saved.nc", engine="h5netcdf") as back:
        xr.testing.assert_identical(back.load(), ds)


def test_file_left_marked_by_a_killed_resume(tmp_path):
    # A resume killed in its first milliseconds leaves the file marked open for writing outside
    # SWMR mode (tests/regression/resume_killed_early.cpp tells how it was made): h5py refuses
    # it in every mode. nadyn.open clears a dead writer's mark, as h5clear -s does, and reads
    # the 165 frames the file holds.
    if not nadyn.has_core:
        pytest.skip("needs the compiled module nadyn._core")
    damaged = REPO / "tests" / "regression" / "data" / "resume_killed_early.h5"
    path = tmp_path / "k.h5"
    shutil.copyfile(damaged, path)
    ds = nadyn.open(path)
    assert ds.sizes["time"] == 165
    h5clear = shutil.which("h5clear")
    if h5clear:
        reference = tmp_path / "cleared.h5"
        shutil.copyfile(damaged, reference)
        subprocess.run([h5clear, "-s", str(reference)], check=True)
        assert path.read_bytes() == reference.read_bytes()
        expected = nadyn.open(reference)
        np.testing.assert_array_equal(ds.theta.values, expected.theta.values)
        np.testing.assert_array_equal(ds.time.values, expected.time.values)


def test_open_refuses_a_fifo_at_once(tmp_path):
    # A FIFO would block HDF5's open forever (no writer comes), beyond Ctrl-C's reach.
    import os
    fifo = tmp_path / "pipe.h5"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        nadyn.open(fifo)
