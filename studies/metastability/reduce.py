"""Dynamic metastability: how long two clusters at angle DELTA stay apart, against beta, the
same plateau under every scheme, and the energy staircase from a uniform start
(docs/model.md §15)."""
import math
import os
import subprocess
import tempfile

import numpy as np
import pandas as pd
from scipy.integrate import quad

from nadyn import stats

TITLE = "Dynamic metastability: two clusters stay apart for a time exponential in beta"
# The quick form (nadyn table metastability --quick): fewer betas, shorter runs, one seed, in
# seconds. The first two apply to every experiment alike.
QUICK = ["sweep.beta=[4,5]", "run.T=200", "plateaus:sweep.seed.range=[1,1]",
         "schemes:sweep.seed.range=[1,1]", "eps:sweep.seed.range=[1,1]"]
CLUSTER_EPS = 1e-3  # the runs' cluster_eps (the default): clusters join at 1 - cos = eps
NOTE = """\
Two caps of radius 0.02 (8 tokens each, d = 3, post-ln, identity weights) at angle DELTA,
16 seeds per (DELTA, beta). `plateau` is the longest time the cluster count stays at one
value of at least 2 (here: 2, from t = 0 to the first frame after the merger;
`nadyn.plateaus`), from the frames (four per time unit): its Kaplan-Meier median over the
seeds with its 95 % interval (`> 2000`: beyond the horizon); `merged` counts the seeds that
merged by T = 2000 (the others are censored, and left out of every ratio). `predicted` is the
merge time of two point clusters at the nominal angle, T(beta, DELTA) = integral
(1 + exp(beta (1 - cos D))) / (2 sin D) dD from arccos(1 - eps) to DELTA (docs/model.md
§15); `ratio` is plateau / T(beta, DELTA) per seed, `ratio_realised` plateau /
T(beta, DELTA_r) with DELTA_r the angle between the two caps' centroids at t = 0 (§15,
"caps of finite radius"):
each the mean over the merged seeds with its standard error and 95 % t interval, and its
range over them. `excess_deg`: DELTA_r - DELTA in degrees, mean and range over the seeds.
The slopes (below): per DELTA, the least-squares slope of log(plateau) against beta over
every seed of the betas at which all 16 merged (its standard error from the fit's
residuals), `slope_predicted` the same fit of log T at the nominal angle, `slope_realised`
of log T at each run's realised angle, `1 - cos DELTA` the large-beta limit of the heuristic
inter-cluster weight exp(-beta (1 - cos DELTA)).
"""
FORMATS = {"delta_deg": ".0f", "beta": "g", "runs": "d", "merged": "d"}
# The slopes, the rows per scheme and the threshold's sensitivity on the page as well as in
# their CSVs (the runs stay CSV only).
PAGE_TABLES = {"metastability_slopes": "Slopes of log(plateau) against beta",
               "metastability_scheme_summary": "Per scheme (16 seeds each)",
               "metastability_eps": "The threshold cluster_eps halved and doubled (DELTA = 90 degrees)"}


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


def _slope_with_error(x, y):
    """The least-squares slope of y against x and its standard error (from the residuals)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or np.ptp(x) == 0:
        return _slope(x, y), np.nan
    xc = x - x.mean()
    slope = float(np.dot(xc, y - y.mean()) / np.dot(xc, xc))
    residual = y - y.mean() - slope * xc
    return slope, float(math.sqrt(np.dot(residual, residual) / (len(x) - 2) / np.dot(xc, xc)))


def initial_directions(record):
    """theta_k at t = 0 of a run (its init, seed, n and d as recorded): the start is a function
    of these alone, so a run of one step reproduces it (in this process when nadyn's compiled
    module is built, else through `nadyn simulate`)."""
    import nadyn

    keys = {"scheme": record["scheme"], "n": int(record["n"]), "d": int(record["d"]),
            "init": record["init"], "seed": int(record["seed"]),
            "T": 0.25, "dt": 0.25, "integrator": "rk4"}
    if nadyn.has_core:
        return np.asarray(nadyn.simulate(**keys).theta0, dtype=float)
    import h5py
    from nadyn.study import nadyn_program

    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "start.h5")
        flags = [f"--{k.replace('_', '-')}={v}" for k, v in keys.items()]
        subprocess.run([nadyn_program(), "simulate", *flags, "--out", out, "--quiet"],
                       check=True)
        with h5py.File(out, "r") as f:
            return f["particles/tokens/position/value"][0]


def realised_angle(theta, delta):
    """The angle between the centroids of the two caps (the tokens within delta/2 of token 0,
    and the others) of a start caps:2,EPS,delta."""
    own = theta @ theta[0] > math.cos(delta / 2.0)
    a, b = theta[own].mean(axis=0), theta[~own].mean(axis=0)
    return float(math.acos(np.clip(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), -1.0, 1.0)))


def run_rows(data, fixed=()):
    """One row per run of a caps:2 sweep with axes init or not, beta, seed (and ``fixed``):
    the plateau (NaN when the caps had not merged by T), the prediction at the nominal and at
    the realised angle, at the run's own cluster_eps."""
    from nadyn.study import run_parameters

    times = data.time.values
    horizon = times[np.isfinite(times)].max()
    axes = [a for a in data.clusters.dims if a != "time"]
    rows = []
    for point in _points(data, axes):
        counts = data.clusters.sel(point).values
        record = run_parameters(data, **point)
        delta, beta, eps = _delta(record["init"]), float(record["beta"]), float(record["cluster_eps"])
        length, count = longest_plateau(times, counts)
        merged = bool(counts[np.isfinite(counts)][-1] == 1)
        angle = realised_angle(initial_directions(record), delta)
        plateau = length if merged else np.nan
        predicted, realised = merge_time(beta, delta, eps), merge_time(beta, angle, eps)
        rows.append({"delta": delta, "beta": beta, "seed": int(record["seed"]),
                     "cluster_eps": eps, "clusters": count, "merged": merged,
                     "plateau": plateau, "horizon": horizon,
                     "angle": angle, "excess_deg": math.degrees(angle - delta),
                     "predicted": predicted, "predicted_realised": realised,
                     "ratio": plateau / predicted, "ratio_realised": plateau / realised})
    return pd.DataFrame(rows)


def _points(data, axes):
    import itertools

    for values in itertools.product(*(data[a].values for a in axes)):
        yield {a: (v.item() if hasattr(v, "item") else v) for a, v in zip(axes, values)}


def plateau_table(data):
    return run_rows(data)


def _ratio_columns(prefix, values, digits=4):
    """``prefix``: the mean of the finite values +- its standard error [95 % interval] as
    text; ``prefix_range``: their least and greatest."""
    finite = np.asarray(values, float)
    finite = finite[np.isfinite(finite)]
    return {prefix: stats.interval_text(stats.mean_interval(finite), digits),
            f"{prefix}_range": (f"{finite.min():.{digits}g} to {finite.max():.{digits}g}"
                                if finite.size else "-")}


def point_table(runs, keys=("delta", "beta")):
    """Per point (by ``keys``): the seeds, how many merged, the plateau's Kaplan-Meier median,
    the ratios to the predictions (mean, standard error, 95 % interval, range over the merged
    seeds) and the realised angles' excess over DELTA."""
    rows = []
    for values, group in runs.groupby(list(keys), sort=True):
        values = values if isinstance(values, tuple) else (values,)
        merged = group["merged"].to_numpy(bool)
        median = stats.km_median(np.where(merged, group["plateau"], group["horizon"]), merged)
        row = dict(zip(keys, values))
        row.update({"delta_deg": round(math.degrees(row["delta"]), 6),
                    "runs": len(group), "merged": int(merged.sum()),
                    "plateau": stats.median_text(median, 4),
                    "predicted": merge_time(row["beta"], row["delta"],
                                            float(group["cluster_eps"].iloc[0]))})
        row.update(_ratio_columns("ratio", group["ratio"]))
        row.update(_ratio_columns("ratio_realised", group["ratio_realised"]))
        row.update({"excess_deg": f"{group['excess_deg'].mean():.2f} "
                                  f"({group['excess_deg'].min():.2f} to "
                                  f"{group['excess_deg'].max():.2f})"})
        rows.append(row)
    table = pd.DataFrame(rows)
    return table.drop(columns=["delta"])[["delta_deg", *[k for k in keys if k != "delta"],
                                          *[c for c in table.columns
                                            if c not in ("delta", "delta_deg", *keys)]]]


def slope_table(runs):
    """Per DELTA: slopes of log(plateau), log T(nominal), log T(realised) against beta over
    every seed of the betas at which every seed merged (no censoring to bias them)."""
    rows = []
    for delta, group in runs.groupby("delta"):
        whole = group.groupby("beta")["merged"].transform("all")
        kept = group[whole]
        slope, error = _slope_with_error(kept["beta"], np.log(kept["plateau"]))
        rows.append({"delta_deg": round(math.degrees(delta), 6),
                     "betas": " ".join(f"{b:g}" for b in sorted(kept["beta"].unique())),
                     "runs": len(kept), "slope": slope, "slope_sem": error,
                     "slope_predicted": _slope(kept["beta"], np.log(kept["predicted"])),
                     "slope_realised": _slope(kept["beta"], np.log(kept["predicted_realised"])),
                     "1 - cos DELTA": 1.0 - math.cos(delta)})
    table = pd.DataFrame(rows)
    table["rel_diff"] = table["slope"] / table["slope_predicted"] - 1.0
    table["rel_diff_realised"] = table["slope"] / table["slope_realised"] - 1.0
    return table


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
    """One row per (beta, scheme, seed): the plateau against the scheme's clock applied to
    post-ln's plateau from the same start (the same seed)."""
    times = data.time.values
    horizon = times[np.isfinite(times)].max()
    rows = []
    for beta in data.beta.values:
        for seed in data.seed.values:
            post = data.clusters.sel(scheme="post-ln", beta=beta, seed=seed).values
            t_post, _ = longest_plateau(times, post)
            for scheme in data.scheme.values:
                counts = data.clusters.sel(scheme=scheme, beta=beta, seed=seed).values
                length, _ = longest_plateau(times, counts)
                merged = counts[np.isfinite(counts)][-1] == 1
                rows.append({"beta": float(beta), "scheme": str(scheme), "seed": int(seed),
                             "plateau": length if merged else np.nan,
                             "predicted": scheme_clock(str(scheme), t_post, t_switch),
                             "merged_by_T": bool(merged), "horizon": horizon})
    table = pd.DataFrame(rows)
    table["rel_diff"] = table["plateau"] / table["predicted"] - 1.0
    return table


def scheme_summary(runs):
    """Per (beta, scheme): seeds, merged, and plateau / clock(post-ln's plateau) - 1 over the
    merged seeds (mean, standard error, 95 % interval, range)."""
    rows = []
    for (beta, scheme), group in runs.groupby(["beta", "scheme"], sort=False):
        merged = group["merged_by_T"].to_numpy(bool)
        median = stats.km_median(np.where(merged, group["plateau"], group["horizon"]), merged)
        row = {"beta": beta, "scheme": scheme, "runs": len(group), "merged": int(merged.sum()),
               "plateau": stats.median_text(median, 4),
               "predicted": float(np.median(group["predicted"]))}
        row.update(_ratio_columns("rel_diff", group["rel_diff"]))
        rows.append(row)
    return pd.DataFrame(rows)


def _t_switch(schemes):
    """mix-ln's switch time, as the runs recorded it (one [run] value for them all)."""
    from nadyn.study import run_parameters

    point = {axis: schemes[axis].values[0] for axis in schemes.clusters.dims if axis != "time"}
    return float(run_parameters(schemes, **point)["t_switch"])


def reduce(data):
    runs = run_rows(data["plateaus"])
    schemes = scheme_table(data["schemes"], _t_switch(data["schemes"]))
    eps = run_rows(data["eps"])
    return {"metastability": point_table(runs),
            "metastability_runs": runs,
            "metastability_slopes": slope_table(runs),
            "metastability_schemes": schemes,
            "metastability_scheme_summary": scheme_summary(schemes),
            "metastability_eps": point_table(eps, keys=("delta", "cluster_eps", "beta"))}


def figure(table, data, path):
    import matplotlib.pyplot as plt

    runs = run_rows(data["plateaus"])
    stairs = data["staircase"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for delta, group in runs.groupby("delta"):
        line, = axes[0].semilogy(group["beta"], group["plateau"], "o", ms=3, alpha=0.5,
                                 label=f"DELTA = {math.degrees(delta):.0f} deg (every seed)")
        nominal = group.groupby("beta")["predicted"].first()
        axes[0].semilogy(nominal.index, nominal.values, "--", color=line.get_color())
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
