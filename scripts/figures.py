#!/usr/bin/python3
"""The four figures of results/README.md: /usr/bin/python3 scripts/figures.py RESULTS_DIR

Reads the files `nadyn table all` writes (RESULTS_DIR/initial_velocity_beta.csv and
RESULTS_DIR/data/*) and writes RESULTS_DIR/fig{1,2,3,4}_*.png, with Debian's numpy, h5py and
matplotlib only. The PNGs carry no timestamp or version: same data, same bytes.
"""
import os
import sys

import numpy as np
import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.ticker import NullLocator  # noqa: E402

SCHEMES = ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"]
# One colour per scheme in every figure (tab10, colour-blind friendly enough).
COLOURS = dict(zip(SCHEMES, ["C0", "C1", "C2", "C3", "C4", "C5"]))
# How fig2 draws each scheme's time axis: the one on which its terminal law is a line.
X_AXIS = {"post-ln": "t", "ngpt": "t", "pre-ln": "log", "mix-ln": "log", "peri-ln": "log",
          "sqrt-scaling": "sqrt"}
X_LABEL = {"t": "time t", "log": "time t (log scale)", "sqrt": r"$\sqrt{t}$ (t = time)"}
# Particle gaps below this are round-off: the directions are O(1) doubles.
PARTICLE_GAP_FLOOR = 1e-22
SPHERE_TIMES = [0.0, 2.0, 5.0, 20.0]
# No Software/creation-time chunks, so the bytes depend only on the data.
PNG_METADATA = {"Software": None}
INPUTS = ["data/symmetric_start.csv", "data/terminal_series.csv", "data/terminal_fits.csv",
          "initial_velocity_beta.csv", "data/sphere_post-ln.h5", "data/sphere_peri-ln.h5"]


def fail(message):
    print("figures.py: error: " + message, file=sys.stderr)
    sys.exit(1)


def read_csv(path):
    """A csv as a structured array: float columns, str where the entries are names."""
    return np.atleast_1d(np.genfromtxt(path, delimiter=",", names=True, dtype=None,
                                       encoding="utf-8"))


def select(table, **match):
    """Rows of `table` whose columns equal the given values; failing loudly if none do."""
    keep = np.ones(len(table), dtype=bool)
    for key, value in match.items():
        keep &= table[key] == value
    if not keep.any():
        fail("no rows for %s" % match)
    return table[keep]


def save(fig, results, name):
    fig.savefig(os.path.join(results, name), dpi=120, metadata=PNG_METADATA)
    plt.close(fig)


def fig1_symmetric(results, data):
    # Beside gamma itself, the gap on a log axis: on the linear axis every scheme looks done
    # by t = 20, and mix-ln's switch from post-ln (gap already ~1e-10) would not show.
    fig, (ax, gap_ax) = plt.subplots(1, 2, figsize=(13, 4.8), layout="constrained")
    for s in SCHEMES:
        rows = select(data, scheme=s)
        # mix-ln equals post-ln until the switch: dash it so post-ln shows underneath.
        style = dict(color=COLOURS[s], lw=2, ls="--" if s == "mix-ln" else "-", label=s)
        ax.plot(rows["t"], rows["gamma"], **style)
        gap_ax.plot(rows["t"], rows["gap"], **style)
    for a in (ax, gap_ax):
        a.axvline(15, color="grey", lw=0.8, ls=":", label="mix-ln switch (t = 15)")
        a.set_xlabel("time t")
        a.set_xlim(0, rows["t"].max())
        a.grid(alpha=0.3)
    ax.set(ylabel=r"mean cosine $\gamma(t)$", title=r"mean cosine $\gamma(t)$")
    ax.legend(loc="lower right")
    gap_ax.set(yscale="log", ylabel=r"gap $1-\gamma(t)$ (log scale)",
               title=r"the same, as the gap $1-\gamma(t)$")
    decade_ticks(gap_ax)
    fig.suptitle(r"Symmetric orthogonal start, scalar ODE (n = 256, $\beta$ = 5, r0 = 1, "
                 r"$\alpha$ = 1)")
    save(fig, results, "fig1_symmetric_mean_cos.png")


def law_velocity(fit, t):
    """The fitted law v(t), and the gap it implies, the integral of v from t to infinity."""
    law, k, log_c = fit["law"], fit["parameter"], fit["log_prefactor"]
    if law == "exponential":
        v = np.exp(log_c - k * t)
        return v, v / k
    if law == "polynomial":
        v = np.exp(log_c - k * np.log(t))
        return v, v * t / (k - 1)
    if law == "stretched":
        s = np.sqrt(t + 1)
        v = np.exp(log_c - k * s) / s
        return v, v * 2 * s / k  # dt = 2 s ds turns the integral into 2C e^{-cs}/c
    fail("unknown law '%s' in terminal_fits.csv" % law)


LAW_TEXT = {"exponential": "rate a", "polynomial": "power p", "stretched": "c"}
SOURCES = (("reduced", "ODE"), ("particles", "particles"))


def terminal_curves(series, fits, s, xmode):
    """Per source: the (t, velocity, gap) samples to draw and the fit over its window."""
    curves = {}
    for source, _ in SOURCES:
        rows = select(series, scheme=s, source=source)
        rows = rows[(rows["t"] > 0) | (xmode != "log")]
        if source == "particles":
            rows = rows[(rows["gap"] > PARTICLE_GAP_FLOOR) & (rows["velocity"] > 0)]
            # Thin the markers evenly along the drawn axis so they stay distinct.
            pos = np.log(rows["t"]) if xmode == "log" else rows["t"]
            rows = rows[np.unique(np.searchsorted(pos, np.linspace(pos[0], pos[-1], 40)))]
        fit = select(fits, scheme=s, source=source)[0]
        tf = (np.geomspace if xmode == "log" else np.linspace)(
            fit["window_start"], fit["window_end"], 200)
        vf, gf = law_velocity(fit, tf)
        curves[source] = dict(rows=rows, fit=fit, fit_t=tf, fit_velocity=vf, fit_gap=gf)
    return curves


def draw_terminal(ax, curves, key, colour, x_of, sources=SOURCES):
    """One panel: samples as line (ODE) or hollow markers (particles), fits dashed on top."""
    symbol = r"$1-\gamma$" if key == "gap" else r"$\gamma'$"
    for source, label in sources:
        c = curves[source]
        if source == "reduced":
            style = dict(ls="-", lw=3, color=colour, alpha=0.55)
            fit_style = dict(ls=(0, (5, 2)), lw=1.4, color="k")
        else:
            style = dict(ls="none", marker="o", ms=4, mfc="none", mew=1, color=colour, alpha=0.7)
            fit_style = dict(ls=(0, (2, 1.2)), lw=1.8, color="k")
        ax.plot(x_of(c["rows"]["t"]), c["rows"][key], label="%s: %s" % (label, symbol), **style)
        fit = c["fit"]
        text = (label + " fit, integrated" if key == "gap" else
                "%s fit: %s = %.3f" % (label, LAW_TEXT[fit["law"]], fit["parameter"]))
        ax.plot(x_of(c["fit_t"]), c["fit_" + key], label=text, zorder=3, **fit_style)
    ax.set_yscale("log")
    decade_ticks(ax)


def decade_ticks(ax, most=8):
    """Log ticks at round multiples of a decade stride (1, 2, 5, 10, 20, 50, 100 decades)."""
    lo, hi = np.log10(ax.get_ylim())
    stride = next(k for k in (1, 2, 5, 10, 20, 50, 100, 200) if (hi - lo) / k <= most)
    ticks = np.arange(np.ceil(lo / stride) * stride, hi + 1e-9, stride)
    ax.set_yticks(10.0 ** ticks)
    if stride > 1:
        ax.yaxis.set_minor_locator(NullLocator())


def fig2_terminal(results, series, fits):
    # Gap panels above velocity panels, three schemes per band of two rows.
    fig, axes = plt.subplots(4, 3, figsize=(15, 15.5), layout="constrained")
    for i, s in enumerate(SCHEMES):
        xmode = X_AXIS[s]
        x_of = np.sqrt if xmode == "sqrt" else (lambda t: t)
        curves = terminal_curves(series, fits, s, xmode)
        pair = (axes[2 * (i // 3), i % 3], axes[2 * (i // 3) + 1, i % 3])
        for ax, key in zip(pair, ("gap", "velocity")):
            draw_terminal(ax, curves, key, COLOURS[s], x_of)
            if xmode == "log":
                ax.set_xscale("log")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7.5, loc="lower left")
            if xmode != "log":
                # The ODE runs 250 decades past the particles' round-off: zoom on those.
                inset = ax.inset_axes([0.55, 0.5, 0.42, 0.46])
                draw_terminal(inset, curves, key, COLOURS[s], x_of, SOURCES[1:])
                inset.set_title("particles, zoomed", fontsize=8, pad=2)
                inset.tick_params(labelsize=7)
                inset.grid(alpha=0.3)
        gap_ax, vel_ax = pair
        law = curves["reduced"]["fit"]["law"]
        gap_ax.set_title("%s: %s law" % (s, law), color=COLOURS[s], fontweight="bold")
        gap_ax.set_ylabel(r"gap $1-\gamma(t)$")
        vel_ax.set(ylabel=r"velocity $\gamma'(t)$", xlabel=X_LABEL[xmode])
        gap_ax.sharex(vel_ax)
        gap_ax.tick_params(labelbottom=False)
    fig.suptitle("Terminal laws near one cluster: scalar ODE (symmetric start) and "
                 "n-particle run (small cap start)\ndashed: least-squares fits of "
                 r"log $\gamma'$ over each fit window; on the gap panels, the fitted law "
                 "integrated from t to infinity", fontsize=12)
    save(fig, results, "fig2_terminal_laws.png")


def fig3_initial_velocity(results, data):
    # post-ln, pre-ln, mix-ln and sqrt-scaling coincide, as do peri-ln and ngpt: each group
    # goes from a wide faint line and big marker to thin opaque ones drawn on top, so every
    # coinciding curve still shows through.
    styles = [("-", 5, "o", 13), ("--", 3.5, "s", 10), (":", 2.5, "^", 7),
              ("-", 5, "o", 13), ("-.", 2.5, "D", 7), ((0, (1, 3)), 1.5, "v", 4)]
    fig, ax = plt.subplots(figsize=(8, 5.2), layout="constrained")
    for s, (dash, lw, marker, ms) in zip(SCHEMES, styles):
        rows = select(data, scheme=s)
        ax.plot(rows["beta"], rows["closed_form"], ls=dash, lw=lw, color=COLOURS[s],
                alpha=0.5 if lw >= 5 else 1.0, label=s + ": closed form")
        ax.plot(rows["beta"], rows["particles"], ls="none", marker=marker, ms=ms, mfc="none",
                mew=1.3, color=COLOURS[s], label=s + ": particles")
    ax.set(yscale="log", xlabel=r"inverse temperature $\beta$",
           ylabel=r"initial velocity $\gamma'(0)$")
    ax.set_title("Initial velocity from the symmetric orthogonal start (n = 256)\n"
                 "post-ln, pre-ln, mix-ln and sqrt-scaling coincide (r0 = 1); "
                 "so do peri-ln and ngpt", fontsize=11)
    ax.grid(alpha=0.3, which="both")
    ax.legend(ncol=2, fontsize=8, loc="lower left")
    save(fig, results, "fig3_initial_velocity_beta.png")


def read_sphere(path):
    """(parameters, frame times, positions (frames, n, d)) of an H5MD trajectory."""
    with h5py.File(path, "r") as f:
        parameters = {k: v.decode() if isinstance(v, bytes) else v
                      for k, v in f["/parameters"].attrs.items()}
        return (parameters, f["/particles/tokens/position/time"][()],
                f["/particles/tokens/position/value"][()])


def fig4_sphere(results, runs):
    fig = plt.figure(figsize=(14, 7.4), layout="constrained")
    u, w = np.meshgrid(np.linspace(0, 2 * np.pi, 25), np.linspace(0, np.pi, 13))
    sphere = (np.cos(u) * np.sin(w), np.sin(u) * np.sin(w), np.cos(w))
    elev, azim = np.radians(20), np.radians(-60)
    towards_viewer = [np.cos(elev) * np.cos(azim), np.cos(elev) * np.sin(azim), np.sin(elev)]
    for row, (parameters, times, x) in enumerate(runs):
        scheme = str(parameters["scheme"])
        colour = COLOURS.get(scheme, "k")
        for col, wanted in enumerate(SPHERE_TIMES):
            frame = int(np.argmin(np.abs(times - wanted)))
            ax = fig.add_subplot(2, len(SPHERE_TIMES), row * len(SPHERE_TIMES) + col + 1,
                                 projection="3d")
            ax.view_init(np.degrees(elev), np.degrees(azim))
            ax.plot_wireframe(*sphere, color="0.82", lw=0.4)
            # Directions: the sphere shows where tokens point, whatever their magnitude.
            p = x[frame] / np.linalg.norm(x[frame], axis=1, keepdims=True)
            # mplot3d does not hide points behind the sphere: fade them instead.
            front = p @ towards_viewer >= 0
            for side, alpha in ((~front, 0.25), (front, 1.0)):
                ax.scatter(*p[side].T, s=16, color=colour, alpha=alpha, depthshade=False)
            ax.set(xlim=(-1, 1), ylim=(-1, 1), zlim=(-1, 1))
            ax.set_box_aspect((1, 1, 1), zoom=1.25)
            ax.set_axis_off()
            ax.set_title("%s, t = %.2f" % (scheme, times[frame]), color=colour)
    p = runs[0][0]
    fig.suptitle(r"%d tokens on the unit sphere $S^2$ ($\beta$ = %g, %s start, seed %d); faded "
                 "points lie on the far side" % (p["n"], p["beta"], p["init"], p["seed"]))
    save(fig, results, "fig4_sphere_snapshots.png")


def main():
    if len(sys.argv) != 2:
        fail("usage: /usr/bin/python3 scripts/figures.py RESULTS_DIR")
    results = sys.argv[1]
    # Check every input before drawing, so a failed run leaves no half-made set of figures.
    for name in INPUTS:
        if not os.path.isfile(os.path.join(results, name)):
            fail("missing input file: " + os.path.join(results, name))
    plt.rcdefaults()  # a user's matplotlibrc must not change the figures
    path = lambda name: os.path.join(results, name)  # noqa: E731
    fig1_symmetric(results, read_csv(path("data/symmetric_start.csv")))
    fig2_terminal(results, read_csv(path("data/terminal_series.csv")),
                  read_csv(path("data/terminal_fits.csv")))
    fig3_initial_velocity(results, read_csv(path("initial_velocity_beta.csv")))
    fig4_sphere(results, [read_sphere(path("data/sphere_%s.h5" % s))
                          for s in ("post-ln", "peri-ln")])


if __name__ == "__main__":
    main()
