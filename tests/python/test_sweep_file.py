"""The sweep file opens in xarray (h5netcdf) with dimensions named after the sweep's axes."""
import os
import subprocess

import h5py
import numpy as np
import xarray as xr

NADYN = os.environ.get("NADYN_CLI", "nadyn")
EXPERIMENT = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "beta_sweep.toml")


def run_sweep(tmp_path, *extra):
    out = tmp_path / "sweep.h5"
    subprocess.run(
        [NADYN, "sweep", EXPERIMENT, "--out", str(out), "--quiet",
         "--set", "sweep.seed.range=[1,2]", "--set", "sweep.beta.linspace=[0.5,8,3]",
         "--set", "run.T=2", *extra],
        check=True, capture_output=True)
    return out


def test_dimensions_and_coordinates(tmp_path):
    path = run_sweep(tmp_path)
    ds = xr.open_dataset(path, engine="h5netcdf")
    assert ds.mean_cos.dims == ("beta", "seed", "scheme", "time")
    np.testing.assert_array_equal(ds.beta.values, [0.5, 4.25, 8.0])
    np.testing.assert_array_equal(ds.seed.values, [1, 2])
    assert list(ds.scheme.values) == ["pre-ln", "peri-ln"]
    # Euler, dt = 0.1, T = 2: frames at every step (fewer than 100 steps).
    np.testing.assert_allclose(ds.time.values, np.arange(21) * 0.1, rtol=0, atol=1e-15)
    assert ds.positions.dims == ("beta", "seed", "scheme", "token", "dim")
    assert ds.positions.shape == (3, 2, 2, 64, 16)
    assert (ds.status.values == 1).all()
    assert ds.attrs["nadyn_kind"] == "sweep"
    # The final directions are unit vectors (the numerical contract), read through xarray.
    norms = np.linalg.norm(ds.positions.values, axis=-1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-12)
    # mean_cos recomputed from the final positions equals the stored observable.
    theta = ds.positions.sel(beta=8.0, seed=2, scheme="peri-ln").values
    n = theta.shape[0]
    s = theta.sum(axis=0)
    mean_cos = (s @ s - n) / (n * (n - 1))
    assert abs(mean_cos - ds.mean_cos.sel(beta=8.0, seed=2, scheme="peri-ln").values[-1]) < 1e-12
    # h5py reads the same numbers as plain arrays.
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["mean_cos"][...], ds.mean_cos.values)


def test_time_axis_per_run_when_dt_is_swept(tmp_path):
    path = run_sweep(tmp_path, "--set", "sweep.dt=[0.1,0.2]")
    ds = xr.open_dataset(path, engine="h5netcdf")
    assert ds.mean_cos.dims == ("beta", "seed", "scheme", "dt", "frame")
    times = ds.time.sel(dt=0.2).values
    assert np.isnan(times[..., 11:]).all()  # 11 frames at dt = 0.2, NaN after
    np.testing.assert_allclose(times[0, 0, 0, :11], np.arange(11) * 0.2, atol=1e-15)


def _sweep_of(tmp_path, text, name="s.h5"):
    (tmp_path / "e.toml").write_text(text)
    out = tmp_path / name
    subprocess.run([NADYN, "sweep", str(tmp_path / "e.toml"), "--out", str(out), "--quiet"],
                   check=True, capture_output=True)
    return out


def test_run_parameters_are_variables_over_the_axes_they_vary_along(tmp_path):
    """Issue 39 item 3: every run parameter of a sweep is a variable (a scalar when the runs
    share it), so a layer axis needs no dt typed by hand; a layers sweep has a `layer`
    coordinate, 2-D where dt varies."""
    import nadyn  # noqa: PLC0415

    path = _sweep_of(tmp_path, "[run]\nn = 6\nd = 3\nT = 0.4\nintegrator = \"layers\"\n"
                               "positions = \"none\"\n[sweep]\ndt = [0.1, 0.2]\nheads = [1, 2]\n"
                               "seed = [1, 2]\n")
    ds = nadyn.open(path)
    # Shared by every run: a scalar of the parameter's type, its value exact.
    assert ds["beta"].dims == () and ds["beta"].dtype == np.float64 and float(ds["beta"]) == 4.0
    assert ds["n"].dims == () and int(ds["n"]) == 6 and ds["n"].dtype == np.int64
    assert ds["scheme"].dims == () and str(ds["scheme"].values) == "peri-ln"
    assert str(ds["integrator"].values) == "layers"
    # Swept: the axis's own coordinate, exact.
    assert ds["dt"].dims == ("dt",) and ds["dt"].values.tolist() == [0.1, 0.2]
    assert ds["heads"].dims == ("heads",) and ds["heads"].values.tolist() == [1, 2]
    # Derived from a swept one (tau = dt for layers): over that axis only.
    assert ds["layer_time"].dims == ("dt",) and ds["layer_time"].values.tolist() == [0.1, 0.2]
    # What the sweep file keeps, not the run's own "all".
    assert ds.attrs["positions"] == "none"
    # The layer index t / dt, over (axes..., frame) since the frame times differ with dt.
    assert "layer" in ds.coords
    layer = ds["layer"].sel(heads=1, seed=1)
    np.testing.assert_array_equal(layer.sel(dt=0.1).values, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(layer.sel(dt=0.2).values[:3], [0, 1, 2])
    assert np.isnan(layer.sel(dt=0.2).values[3:]).all()  # after the run's last frame
    run = nadyn.io.sweep_run(ds, "dt=0.2,heads=2,seed=1")
    assert float(run["dt"]) == 0.2 and float(run["layer_time"]) == 0.2

    # Shared frame times and one dt: `layer` is a 1-D coordinate on time, int64; an rk4 run
    # beside the layers runs has none (NaN).
    path = _sweep_of(tmp_path, "[run]\nn = 6\nd = 3\nT = 0.4\ndt = 0.1\n[sweep]\n"
                               "beta = { linspace = [0.1, 0.3, 3] }\n", "one_dt.h5")
    plain = nadyn.open(path)
    assert "layer" not in plain.coords  # rk4: no layers
    assert plain["beta"].values.tolist() == [0.1, 0.2, 0.3]
    path = _sweep_of(tmp_path, "[run]\nn = 6\nd = 3\nT = 0.4\ndt = 0.1\nintegrator = \"layers\"\n"
                               "[sweep]\nseed = [1, 2]\n", "layers.h5")
    shared = nadyn.open(path)
    assert shared["layer"].dims == ("time",) and shared["layer"].dtype == np.int64
    np.testing.assert_array_equal(shared["layer"].values, [0, 1, 2, 3, 4])
    assert shared.swap_dims(time="layer").mean_cos.sel(layer=3).dims == ("seed",)


def test_unrecorded_runs_of_a_sweep_say_so(tmp_path):
    """Issue 39 item 4: in a sweep whose runs differ in what they record (data/
    sweep_observables_axis.h5: an observables axis, made through the library by
    tests/regression/sweep_unrecorded_not_zero.cpp), a run without clusters is "not recorded",
    never zero merges or "never clustered"."""
    import shutil  # noqa: PLC0415

    import pytest  # noqa: PLC0415

    import nadyn  # noqa: PLC0415

    data = os.path.join(os.path.dirname(__file__), "..", "regression", "data",
                        "sweep_observables_axis.h5")
    path = tmp_path / "s.h5"
    shutil.copy(data, path)
    ds = nadyn.open(path)
    assert ds["recorded"].dims == ("observables", "seed", "observable")
    assert ds["recorded"].sel(observable="clusters").values.tolist() == [[False, False],
                                                                         [True, True]]
    without = {"observables": "mean_cos", "seed": 1}
    assert np.isnan(ds["merge_count"].sel(without).values)  # the file's -1, not 0
    assert np.isnan(ds["plateau_length"].sel(without).values)
    assert ds["merge_count"].sel(observables="mean_cos,clusters", seed=1).values >= 1
    run = nadyn.io.sweep_run(ds, without)
    for name in ("clusters", "merge_count", "merges", "clustering_time", "plateau_length"):
        assert name not in run
        assert nadyn.io.not_recorded(run, name) == f"{name} not recorded (add clusters to observables)"
    assert "mean_cos" in run
    with pytest.raises(ValueError, match=r"merge events not recorded \(add clusters to observables\)"):
        nadyn.clusters.merge_events(ds, observables="mean_cos", seed=1)
    with pytest.raises(ValueError, match=r"merge events not recorded"):
        nadyn.clusters.merge_events(run)
    events = nadyn.clusters.merge_events(ds, observables="mean_cos,clusters", seed=1)
    assert len(events["time"]) == int(ds["merge_count"].sel(observables="mean_cos,clusters", seed=1))


def test_axis_values_print_short_and_exact_in_python(tmp_path):
    """Issue 39 item 3: Python shows an axis's values as the library does, in their shortest
    exact text (0.8842105263157894: not 0.884211, which names no value, nor
    0.88421052631578945), in sweep_run's choices and a plot's point label."""
    import pytest  # noqa: PLC0415

    import nadyn  # noqa: PLC0415
    import nadyn.plot  # noqa: PLC0415

    path = _sweep_of(tmp_path, "[run]\nn = 4\nd = 2\nT = 0.1\ndt = 0.1\n[sweep]\n"
                               "beta = { linspace = [0.1, 15, 20] }\n")
    ds = nadyn.open(path)
    assert ds["beta"].values[1] == 0.1 + (15 - 0.1) / 19  # the value itself, exact
    with pytest.raises(ValueError) as refused:
        nadyn.io.sweep_run(ds, {"beta": 7})
    assert "beta in {0.1, 0.8842105263157894, 1.6684210526315788," in str(refused.value)
    assert "0.884211," not in str(refused.value)
    run = nadyn.plot._sweep_run(ds, {"beta": 0.8842105263157894})
    assert run.attrs["point"] == "beta=0.8842105263157894"
    assert nadyn.plot._sweep_run(ds, {"beta": 15.0}).attrs["point"] == "beta=15"


def test_energy_of_a_sweep_whose_runs_share_beta(tmp_path):
    """With the run parameters as variables, E = exp(beta log_energy) / (2 beta) is derived for
    a sweep whose beta is not an axis too (before, beta was not found there, and no energy)."""
    import nadyn  # noqa: PLC0415

    path = _sweep_of(tmp_path, "[run]\nn = 6\nd = 3\nT = 0.2\nbeta = 2\n"
                               "observe = \"log_energy\"\n[sweep]\nseed = [1, 2]\n")
    ds = nadyn.open(path)
    assert "energy" in ds
    np.testing.assert_allclose(ds["energy"].values, np.exp(2 * ds["log_energy"].values) / 4,
                               rtol=1e-14)
