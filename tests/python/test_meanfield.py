"""The density solver from Python: nadyn.open on density files written by `nadyn meanfield`
(against h5py's raw reads and the starting densities' formulas), nadyn.meanfield against the
command line bit for bit, nadyn.compare against closed forms and independent quadratures,
and nadyn.plot.density."""

from __future__ import annotations

import math
import shutil
import signal
import subprocess
import threading
import time
import warnings

import h5py
import numpy as np
import pytest
import xarray as xr
from scipy import integrate, special

import nadyn
import nadyn.plot
from nadyn.compare import circle_w1

CIRCLE_FLAGS = ("--beta", "5", "--points", "256", "--init", "perturbed:3,0.1", "--T", "2")
CIRCLE_KEYWORDS = dict(beta=5, points=256, init="perturbed:3,0.1", T=2)


@pytest.fixture
def meanfield_file(cli, tmp_path):
    """meanfield_file(name, *flags, expect=0) runs `nadyn meanfield` into tmp_path/name."""

    def run(name: str, *flags: str, expect: int = 0):
        out = tmp_path / name
        result = subprocess.run([cli, "meanfield", *flags, "--out", str(out), "--quiet"],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == expect, result.stderr
        return out

    return run


@pytest.fixture
def circle_file(meanfield_file):
    return meanfield_file("circle.h5", *CIRCLE_FLAGS)


def gegenbauer_zonal(k: int, d: int, t):
    """G_k of S^{d-1} with G_k(1) = 1 (Chebyshev T_k for d = 2), from scipy."""
    if d == 2:
        return special.eval_chebyt(k, t)
    lam = (d - 2) / 2
    return special.eval_gegenbauer(k, lam, t) / special.eval_gegenbauer(k, lam, 1.0)


def on_circle(phi) -> np.ndarray:
    phi = np.asarray(phi, dtype=float)
    return np.column_stack([np.cos(phi), np.sin(phi)])


def uniform_on_sphere(n: int, rng) -> np.ndarray:
    x = rng.standard_normal((n, 3))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ---- nadyn.open ----------------------------------------------------------------------------

def test_open_circle_file(circle_file):
    ds = nadyn.open(circle_file)
    assert isinstance(ds, xr.Dataset)
    # T / (every dt) = 2 / 0.1 = 20 intervals: 21 frames; K = 8 modes by default.
    assert dict(ds.sizes) == {"time": 21, "point": 256, "dim": 2, "mode": 8}
    np.testing.assert_allclose(ds["time"].values, 0.1 * np.arange(21), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ds["mode"].values, np.arange(1, 9))
    assert ds["density"].dims == ("time", "point")
    assert ds["points"].dims == ("point", "dim") and ds["weights"].dims == ("point",)
    assert ds["modes"].dims == ("time", "mode")
    with h5py.File(circle_file, "r") as f:
        np.testing.assert_array_equal(ds["density"].values, f["density/value"][()])
        np.testing.assert_array_equal(ds["time"].values, f["density/time"][()])
        np.testing.assert_array_equal(ds["points"].values, f["density/points"][()])
        for name in f["observables"]:
            np.testing.assert_array_equal(ds[name].values, f[f"observables/{name}/value"][()])
        for name, value in f["parameters"].attrs.items():
            expected = value.decode() if isinstance(value, bytes) else value
            if isinstance(expected, float) and math.isnan(expected):
                assert math.isnan(ds.attrs[name]), name
            else:
                assert ds.attrs[name] == expected, name
    assert ds.attrs["status"] == "complete" and ds.attrs["model"] == "meanfield"
    assert ds.attrs["geometry"] == "circle" and "unresolved_time" not in ds.attrs
    # The nodes: unit vectors at the angles 2 pi j / 256, equal weights 1/256.
    points = ds["points"].values
    np.testing.assert_allclose(np.hypot(points[:, 0], points[:, 1]), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ds["angle"].values, 2 * np.pi * np.arange(256) / 256, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ds["weights"].values, 1 / 256, rtol=0, atol=1e-18)
    # The mass, recomputed from the nodes, is 1 at every frame; so is the observable.
    np.testing.assert_allclose(ds["density"].values @ ds["weights"].values, 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ds["mass"].values, 1.0, rtol=0, atol=1e-12)
    # Frame 0 is the start 1 + EPS cos(K theta), theta the angle to e_2 (density_init.hpp).
    theta = ds["angle"].values - np.pi / 2
    np.testing.assert_allclose(ds["density"].values[0], 1 + 0.1 * np.cos(3 * theta), rtol=0, atol=1e-14)


def test_open_sphere_and_zonal_files(meanfield_file):
    sphere = nadyn.open(meanfield_file("s.h5", "--d", "3", "--degree", "24", "--beta", "3",
                                       "--init", "perturbed:2,0.1", "--T", "0.5"))
    # libsharp's Gauss grid of degree L = 24: L + 1 rings of 2L + 2 nodes.
    assert dict(sphere.sizes) == {"time": 6, "point": 25 * 50, "dim": 3, "mode": 8}
    assert "angle" not in sphere.coords and "cos" not in sphere.coords
    np.testing.assert_allclose(np.linalg.norm(sphere["points"].values, axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(sphere["density"].values @ sphere["weights"].values, 1.0, atol=1e-12)
    x3 = sphere["points"].values[:, 2]
    np.testing.assert_allclose(sphere["density"].values[0], 1 + 0.1 * special.eval_legendre(2, x3),
                               rtol=0, atol=1e-13)

    zonal = nadyn.open(meanfield_file("z.h5", "--d", "5", "--degree", "24", "--beta", "3",
                                      "--init", "perturbed:2,0.1", "--T", "0.5"))
    assert dict(zonal.sizes) == {"time": 6, "point": 25, "dim": 5, "mode": 8}
    assert zonal.attrs["geometry"] == "zonal"
    np.testing.assert_array_equal(zonal["cos"].values, zonal["points"].values[:, 4])
    np.testing.assert_allclose(zonal["density"].values @ zonal["weights"].values, 1.0, atol=1e-12)
    np.testing.assert_allclose(zonal["density"].values[0],
                               1 + 0.1 * gegenbauer_zonal(2, 5, zonal["cos"].values), rtol=0, atol=1e-13)
    # The ring weights are the law of x_5 on S^4, c (1 - t^2)^(1/2): its moments E t^2 = 1/5,
    # E t^4 = 3/35 (exact for a Gauss rule of 17 nodes).
    w, t = zonal["weights"].values, zonal["cos"].values
    np.testing.assert_allclose([w @ t**2, w @ t**4], [1 / 5, 3 / 35], rtol=0, atol=1e-14)


def test_open_reads_the_frames_whose_time_is_written(circle_file, tmp_path):
    # A run stopped after writing frame 13's values but before its time: 13 frames.
    growing = tmp_path / "growing.h5"
    shutil.copy(circle_file, growing)
    with h5py.File(growing, "r+") as f:
        f["density/time"].resize((13,))
        f.attrs["status"] = "running"
    ds = nadyn.open(growing)
    assert ds.sizes["time"] == 13 and ds["density"].shape == (13, 256)
    assert ds.attrs["status"] == "running"
    assert nadyn.frame_count(growing) == 13
    np.testing.assert_array_equal(ds["density"].values, nadyn.open(circle_file)["density"].values[:13])
    # frames= and lazy= as for trajectories.
    every_fifth = nadyn.open(circle_file, frames=slice(None, None, 5))
    np.testing.assert_allclose(every_fifth["time"].values, [0, 0.5, 1, 1.5, 2], atol=1e-12)
    with nadyn.open(circle_file, lazy=True) as lazy:
        np.testing.assert_array_equal(lazy["density"].isel(time=-1).values,
                                      every_fifth["density"].values[-1])


# ---- nadyn.meanfield -----------------------------------------------------------------------

@pytest.mark.skipif(not nadyn.has_core, reason="needs the compiled module nadyn._core")
def test_meanfield_equals_the_command_line_bitwise(circle_file, tmp_path):
    ds = nadyn.meanfield(**CIRCLE_KEYWORDS)
    reference = nadyn.open(circle_file)
    assert "file" not in ds.attrs  # the temporary file is gone
    assert set(ds.data_vars) == set(reference.data_vars)
    for name in reference.data_vars:
        np.testing.assert_array_equal(ds[name].values, reference[name].values, err_msg=name)
    for name in reference.coords:
        np.testing.assert_array_equal(ds[name].values, reference[name].values, err_msg=name)
    assert ds.attrs["command_line"].startswith("nadyn.meanfield(beta=5")
    # out= writes the file the CLI writes.
    out = tmp_path / "python.h5"
    nadyn.meanfield(**CIRCLE_KEYWORDS, out=out)
    with h5py.File(out, "r") as a, h5py.File(circle_file, "r") as b:
        assert a.attrs["nadyn_kind"] == b.attrs["nadyn_kind"] == "density"
        np.testing.assert_array_equal(a["density/value"][()], b["density/value"][()])


@pytest.mark.skipif(not nadyn.has_core, reason="needs the compiled module nadyn._core")
def test_meanfield_bad_input(cli, tmp_path):
    for keywords, flags in (({"beta": -1.0}, ["--beta", "-1"]), ({"points": 7}, ["--points", "7"]),
                            ({"init": "perturbed:3"}, ["--init", "perturbed:3"])):
        with pytest.raises(ValueError) as caught:
            nadyn.meanfield(**keywords)
        message = str(caught.value)
        assert "\n" not in message and message
        # The command line's message for the same value.
        result = subprocess.run([cli, "meanfield", *flags, "--out", str(tmp_path / "bad.h5")],
                                capture_output=True, text=True)
        assert result.returncode == 2
        assert result.stderr.strip() == "nadyn: " + message
    with pytest.raises(ValueError, match="--d '-3'"):
        nadyn.meanfield(d=-3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bta'"):
        nadyn.meanfield(bta=5)
    with pytest.raises(TypeError, match="beta must be a float"):
        nadyn.meanfield(beta="5")


@pytest.mark.skipif(not nadyn.has_core, reason="needs the compiled module nadyn._core")
def test_meanfield_unresolved_warns_and_keeps_the_frames(meanfield_file):
    flags = ("--beta", "9", "--points", "96", "--init", "perturbed:4,0.1", "--T", "20")
    reference = nadyn.open(meanfield_file("unresolved.h5", *flags, expect=1))
    assert reference.attrs["status"] == "unresolved"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = nadyn.meanfield(beta=9, points=96, init="perturbed:4,0.1", T=20)
    assert ds.attrs["status"] == "unresolved"
    assert ds.attrs["unresolved_time"] == reference.attrs["unresolved_time"]
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1
    assert f"t = {ds.attrs['unresolved_time']:.6g} (unresolved_time)" in messages[0]
    # The frames before the unresolved time, on the frame times 0, 0.1, ...
    assert ds["time"].values[-1] < ds.attrs["unresolved_time"] <= ds["time"].values[-1] + 0.1 + 1e-12
    np.testing.assert_array_equal(ds["density"].values, reference["density"].values)


@pytest.mark.skipif(not nadyn.has_core, reason="needs the compiled module nadyn._core")
def test_meanfield_ctrl_c_keeps_the_frames(tmp_path):
    main = threading.main_thread().ident
    timer = threading.Timer(1.0, lambda: signal.pthread_kill(main, signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as error:
            # Minutes of work: running when the signal comes.
            nadyn.meanfield(beta=5, points=1 << 16, init="noise:0.01", T=200, out=tmp_path / "long.h5")
    finally:
        timer.cancel()
    assert time.monotonic() - start < 30
    ds = error.value.dataset
    assert ds.attrs["status"] == "interrupted"
    assert 1 <= ds.sizes["time"] and ds["time"].values[-1] < 200
    np.testing.assert_allclose(ds["density"].values @ ds["weights"].values, 1.0, atol=1e-12)


# ---- nadyn.compare: the circle ---------------------------------------------------------------

def test_circle_w1_between_particle_sets():
    n = 10
    ring = 2 * np.pi * np.arange(n) / n + 0.2
    # Equispaced sets shifted by delta in [0, 2 pi / n): each point moves by delta forward or
    # by 2 pi / n - delta backward, W1 = min(delta, 2 pi / n - delta).
    for delta in (0.0, 0.05, 0.3, 0.5, 0.6):
        expected = min(delta, 2 * np.pi / n - delta)
        assert circle_w1(ring, ring + delta) == pytest.approx(expected, abs=1e-12)
    # Identical measures (any order), and two point masses: their arc distance.
    assert circle_w1(ring, ring[::-1] + 2 * np.pi) == pytest.approx(0.0, abs=1e-15)
    assert circle_w1([0.0], [1.0]) == pytest.approx(1.0, abs=1e-12)
    assert circle_w1([0.0], [4.0]) == pytest.approx(2 * np.pi - 4.0, abs=1e-12)


def test_compare_circle_closed_forms(circle_file):
    ds = nadyn.open(circle_file)
    uniform = ds.isel(time=[0]).copy(deep=True)
    uniform["density"][:] = 1.0
    # A point mass against the uniform measure: the mean arc distance, pi/2.
    for angle in (0.0, 1.3, 5.9):
        w1 = nadyn.compare(on_circle([angle]), uniform)
        assert w1.name == "w1" and w1.dims == ("time",)
        assert float(w1) == pytest.approx(np.pi / 2, abs=1e-12)
    # n equispaced points against the uniform measure: each carries its arc of length
    # 2 pi / n to its middle, W1 = pi / (2n), whatever the offset.
    for n, offset in ((7, 0.3), (64, 0.01)):
        w1 = nadyn.compare(on_circle(2 * np.pi * np.arange(n) / n + offset), uniform)
        assert float(w1) == pytest.approx(np.pi / (2 * n), abs=1e-10)
    # A point mass at e_2 against rho = 1 + EPS cos(K theta) (frame 0; theta from e_2): the
    # mean arc distance, pi/2 + (EPS / pi) ((-1)^K - 1) / K^2 = pi/2 - 0.2 / (9 pi).
    w1 = nadyn.compare(on_circle([np.pi / 2]), ds.isel(time=[0]))
    assert float(w1) == pytest.approx(np.pi / 2 - 0.2 / (9 * np.pi), abs=1e-8)
    assert "arc-length" in w1.attrs["metric"]


def test_compare_matches_common_times(circle_file):
    ds = nadyn.open(circle_file)  # frames at 0, 0.1, .., 2
    ring = on_circle(2 * np.pi * np.arange(16) / 16)
    # Particle frames at 0, 0.05, .., 1: the common times are 0, 0.1, .., 1.
    times = 0.05 * np.arange(21)
    theta = np.broadcast_to(ring, (21, 16, 2))
    particles = xr.Dataset({"theta": (("time", "token", "dim"), theta)}, coords={"time": times})
    w1 = nadyn.compare(particles, ds)
    np.testing.assert_allclose(w1["time"].values, 0.1 * np.arange(11), rtol=0, atol=1e-12)
    # Each value is that frame's distance, as from the arrays directly.
    for t, value in zip(w1["time"].values, w1.values):
        frame = ds.sel(time=[t])
        assert value == float(nadyn.compare(ring, frame))
    with pytest.raises(ValueError, match="share no frame time"):
        nadyn.compare(ring[None], ds, times=[0.05])


@pytest.mark.skipif(not nadyn.has_core, reason="needs the compiled module nadyn._core")
def test_compare_takes_a_trajectory(circle_file):
    ds = nadyn.open(circle_file)
    run = nadyn.simulate(scheme="post-ln", n=32, d=2, beta=5, T=1, dt=0.01, every=10)
    from_trajectory = nadyn.compare(run, ds)
    from_dataset = nadyn.compare(run.to_xarray(), ds)
    np.testing.assert_allclose(from_trajectory["time"].values, 0.1 * np.arange(11), atol=1e-12)
    np.testing.assert_array_equal(from_trajectory.values, from_dataset.values)
    # At t = 0, the W1 of the drawn angles, recomputed from the frame's array.
    assert from_trajectory.values[0] == float(nadyn.compare(run.ys[0], ds.isel(time=[0])))


# ---- nadyn.compare: the sphere and zonal files -----------------------------------------------

@pytest.fixture
def sphere_file(meanfield_file):
    return meanfield_file("s.h5", "--d", "3", "--degree", "24", "--beta", "3", "--init",
                          "perturbed:2,0.1", "--T", "0.2")


def test_sliced_w1_of_a_point_mass_against_quadrature(sphere_file):
    ds = nadyn.open(sphere_file).isel(time=[0])  # rho = 1 + 0.1 P_2(x_3)
    north = np.array([[0.0, 0.0, 1.0]])

    def mean_distance(u):  # E_rho |<X - e_3, u>| by scipy's dblquad in (phi, theta)
        def f(phi, th):
            x = np.array([np.sin(th) * np.cos(phi), np.sin(th) * np.sin(phi), np.cos(th)])
            rho = 1 + 0.1 * special.eval_legendre(2, np.cos(th))
            return abs((x - north[0]) @ u) * rho * np.sin(th) / (4 * np.pi)
        return integrate.dblquad(f, 0, np.pi, 0, 2 * np.pi, epsabs=1e-12)[0]

    for u in (np.array([1.0, 0, 0]), np.array([0.6, 0, 0.8]), np.array([0, 0, 1.0])):
        w = nadyn.compare(north, ds, directions=u[None])
        assert w.name == "sliced_w1"
        assert float(w) == pytest.approx(mean_distance(u), abs=1e-8)
    # Along e_3 the law of x_3 has mean 0 (P_2 is even): E |x_3 - 1| = 1 exactly.
    assert float(nadyn.compare(north, ds, directions=np.array([[0, 0, 1.0]]))) == pytest.approx(1.0, abs=1e-12)


def test_sliced_w1_of_uniform_particles_falls_like_root_n(meanfield_file):
    ds = nadyn.open(meanfield_file("u.h5", "--d", "3", "--degree", "24", "--beta", "3",
                                   "--init", "uniform", "--T", "0.1"))
    np.testing.assert_allclose(ds["density"].values, 1.0, atol=1e-12)
    uniform = ds.isel(time=[0])
    rng = np.random.default_rng(7)
    # E W1 between n i.i.d. uniform samples of [-1, 1] and their law, n large:
    # sqrt(2 / (pi n)) integral sqrt(F (1 - F)) dt = sqrt(pi / (8 n)); every projection of the
    # uniform measure on S^2 is uniform on [-1, 1] (Archimedes).
    expected = math.sqrt(math.pi / 8)
    means = {}
    # One draw's distance spreads by about 20% around its mean: 16 draws of each size.
    for n in (500, 8000):
        values = [float(nadyn.compare(uniform_on_sphere(n, rng), uniform, directions=16, seed=s))
                  for s in range(16)]
        means[n] = np.mean(values)
        assert means[n] * math.sqrt(n) == pytest.approx(expected, rel=0.2)
    assert means[500] / means[8000] == pytest.approx(4.0, rel=0.3)
    # Particles uniform on the upper hemisphere: along e_3 their law is uniform on [0, 1]
    # (Archimedes), at W1 = 1/2 from the uniform law on [-1, 1]; the sliced distance is far
    # above the uniform particles'.
    upper = uniform_on_sphere(16000, rng)
    upper[:, 2] = np.abs(upper[:, 2])
    along_e3 = float(nadyn.compare(upper, uniform, directions=np.array([[0, 0, 1.0]])))
    assert along_e3 == pytest.approx(0.5, abs=0.02)
    assert float(nadyn.compare(upper, uniform)) > 10 * means[8000]


def test_zonal_w1_of_a_point_mass_against_quadrature(meanfield_file):
    d = 5
    ds = nadyn.open(meanfield_file("z.h5", "--d", str(d), "--degree", "24", "--beta", "3",
                                   "--init", "perturbed:2,0.1", "--T", "0.1")).isel(time=[0])
    lam = (d - 2) / 2
    c = 1 / special.beta(0.5, lam + 0.5)  # the law of x_d on S^{d-1}: c (1 - t^2)^(lam - 1/2)

    for t0 in (0.0, 0.3, -0.9):
        x = np.zeros((1, d))
        x[0, d - 1], x[0, 0] = t0, math.sqrt(1 - t0 * t0)
        reference = integrate.quad(
            lambda t: abs(t - t0) * c * (1 - t * t) ** (lam - 0.5) * (1 + 0.1 * gegenbauer_zonal(2, d, t)),
            -1, 1, points=[t0], epsabs=1e-13)[0]
        w = nadyn.compare(x, ds)
        assert w.name == "w1" and "zonal marginal" in w.attrs["metric"]
        assert float(w) == pytest.approx(reference, abs=1e-8)


# ---- nadyn.plot.density --------------------------------------------------------------------

def test_plot_density(circle_file, meanfield_file, tmp_path):
    fig = nadyn.plot.density(nadyn.open(circle_file), times=[0, 1, 2])
    assert len(fig.axes) == 1
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["t = 0", "t = 1", "t = 2"]
    ds = nadyn.open(circle_file)
    np.testing.assert_array_equal(lines[2].get_ydata(), ds["density"].values[-1])
    fig.savefig(tmp_path / "circle.png")
    assert (tmp_path / "circle.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    zonal = nadyn.open(meanfield_file("z.h5", "--d", "5", "--degree", "24", "--beta", "3",
                                      "--init", "perturbed:2,0.1", "--T", "0.2"))
    fig = nadyn.plot.density(zonal, times=[0, 0.2])
    assert len(fig.axes) == 1 and len(fig.axes[0].get_lines()) == 2
    np.testing.assert_array_equal(fig.axes[0].get_lines()[0].get_xdata(), np.sort(zonal["cos"].values))

    sphere = nadyn.open(meanfield_file("s.h5", "--d", "3", "--degree", "24", "--beta", "3",
                                       "--init", "perturbed:2,0.1", "--T", "0.2"))
    fig = nadyn.plot.density(sphere, times=[0, 0.1, 0.2])
    maps = [ax for ax in fig.axes if ax.name == "mollweide"]
    assert len(maps) == 3 and len(fig.axes) == 4  # and the colour bar
    fig.savefig(tmp_path / "sphere.png")
    assert (tmp_path / "sphere.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
