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
