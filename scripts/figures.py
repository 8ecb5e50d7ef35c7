#!/usr/bin/python3
"""Figures 1-4 of results/README.md: /usr/bin/python3 scripts/figures.py RESULTS_DIR

Reads the files `nadyn table all` writes (RESULTS_DIR/initial_velocity_beta.csv and
RESULTS_DIR/data/*) and writes RESULTS_DIR/fig{1,2,3,4}_*.png, with Debian's numpy, h5py and
matplotlib only (figure 5 is drawn by the study studies/random_weights/). The PNGs carry no
timestamp or version: same data, same bytes.

Each figure makes one point and is sized for print: 3.4 in wide (one paper column) or 7 in
(a full-width figure), 8-point text, 200 dpi.
"""
import os
import sys

import numpy as np
import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.legend_handler import HandlerTuple  # noqa: E402
from matplotlib.ticker import NullLocator  # noqa: E402

# The paper's schemes, in the order of its tables: those of data/terminal_fits.csv (the
# terminal study writes the library's list of schemes with a terminal law, nadyn._core.schemes()),
# set by main(). One colour per scheme in every figure (tab10, colour-blind friendly enough).
SCHEMES = []
COLOURS = {}
X_LABEL = {"t": "time t", "log": "time t (log scale)", "sqrt": r"$\sqrt{t}$ (t = time)"}
# Particle gaps below this are round-off: the directions are O(1) doubles.
PARTICLE_GAP_FLOOR = 1e-22
SPHERE_TIMES = [0.0, 2.0, 5.0, 20.0]
# No Software/creation-time chunks, so the bytes depend only on the data.
PNG_METADATA = {"Software": None}
INPUTS = ["data/symmetric_start.csv", "data/terminal_series.csv", "data/terminal_fits.csv",
          "initial_velocity_beta.csv", "data/sphere_post-ln.h5", "data/sphere_peri-ln.h5"]
COLUMN = 3.4  # inches: one column of a two-column paper
FULL = 7.0    # inches: a figure across both columns
STYLE = {"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7,
         "xtick.labelsize": 7, "ytick.labelsize": 7, "figure.titlesize": 8.5,
         "lines.linewidth": 1.4}


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
    fig.savefig(os.path.join(results, name), dpi=200, metadata=PNG_METADATA)
    plt.close(fig)


def fig1_symmetric(results, data):
    # Beside gamma itself, the gap on a log axis: on the linear axis every scheme looks done
    # by t = 20, and mix-ln's switch from post-ln (gap already ~1e-10) would not show.
    fig, (ax, gap_ax) = plt.subplots(1, 2, figsize=(FULL, 2.7), layout="constrained")
    for s in SCHEMES:
        rows = select(data, scheme=s)
        # mix-ln equals post-ln until the switch: dash it so post-ln shows underneath.
        style = dict(color=COLOURS[s], lw=1.5, ls="--" if s == "mix-ln" else "-", label=s)
        ax.plot(rows["t"], rows["gamma"], **style)
        gap_ax.plot(rows["t"], rows["gap"], **style)
    for a in (ax, gap_ax):
        a.axvline(15, color="grey", lw=0.8, ls=":", label="mix-ln switch (t = 15)")
        a.set_xlabel("time t")
        a.set_xlim(0, rows["t"].max())
        a.grid(alpha=0.3)
    ax.set(ylabel=r"mean cosine $\gamma(t)$", title=r"mean cosine $\gamma(t)$")
    ax.legend(loc="lower right", ncol=2)
    gap_ax.set(yscale="log", ylabel=r"gap $1-\gamma(t)$ (log scale)",
               title=r"the same, as the gap $1-\gamma(t)$")
    decade_ticks(gap_ax)
    fig.suptitle(r"How fast each scheme clusters from the symmetric orthogonal start "
                 r"(scalar ODE, n = 256, $\beta$ = 5, r0 = 1, $\alpha$ = 1)")
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


def decade_ticks(ax, most=8):
    """Log ticks at round multiples of a decade stride (1, 2, 5, 10, 20, 50, 100 decades)."""
    lo, hi = np.log10(ax.get_ylim())
    stride = next(k for k in (1, 2, 5, 10, 20, 50, 100, 200) if (hi - lo) / k <= most)
    ticks = np.arange(np.ceil(lo / stride) * stride, hi + 1e-9, stride)
    ax.set_yticks(10.0 ** ticks)
    if stride > 1:
        ax.yaxis.set_minor_locator(NullLocator())


LAW_TEXT = {"exponential": "a", "polynomial": "p", "stretched": "c"}
# fig2: one panel per law, on the axis where that law is a straight line.
LAW_PANELS = [("exponential", r"$\gamma' \approx C e^{-a t}$", "t"),
              ("polynomial", r"$\gamma' \approx C / t^{p}$", "log"),
              ("stretched", r"$\gamma' \approx C e^{-c\sqrt{t}} / \sqrt{t}$", "sqrt")]
THEORY = {"exponential": 2, "polynomial": 3, "stretched": 4}


def fig2_terminal(results, series, fits):
    """Terminal velocity of every scheme against its predicted law, one panel per law.

    The n-particle run (markers) and the scalar ODE (line) on the axis where the law is a
    straight line; the ODE is drawn over the particles' time range only (it runs on to
    1e-250, which would squeeze the part both share into a sliver). Black dashed: the law
    fitted to the particles over its window."""
    fig, axes = plt.subplots(1, 3, figsize=(FULL, 2.6), layout="constrained")
    for ax, (law, formula, xmode) in zip(axes, LAW_PANELS):
        x_of = np.sqrt if xmode == "sqrt" else (lambda t: t)
        handles, labels = [], []
        for s in SCHEMES:
            fit = select(fits, scheme=s, source="particles")[0]
            if fit["law"] != law:
                continue
            ode_fit = select(fits, scheme=s, source="reduced")[0]
            part = select(series, scheme=s, source="particles")
            part = part[(part["gap"] > PARTICLE_GAP_FLOOR) & (part["velocity"] > 0) &
                        (part["t"] > 0)]
            ode = select(series, scheme=s, source="reduced")
            ode = ode[(ode["t"] >= (0.1 if xmode == "log" else 0)) &
                      (ode["t"] <= part["t"].max())]
            # Thin the markers evenly along the drawn axis so they stay distinct.
            pos = np.log(part["t"]) if xmode == "log" else x_of(part["t"])
            part = part[np.unique(np.searchsorted(pos, np.linspace(pos[0], pos[-1], 22)))]
            line, = ax.plot(x_of(ode["t"]), ode["velocity"], color=COLOURS[s], lw=1.2,
                            ls="--" if s == "mix-ln" else "-")
            marks, = ax.plot(x_of(part["t"]), part["velocity"], ls="none", marker="o", ms=2.6,
                             mfc="none", mew=0.7, color=COLOURS[s])
            tf = (np.geomspace if xmode == "log" else np.linspace)(
                fit["window_start"], fit["window_end"], 100)
            ax.plot(x_of(tf), law_velocity(fit, tf)[0], color="k", lw=0.8, ls=(0, (3, 2)),
                    zorder=3)
            handles.append((line, marks))
            labels.append("%s: %s %.3f / %.3f" % (s, LAW_TEXT[law], fit["parameter"],
                                                  ode_fit["parameter"]))
        if xmode == "log":
            ax.set_xscale("log")
        ax.set_yscale("log")
        decade_ticks(ax, most=6)
        ax.grid(alpha=0.3)
        ax.set(xlabel=X_LABEL[xmode], title="%s: %s = %s in theory" % (formula, LAW_TEXT[law],
                                                                          THEORY[law]))
        ax.legend(handles, labels, handler_map={tuple: HandlerTuple(ndivide=None)},
                  loc="lower left", title="fitted %s: particles / ODE" % LAW_TEXT[law],
                  title_fontsize=6.5, fontsize=6.5)
    axes[0].set_ylabel(r"velocity $\gamma'(t)$")
    fig.suptitle("Near one cluster every scheme's velocity follows its predicted law\n"
                 "lines: scalar ODE (symmetric start), circles: n-particle run (small cap "
                 "start; another constant C), black dashes: fit")
    save(fig, results, "fig2_terminal_laws.png")


def fig3_initial_velocity(results, data):
    """gamma'(0) against beta: two closed forms, the six schemes' particle values on them."""
    fig, ax = plt.subplots(figsize=(COLUMN, 2.7), layout="constrained")
    groups = [(["post-ln", "pre-ln", "mix-ln", "sqrt-scaling"], r"$2/(e^\beta+n-1)$",
               "post-ln, pre-ln, mix-ln, sqrt-scaling", "C0"),
              (["peri-ln", "ngpt"], r"$2/\sqrt{e^{2\beta}+n-1}$", "peri-ln, ngpt", "C3")]
    for members, formula, names, colour in groups:
        rows = select(data, scheme=members[0])
        ax.plot(rows["beta"], rows["closed_form"], color=colour, lw=1.4,
                label="%s: %s" % (formula, names))
        # Every member's particle value, small enough not to hide the line; they agree with
        # the closed form to 1e-10, so they overlap.
        for s in members:
            rows = select(data, scheme=s)
            ax.plot(rows["beta"][::2], rows["particles"][::2], ls="none", marker="o", ms=3,
                    mfc="none", mew=0.7, color=colour)
    ax.plot([], [], ls="none", marker="o", ms=3, mfc="none", mew=0.7, color="0.3",
            label="n-particle right-hand side (each scheme)")
    ax.set(yscale="log", xlabel=r"inverse temperature $\beta$",
           ylabel=r"initial velocity $\gamma'(0)$")
    ax.set_title("Normalising the attention output (peri-ln, ngpt)\nspeeds up the start "
                 "(n = 256, r0 = alpha = 1)")
    ax.grid(alpha=0.3, which="major")
    ax.legend(loc="lower left", fontsize=6.5)
    save(fig, results, "fig3_initial_velocity_beta.png")


def read_sphere(path):
    """(parameters, frame times, positions (frames, n, d)) of an H5MD trajectory."""
    with h5py.File(path, "r") as f:
        parameters = {k: v.decode() if isinstance(v, bytes) else v
                      for k, v in f["/parameters"].attrs.items()}
        return (parameters, f["/particles/tokens/position/time"][()],
                f["/particles/tokens/position/value"][()])


def fig4_sphere(results, runs):
    fig = plt.figure(figsize=(FULL, 3.9), layout="constrained")
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
                ax.scatter(*p[side].T, s=4, color=colour, alpha=alpha, depthshade=False)
            ax.set(xlim=(-1, 1), ylim=(-1, 1), zlim=(-1, 1))
            ax.set_box_aspect((1, 1, 1), zoom=1.25)
            ax.set_axis_off()
            ax.set_title("%s, t = %.2f" % (scheme, times[frame]), color=colour)
    p = runs[0][0]
    fig.suptitle(r"post-ln gathers the tokens into a few clusters by t = 5; peri-ln, slowed by "
                 r"its growing magnitudes, is still gathering at t = 20" "\n"
                 r"%d tokens on the unit sphere $S^2$ ($\beta$ = %g, %s start, seed %d); faded "
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
    plt.rcParams.update(STYLE)
    path = lambda name: os.path.join(results, name)  # noqa: E731
    fits = read_csv(path("data/terminal_fits.csv"))
    SCHEMES[:] = list(dict.fromkeys(str(s) for s in fits["scheme"]))
    COLOURS.update({s: "C%d" % i for i, s in enumerate(SCHEMES)})
    fig1_symmetric(results, read_csv(path("data/symmetric_start.csv")))
    fig2_terminal(results, read_csv(path("data/terminal_series.csv")), fits)
    fig3_initial_velocity(results, read_csv(path("initial_velocity_beta.csv")))
    fig4_sphere(results, [read_sphere(path("data/sphere_%s.h5" % s))
                          for s in ("post-ln", "peri-ln")])


if __name__ == "__main__":
    main()
