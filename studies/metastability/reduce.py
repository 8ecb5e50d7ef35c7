"""Dynamic metastability: how long two clusters at angle DELTA stay apart, against beta, the
same plateau under every scheme, and the energy staircase from a uniform start
(docs/model.md §15)."""
import math

import numpy as np
import pandas as pd
from scipy.integrate import quad

TITLE = "Dynamic metastability: two clusters stay apart for a time exponential in beta"
# The quick form (nadyn table metastability --quick): fewer betas, shorter runs, in seconds.
# The settings apply to the three experiments alike.
QUICK = ["sweep.beta=[4,5]", "run.T=200"]
CLUSTER_EPS = 1e-3  # the runs' cluster_eps (the default): clusters join at 1 - cos = eps
NOTE = """\
Two caps of radius 0.02 (8 tokens each, d = 3, post-ln, identity weights) at angle DELTA.
`plateau` is the longest time the cluster count stays at one value of at least 2 (here:
2, from t = 0 to the first frame after the merger; `nadyn.plateaus`), per run, from the
frames (four per time unit); `predicted` is the merge time of
two point clusters, T(beta, DELTA) = integral (1 + exp(beta (1 - cos D))) / (2 sin D) dD
from arccos(1 - eps) to DELTA (docs/model.md §15). Per DELTA, `slope` is the least-squares
slope of log(plateau) against beta over the runs that merged before T, `slope_predicted`
the same fit of log T over the same betas, `1 - cos DELTA` its large-beta limit (the
heuristic inter-cluster weight exp(-beta (1 - cos DELTA))). `runs` counts the merged runs.
"""
FORMATS = {"delta": ".4f"}
# The rows per scheme on the page as well as in their CSV (the runs stay CSV only).
PAGE_TABLES = {"metastability_schemes": "Per scheme"}


def longest_plateau(times, counts, least=2):
    """The longest plateau of the cluster count (nadyn.plateaus: a maximal stretch of frames
    at one count, ending at the first frame at another) among those of at least `least`
    clusters (the final single cluster is no metastable state): (length, count)."""
    import nadyn

    found = nadyn.plateaus(times, counts, plateau_min=0.0)
    lengths = np.where(found.clusters.values >= least, found.length.values, -1.0)
    if lengths.size == 0 or lengths.max() < 0:
        return 0.0, np.nan
    i = int(np.argmax(lengths))
    return float(lengths[i]), float(found.clusters.values[i])


def merge_time(beta, delta, eps=CLUSTER_EPS):
    """The time two point clusters of equal mass at angle delta take to come within
    arccos(1 - eps) under post-ln: each token weighs its own cluster exp(beta) and the other
    exp(beta cos D), so dD/dt = -2 sin D / (1 + exp(beta (1 - cos D)))."""
    end = math.acos(1.0 - eps)
    value, _ = quad(lambda x: (1.0 + math.exp(beta * (1.0 - math.cos(x)))) / (2.0 * math.sin(x)),
                    end, delta, limit=200)
    return value


def _delta(init):
    return float(str(init).split(",")[2])


def _slope(x, y):
    return float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 else np.nan


def plateau_table(data):
    times = data.time.values
    horizon = times[np.isfinite(times)].max()
    rows = []
    for init in data.init.values:
        for beta in data.beta.values:
            counts = data.clusters.sel(init=init, beta=beta).values
            length, count = longest_plateau(times, counts)
            merged = counts[np.isfinite(counts)][-1] == 1
            rows.append({"delta": _delta(init), "beta": float(beta), "clusters": count,
                         "plateau": length if merged else np.nan,
                         "predicted": merge_time(float(beta), _delta(init)),
                         "horizon": horizon})
    return pd.DataFrame(rows)


def scheme_clock(scheme, t_post, t_switch):
    """The time a scheme takes to do what post-ln does by t_post, when the speed divisor
    is the same for every token (docs/model.md §15): ngpt ‖A‖ ~ 1, sqrt-scaling
    sqrt(t + 1), pre-ln and peri-ln r = 1 + t (dr/dt = <theta, A> ~ 1 in a tight cluster),
    mix-ln post-ln until t_switch, then pre-ln from r = 1."""
    if scheme in ("post-ln", "ngpt"):
        return t_post
    if scheme == "sqrt-scaling":
        return (1.0 + t_post / 2.0) ** 2 - 1.0
    if scheme in ("pre-ln", "peri-ln"):
        return math.expm1(t_post) if t_post < 700 else math.inf
    if scheme == "mix-ln":
        return t_post if t_post <= t_switch else t_switch + math.expm1(t_post - t_switch)
    raise ValueError(f"no clock for scheme {scheme!r}")


def scheme_table(data, t_switch):
    times = data.time.values
    horizon = times[np.isfinite(times)].max()
    rows = []
    for beta in data.beta.values:
        post = data.clusters.sel(scheme="post-ln", beta=beta).values
        t_post, _ = longest_plateau(times, post)
        for scheme in data.scheme.values:
            counts = data.clusters.sel(scheme=scheme, beta=beta).values
            length, _ = longest_plateau(times, counts)
            merged = counts[np.isfinite(counts)][-1] == 1
            rows.append({"beta": float(beta), "scheme": str(scheme),
                         "plateau": length if merged else np.nan,
                         "predicted": scheme_clock(str(scheme), t_post, t_switch),
                         "merged_by_T": bool(merged), "horizon": horizon})
    table = pd.DataFrame(rows)
    table["rel_diff"] = table["plateau"] / table["predicted"] - 1.0
    return table


def _t_switch(schemes):
    """mix-ln's switch time, as the runs recorded it (one [run] value for them all)."""
    from nadyn.study import run_parameters

    point = {"scheme": schemes.scheme.values[0], "beta": schemes.beta.values[0]}
    return float(run_parameters(schemes, **point)["t_switch"])


def reduce(data):
    runs = plateau_table(data["plateaus"])
    rows = []
    for delta, group in runs.groupby("delta"):
        merged = group[np.isfinite(group["plateau"])]
        rows.append({"delta": delta, "delta_deg": math.degrees(delta), "runs": len(merged),
                     "slope": _slope(merged["beta"], np.log(merged["plateau"])),
                     "slope_predicted": _slope(merged["beta"], np.log(merged["predicted"])),
                     "1 - cos DELTA": 1.0 - math.cos(delta)})
    table = pd.DataFrame(rows)
    table["rel_diff"] = table["slope"] / table["slope_predicted"] - 1.0
    # The per-run plateaus and the rows per scheme, as extra CSV files.
    return {"metastability": table, "metastability_runs": runs,
            "metastability_schemes": scheme_table(data["schemes"], _t_switch(data["schemes"]))}


def figure(table, data, path):
    import matplotlib.pyplot as plt

    runs = plateau_table(data["plateaus"])
    stairs = data["staircase"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for delta, group in runs.groupby("delta"):
        line, = axes[0].semilogy(group["beta"], group["plateau"], "o",
                                 label=f"DELTA = {math.degrees(delta):.0f} deg")
        axes[0].semilogy(group["beta"], group["predicted"], "--", color=line.get_color())
    horizon = runs["horizon"].max()
    axes[0].axhline(horizon, color="gray", lw=0.5, label="horizon T")
    axes[0].set_ylim(top=10.0 * horizon)  # the dashed lines beyond it are not measured
    axes[0].set_xlabel("beta")
    axes[0].set_ylabel("plateau length (dashed: two point clusters)")
    axes[0].legend(fontsize=7)
    times = stairs.time.values
    for beta in stairs.beta.values:
        energy = stairs.energy.sel(beta=beta).values
        ok = np.isfinite(energy) & (times > 0)
        axes[1].semilogx(times[ok], energy[ok], label=f"beta = {beta:g}")
        axes[2].plot(np.log(times[ok]) / float(beta), energy[ok], label=f"beta = {beta:g}")
    axes[1].set_xlabel("t")
    axes[1].set_ylabel("energy (1/beta) log(2 beta E)")
    axes[1].set_title("uniform start on the circle, n = 64")
    axes[2].set_xlabel("log(t) / beta")
    axes[2].set_ylabel("energy")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
