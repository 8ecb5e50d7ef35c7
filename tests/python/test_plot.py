"""nadyn.plot: figures with the expected panels and legend entries, the closed-form overlay,
movies with one video frame per file frame (ffprobe), the GIF fallback, and the CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from matplotlib import animation
from PIL import Image

import nadyn
import nadyn.plot
from nadyn.closed_forms import initial_velocity

from conftest import REPO

# The overlays use the library's closed forms and fits: these tests need the compiled module.
SCHEMES = nadyn._core.scheme_names() if nadyn.has_core else []


def test_sphere_snapshots(simulate):
    path = simulate("run.h5", "--n", "30", "--T", "2")
    ds = nadyn.open(path)
    fig = nadyn.plot.sphere(ds, times=[0.0, 1.0, 2.0])
    assert len(fig.axes) == 6  # front and back disk per snapshot
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("t = 0") and titles[1].startswith("t = 1") and titles[2].startswith("t = 2")
    # Every token appears once, on the disk of its hemisphere.
    index = int(np.argmin(np.abs(ds["time"].values - 1.0)))
    z = ds["theta"].values[index, :, 2]
    front = fig.axes[1].collections[0].get_offsets()
    back = fig.axes[4].collections[0].get_offsets()
    assert len(front) == int((z >= 0).sum()) and len(back) == int((z < 0).sum())
    assert len(front) + len(back) == 30
    plt.close(fig)
    default = nadyn.plot.sphere(path)  # first, middle, last frame
    assert len(default.axes) == 6
    plt.close(default)


def test_sphere_refuses_other_dimensions(simulate):
    with pytest.raises(ValueError, match="d = 3, got d = 4"):
        nadyn.plot.sphere(simulate("d4.h5", "--n", "5", "--d", "4", "--T", "0.1"))
    with pytest.raises(ValueError, match="--positions none"):
        nadyn.plot.sphere(simulate("np.h5", "--n", "5", "--T", "0.1", "--positions", "none"))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_closed_form_initial_velocity_matches_the_particles(simulate, scheme):
    # The orthogonal start's gamma'(0) (closed form) equals the particle system's velocity
    # observable at t = 0, computed by nadyn from the right-hand side.
    path = simulate(f"{scheme}.h5", "--scheme", scheme, "--n", "5", "--d", "6", "--init", "orthogonal",
                    "--beta", "1.5", "--r0", "2", "--alpha", "0.7", "--T", "0.1")
    ds = nadyn.open(path)
    expected = initial_velocity(scheme, 5, 1.5, r0=2.0, alpha=0.7, t_switch=ds.attrs["t_switch"])
    assert ds["velocity"].values[0] == pytest.approx(expected, rel=1e-12)


def test_closed_form_values():
    # post-ln 2/(e^beta + n - 1); peri-ln 2/(r0 sqrt(e^{2 beta} + n - 1)).
    assert initial_velocity("post-ln", 8, 4.0) == pytest.approx(2 / (np.exp(4) + 7), rel=1e-15)
    assert initial_velocity("peri-ln", 256, 5.0) == pytest.approx(1.339855973539e-02, rel=1e-12)
    assert initial_velocity("mix-ln", 8, 4.0, r0=2.0, t_switch=0.0) == pytest.approx(1 / (np.exp(4) + 7), rel=1e-15)
    assert np.isfinite(initial_velocity("ngpt", 3, 1e4))
    with pytest.raises(ValueError, match="valid schemes: post-ln"):
        initial_velocity("layer-norm", 3, 1.0)


def test_observables_one_legend_entry_per_file(simulate):
    paths = [simulate(f"{s}.h5", "--scheme", s, "--n", "3", "--d", "3", "--init", "orthogonal", "--T", "2")
             for s in ("post-ln", "peri-ln", "ngpt")]
    fig = nadyn.plot.observables(paths, names=("mean_cos", "gap", "velocity"), law="initial-slope")
    assert len(fig.axes) == 3
    legend = fig.axes[0].get_legend()
    assert [t.get_text().split(",")[0] for t in legend.get_texts()] == ["post-ln", "peri-ln", "ngpt"]
    # mean_cos panel: one curve and one dashed closed-form line per file, the line's slope gamma'(0).
    lines = fig.axes[0].get_lines()
    assert len(lines) == 6
    for curve, overlay, scheme in zip(lines[0::2], lines[1::2], ("post-ln", "peri-ln", "ngpt")):
        t, y = overlay.get_data()
        assert overlay.get_linestyle() == "--"
        assert y[-1] / t[-1] == pytest.approx(initial_velocity(scheme, 3, 4.0), rel=1e-12)
    plt.close(fig)
    single = nadyn.plot.observables(paths[0])
    assert len(single.axes) == 2 and len(single.axes[0].get_legend().get_texts()) == 1
    plt.close(single)


def test_observables_errors(simulate):
    path = simulate("u.h5", "--n", "4", "--T", "0.1")
    with pytest.raises(ValueError, match="none of the given runs"):
        nadyn.plot.observables([path], law="initial-slope")
    with pytest.raises(ValueError, match="valid laws: initial-slope, terminal"):
        nadyn.plot.observables([path], law="fitted")
    with pytest.raises(ValueError, match="no observable speed; valid names: .*mean_cos"):
        nadyn.plot.observables([path], names=("speed",))


def test_heatmap_over_sweep_dimensions():
    rng = np.random.default_rng(0)
    sweep = xr.Dataset(
        {"mean_cos": (("scheme", "beta", "seed", "time"), rng.random((3, 4, 5, 6)))},
        coords={"scheme": ["post-ln", "pre-ln", "peri-ln"], "beta": [1.0, 2.0, 4.0, 8.0],
                "seed": np.arange(5), "time": np.linspace(0, 1, 6)},
    )
    fig = nadyn.plot.heatmap(sweep, "mean_cos", x="time", y="beta", col="scheme")
    assert len(fig.axes) == 4  # three panels and a colour bar
    assert [ax.get_title() for ax in fig.axes[:3]] == ["scheme = post-ln", "scheme = pre-ln", "scheme = peri-ln"]
    # The panel shows the mean over seeds.
    mesh = fig.axes[1].collections[0]
    expected = sweep["mean_cos"].sel(scheme="pre-ln").mean("seed").transpose("beta", "time").values
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(expected.shape), expected, rtol=1e-15)
    plt.close(fig)
    one = nadyn.plot.heatmap(sweep.sel(scheme="post-ln"), "mean_cos", col="scheme")
    assert len(one.axes) == 2
    plt.close(one)
    with pytest.raises(ValueError, match="valid names: mean_cos"):
        nadyn.plot.heatmap(sweep, "speed")


def count_video_frames(path) -> int:
    result = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
         "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", str(path)],
        capture_output=True, text=True, check=True,
    )
    return int(result.stdout.strip())


@pytest.mark.skipif(shutil.which("ffprobe") is None or not animation.writers.is_available("ffmpeg"),
                    reason="ffmpeg/ffprobe not installed (scripts/setup.sh installs them)")
def test_movie_frame_count(simulate, tmp_path):
    path = simulate("run.h5", "--n", "20", "--T", "0.5", "--every", "4")  # 13 frames + the last
    frames = nadyn.open(path).sizes["time"]
    assert frames == 14
    out = nadyn.plot.movie(path, out=tmp_path / "run.mp4", fps=10)
    assert out == str(tmp_path / "run.mp4")
    assert count_video_frames(out) == frames
    every = nadyn.plot.movie(path, out=tmp_path / "every.mp4", every=5)
    assert count_video_frames(every) == len(range(0, frames, 5))


def test_movie_gif_fallback_without_ffmpeg(simulate, tmp_path, monkeypatch):
    path = simulate("run.h5", "--n", "10", "--T", "0.2", "--every", "5")
    frames = nadyn.open(path).sizes["time"]
    monkeypatch.setattr(animation.writers, "is_available", lambda name: False)
    with pytest.warns(UserWarning, match="ffmpeg is not available"):
        out = nadyn.plot.movie(path, out=tmp_path / "run.mp4")
    assert out == str(tmp_path / "run.gif")
    with Image.open(out) as gif:
        assert gif.format == "GIF"
        assert gif.n_frames == frames


def test_command_line(simulate, tmp_path):
    a = simulate("a.h5", "--n", "8", "--T", "0.5", "--every", "10")  # 6 frames
    b = simulate("b.h5", "--n", "8", "--T", "0.5", "--scheme", "post-ln")
    env = {"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-m", "nadyn.plot", str(a), str(b), "--sphere", str(tmp_path / "s.png"),
         "--observables", str(tmp_path / "o.png"), "--movie", str(tmp_path / "m.gif")],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    for name in ("s.png", "o.png", "m.gif"):
        assert (tmp_path / name).stat().st_size > 0
    with Image.open(tmp_path / "m.gif") as gif:
        assert gif.n_frames == nadyn.open(a).sizes["time"]
    bad = subprocess.run([sys.executable, "-m", "nadyn.plot", str(tmp_path / "s.png"), "--sphere", "x.png"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("nadyn.plot: ")
    nothing = subprocess.run([sys.executable, "-m", "nadyn.plot", str(a)], capture_output=True, text=True, env=env)
    assert nothing.returncode == 2 and "nothing to do" in nothing.stderr


# The particle runs of `nadyn table terminal`: n = 32, d = 3, beta = 1, a cap of radius 0.5,
# rk4 with steps small against the decay (studies/terminal/experiments/); the polynomial ones end at
# T = 1000 instead of 3000 (p within 0.4% of 3 there, against 0.13% at 3000).
TERMINAL_RUNS = {
    "exponential": ("--T", "30", "--dt", "0.01", "--every", "10"),
    "stretched": ("--T", "200", "--dt", "0.02", "--every", "25"),
    "polynomial": ("--T", "1000", "--dt", "0.05", "--every", "50"),
}


# no-norm has no terminal law (its gap freezes at a positive value: docs/model.md §9).
@pytest.mark.parametrize("scheme", [s for s in SCHEMES if s != "no-norm"])
def test_terminal_law_fit_recovers_the_theory(simulate, scheme):
    law, theory = nadyn.laws.predicted(scheme)
    path = simulate(f"{scheme}.h5", "--scheme", scheme, "--n", "32", "--d", "3", "--beta", "1",
                    "--init", "cap:0.5", "--seed", "1", "--t-switch", "1", *TERMINAL_RUNS[law])
    ds = nadyn.open(path, positions=False)
    fit = nadyn.laws.fit_terminal(ds)
    assert fit is not None and fit.law == law
    assert fit.samples >= 10
    # a = 2 (post-ln, ngpt), p = 3 (pre-ln, mix-ln, peri-ln), c = 4 (sqrt-scaling).
    assert fit.parameter == pytest.approx(theory, rel=1e-2)
    # The predicted law fits better than the two others over the same window.
    others = [nadyn.laws.fit_law(other, ds["time"].values, ds["velocity"].values, fit.start, fit.end)
              for other in nadyn.laws.LAWS if other != law]
    assert all(fit.rms_residual < other.rms_residual for other in others)
    fig = nadyn.plot.observables([ds], names=("gap", "velocity"), law="terminal")
    assert fig.axes[1].get_yscale() == "log"
    (entry,) = fig.axes[0].get_legend().get_texts()
    assert f"(theory {theory:g})" in entry.get_text()
    plt.close(fig)


def test_fit_law_on_exact_samples():
    t = np.linspace(1.0, 50.0, 40)
    for law, v, parameter in (("exponential", 3.0 * np.exp(-2.0 * t), 2.0),
                              ("polynomial", 0.5 * t ** -3.0, 3.0),
                              ("stretched", np.exp(1.0 - 4.0 * np.sqrt(t + 1)) / np.sqrt(t + 1), 4.0)):
        fit = nadyn.laws.fit_law(law, t, v, 1.0, 50.0)
        assert fit.parameter == pytest.approx(parameter, rel=1e-12)
        assert fit.rms_residual < 1e-12
        np.testing.assert_allclose(fit(t), v, rtol=1e-10)


def test_terminal_law_needs_the_terminal_regime(simulate):
    path = simulate("short.h5", "--n", "8", "--T", "0.5")
    with pytest.raises(ValueError, match="terminal regime"):
        nadyn.plot.observables([path], law="terminal")
