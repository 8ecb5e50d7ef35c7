"""Clustering under the causal mask (Karagodin, Polyanskiy, Rigollet, arXiv 2411.04990;
docs/model.md §18): the time to one cluster with V = I for Q = K = I and for Gaussian Q, K,
and the metastable clusters of the paper's Figure 2 setting (n = 200 on the circle,
beta = 64, Q = K = V = I) against the Renyi centres and the strong Renyi centres of the start
(our reading of their definitions, docs/model.md §18.1)."""
import math

import numpy as np
import pandas as pd

from nadyn import clusters, stats

TITLE = "Clustering under the causal mask: one cluster, and the Renyi centres of the plateaus"
# The quick form (nadyn table causal --quick): two seeds, n = 16, d = 2, beta = 1 and 4, a
# horizon of 100 for the convergence; four seeds of n = 40 tokens to T = 30 for the parking
# picture. Seconds; it says nothing statistical.
QUICK = ["convergence:sweep.seed.range=[1,2]", "convergence:sweep.n=[16]",
         "convergence:sweep.d=[2]", "convergence:sweep.beta=[1,4]", "convergence:run.T=100",
         'convergence:run.frame_times="logspace:-1,2,40"',
         "parking:sweep.seed.range=[1,2]", "parking:run.n=40", "parking:run.T=30",
         'parking:run.frame_times="linspace:0,30,13"']
DELTA_SCALE = 4.0  # the caption's delta = 4 beta^(-1/2)
CLUSTER_EPS = 1e-3  # the runs' cluster_eps (the default): linked when cos >= 1 - eps
CAPTION_TIMES = (75.0, 150.0)  # the caption's frames: the other plateau rules
FACTORS = (0.5, 1.0, 2.0)
FORMATS = {"n": "d", "d": "d", "beta": "g", "runs": "d", "merged": "d"}
PAGE_TABLES = {"causal_parking": "Renyi centres and metastable clusters (n = 200, d = 2, "
                                 "beta = 64, Q = K = V = I)",
               "causal_displacement": "How far the centres move (radians, from t = 0)",
               "causal_sensitivity": "delta, cluster_eps and the plateau rule moved"}
TABLE_FORMATS = {"causal_parking": {"runs": "d"}, "causal_displacement": {"runs": "d"},
                 "causal_sensitivity": {"runs": "d"}}
NOTE = """\
`causal` (this table): post-ln with the causal mask (token k attends to j <= k), V = I,
`weights` identity (Q = K = I) or gaussian (Q, K with entries N(0, 1/d), drawn per seed with
the uniform start), 32 seeds per row, dopri5, 120 frames evenly spaced in log t from 0.1 to
T. `t_one`: the time to one cluster, the first frame of the final stretch at one cluster
(single linkage at cluster_eps = 1e-3), its Kaplan-Meier median with the Brookmeyer-Crowley
95 % interval (`> T`: beyond the horizon); `merged` counts the seeds at one cluster at T (the
others censored at T, counted, never averaged). `gaussian/identity`: the ratio of the two
medians at the same (n, d, beta), given only where both are below T. The mask makes tokens
1..16 a closed system and a seed draws the same first 16 tokens (and the same Q, K) at n = 16
and 64, so the n = 16 runs are the first 16 tokens of the n = 64 runs: the two rows are not
independent samples.

The parking tables (below): n = 200 tokens uniform on the circle, beta = 64,
Q = K = V = I, 32 seeds, frames every 2.5 to T = 300. `strong` and `renyi`: the strong Renyi
centres and the Renyi centres of the start at delta = 4 beta^(-1/2) = 0.5 rad (geodesic angle;
our reading of the definitions, docs/model.md §18.1); `clusters`: the count on the longest
plateau of the cluster count (docs/model.md §5.3, at least 5 % of T); `renyi_plateau`: the Renyi
centres of the positions at the plateau's last frame; `S <= C`, `C <= R`: the seeds where the
relation holds (Wilson 95 % interval). Means with their standard error and 95 % t interval.
"""


# --- The centres (docs/model.md §18.1) -------------------------------------------------------

def angles(theta):
    """The geodesic angles arccos <theta_k, theta_j> between the rows of ``theta`` (n x d)."""
    theta = np.asarray(theta, float)
    return np.arccos(np.clip(theta @ theta.T, -1.0, 1.0))


def strong_renyi_centres(theta, delta):
    """The indices k (in causal order) whose token is at angle >= delta from every earlier
    token j < k: the tokens that attend mostly to themselves. Token 0 always is one."""
    a = angles(theta)
    return [k for k in range(a.shape[0]) if np.all(a[k, :k] >= delta)]


def renyi_centres(theta, delta):
    """Sequential parking in causal order: token k is accepted when it is at angle >= delta
    from every token accepted before it. The strong centres are among them."""
    a = angles(theta)
    accepted = []
    for k in range(a.shape[0]):
        if all(a[k, j] >= delta for j in accepted):
            accepted.append(k)
    return accepted


def circle_labels(theta, eps):
    """Single linkage on the circle at cluster_eps (tokens k, l linked when <theta_k, theta_l>
    >= 1 - eps): the components are the arcs between the gaps of the sorted angles wider than
    arccos(1 - eps). Returns a label per token (0..count-1)."""
    theta = np.asarray(theta, float)
    phi = np.mod(np.arctan2(theta[:, 1], theta[:, 0]), 2.0 * math.pi)
    order = np.argsort(phi, kind="stable")
    sorted_phi = phi[order]
    gaps = np.diff(np.concatenate([sorted_phi, [sorted_phi[0] + 2.0 * math.pi]]))
    wide = np.cos(gaps) < 1.0 - eps  # the gap after position i separates i from i + 1
    labels = np.empty(len(phi), dtype=int)
    if not wide.any():
        labels[:] = 0
        return labels
    # Start the walk just after a wide gap, so that each arc gets one label.
    first = (int(np.flatnonzero(wide)[0]) + 1) % len(phi)
    label = 0
    for step in range(len(phi)):
        i = (first + step) % len(phi)
        labels[order[i]] = label
        if wide[i]:
            label += 1
    return labels


def circle_count(theta, eps):
    return int(circle_labels(theta, eps).max()) + 1


# --- Convergence to one cluster --------------------------------------------------------------

def _points(data, axes):
    import itertools

    for values in itertools.product(*(data[a].values for a in axes)):
        yield {a: (v.item() if hasattr(v, "item") else v) for a, v in zip(axes, values)}


# The time to one cluster (the first frame of the final stretch at one), censored at the last
# frame when the run does not end at one cluster: nadyn.clusters' rule, shared with lifetimes.
time_to_one = clusters.final_stretch_at_one


def convergence_runs(data):
    times = data.time.values
    axes = [a for a in data.clusters.dims if a != "time"]
    rows = []
    for point in _points(data, axes):
        counts = data.clusters.sel(point).values
        t_one, merged = time_to_one(times, counts)
        horizon = float(times[np.isfinite(times) & np.isfinite(counts)][-1])
        rows.append({**point, "t_one": t_one, "merged": merged, "horizon": horizon})
    runs = pd.DataFrame(rows)
    if "n" not in runs:
        runs["n"] = int(data.n.values.flat[0])
    if "d" not in runs:
        runs["d"] = int(data.d.values.flat[0])
    if "weights" not in runs:
        runs["weights"] = str(data.weights.values.flat[0])
    return runs


def convergence_table(runs):
    rows = []
    medians = {}
    for (weights, n, d, beta), group in runs.groupby(["weights", "n", "d", "beta"], sort=True):
        median = stats.km_median(group["t_one"], group["merged"])
        medians[(weights, n, d, beta)] = median
        rows.append({"weights": weights, "n": int(n), "d": int(d), "beta": float(beta),
                     "runs": len(group), "merged": int(group["merged"].sum()),
                     "T": float(group["horizon"].max()),
                     "t_one": stats.median_text(median, 4)})
    table = pd.DataFrame(rows)

    def ratio(row):
        g = medians.get(("gaussian", row["n"], row["d"], row["beta"]))
        i = medians.get(("identity", row["n"], row["d"], row["beta"]))
        if g is None or i is None or not (math.isfinite(g.median) and math.isfinite(i.median)):
            return "-"
        return f"{g.median / i.median:.3g}"

    table["gaussian/identity"] = [ratio(r) if r["weights"] == "gaussian" else ""
                                  for _, r in table.iterrows()]
    return table


# --- The parking picture ---------------------------------------------------------------------

def longest_plateau(times, counts):
    """(start index, end index, count) of the longest plateau (docs/model.md §5.3, at least 5 %
    of T; the earliest of equal ones), by nadyn.plateaus; None when there is none."""
    from nadyn.plateaus import plateaus

    table = plateaus(times, counts, "5%")
    if table.sizes.get("plateau", 0) == 0:
        return None
    length = table["length"].values
    i = int(np.argmax(length))
    start = int(np.searchsorted(times, table["start"].values[i]))
    end = int(np.searchsorted(times, table["end"].values[i]))
    return start, min(end, len(times) - 1), int(table["clusters"].values[i])


def parking_run(theta_series, times, beta, delta_factor=1.0, eps=CLUSTER_EPS, rule="longest"):
    """One run's centres and clusters: ``theta_series`` (frames x n x 2). ``rule``: the
    plateau (``longest``) or a caption time (a float: the frame nearest it)."""
    delta = delta_factor * DELTA_SCALE / math.sqrt(beta)
    theta0 = theta_series[0]
    strong = strong_renyi_centres(theta0, delta)
    renyi = renyi_centres(theta0, delta)
    counts = np.array([circle_count(x, eps) for x in theta_series], float)
    if rule == "longest":
        found = longest_plateau(times, counts)
        if found is None:
            return None
        start, end, clusters = found
    else:
        end = start = int(np.argmin(np.abs(times - float(rule))))
        clusters = int(counts[end])
    last = theta_series[end]
    labels = circle_labels(last, eps)
    strong_clusters = len(set(labels[strong]))
    renyi_clusters = len(set(labels[renyi]))
    moved = np.arccos(np.clip(np.sum(theta0 * last, axis=1), -1.0, 1.0))
    others = np.setdiff1d(np.arange(len(theta0)), renyi)
    renyi_only = np.setdiff1d(renyi, strong)
    return {"strong": len(strong), "renyi": len(renyi), "clusters": clusters,
            "plateau_start": float(times[start]), "plateau_end": float(times[end]),
            "renyi_plateau": len(renyi_centres(last, delta)),
            "strong_plateau": len(strong_renyi_centres(last, delta)),
            # clusters holding a strong (a Renyi) centre of the start, and whether two share one
            "with_strong": strong_clusters, "with_renyi": renyi_clusters,
            "strong_apart": strong_clusters == len(strong),
            "moved_strong_max": float(moved[strong].max()),
            "moved_strong_median": float(np.median(moved[strong])),
            "moved_renyi_median": (float(np.median(moved[renyi_only])) if renyi_only.size
                                   else math.nan),
            "moved_other_median": float(np.median(moved[others])),
            "moved_plateau_strong_max": float(np.arccos(np.clip(
                np.sum(theta_series[start][strong] * last[strong], axis=1), -1, 1)).max())}


def parking_runs(data, **settings):
    times = data.time.values
    beta = float(data.beta.values.flat[0])
    rows = []
    for seed in data.seed.values:
        series = data.positions.sel(seed=seed).values
        frames = int(data.frames.sel(seed=seed).values)
        row = parking_run(series[:frames], times[:frames], beta, **settings)
        if row is not None:
            rows.append({"seed": int(seed), **row})
    return pd.DataFrame(rows)


def _fraction(k, m):
    low, high = stats.proportion_interval(k, m)
    return f"{k} of {m} [{low:.2f}, {high:.2f}]"


def parking_table(runs):
    m = len(runs)
    s, c, r = runs["strong"], runs["clusters"], runs["renyi"]
    row = {"runs": m}
    for name in ("strong", "clusters", "renyi", "renyi_plateau", "with_strong", "with_renyi"):
        row[name] = stats.interval_text(stats.mean_interval(runs[name]), 3)
    row["S <= C"] = _fraction(int((s <= c).sum()), m)
    row["C <= R"] = _fraction(int((c <= r).sum()), m)
    row["S <= C <= R"] = _fraction(int(((s <= c) & (c <= r)).sum()), m)
    row["C = R(plateau)"] = _fraction(int((c == runs["renyi_plateau"]).sum()), m)
    row["strong apart"] = _fraction(int(runs["strong_apart"].sum()), m)
    row["plateau"] = stats.interval_text(stats.mean_interval(
        runs["plateau_end"] - runs["plateau_start"]), 3)
    return pd.DataFrame([row])


def displacement_table(runs):
    """The per-seed medians (and the strong centres' largest) of the angle each token moved
    from t = 0 to the plateau's last frame, mean over the seeds."""
    rows = []
    for name, column in (("strong centres, largest", "moved_strong_max"),
                         ("strong centres, median", "moved_strong_median"),
                         ("strong centres over the plateau, largest", "moved_plateau_strong_max"),
                         ("Renyi centres not strong, median", "moved_renyi_median"),
                         ("other tokens, median", "moved_other_median")):
        values = runs[column].to_numpy(float)
        rows.append({"tokens": name, "runs": int(np.isfinite(values).sum()),
                     "mean over seeds": stats.interval_text(stats.mean_interval(values), 3),
                     "largest": (float(np.nanmax(values)) if np.isfinite(values).any()
                                 else math.nan)})
    return pd.DataFrame(rows)


def relation(runs):
    s, c, r = runs["strong"], runs["clusters"], runs["renyi"]
    return f"{int(((s <= c) & (c <= r)).sum())} of {len(runs)}"


def _columns(all_runs):
    """Per set of runs: the mean counts and each side of the relation alone."""
    out = {"runs": [], "S <= C": [], "C <= R": [], "strong": [], "clusters": [], "renyi": []}
    for runs in all_runs:
        s, c, r = runs["strong"], runs["clusters"], runs["renyi"]
        out["runs"].append(len(runs))
        out["S <= C"].append(f"{int((s <= c).sum())} of {len(runs)}")
        out["C <= R"].append(f"{int((c <= r).sum())} of {len(runs)}")
        for column in ("strong", "clusters", "renyi"):
            out[column].append(stats.interval_text(stats.mean_interval(runs[column]), 3))
    return out


def sensitivity_table(data):
    """The relation S <= C <= R over the seeds with delta, cluster_eps and the plateau rule
    each moved alone (nadyn.stats.sensitivity for the two thresholds)."""
    parts = []
    for name, key, base in (("delta", "delta_factor", 1.0), ("cluster_eps", "eps", CLUSTER_EPS)):
        cache = {}

        def runs_at(value, key=key, cache=cache):
            if value not in cache:
                cache[value] = parking_runs(data, **{key: value})
            return cache[value]

        table = stats.sensitivity(lambda v, runs_at=runs_at: relation(runs_at(v)), base, FACTORS)
        table.insert(0, "moved", name)
        if name == "delta":
            beta = float(data.beta.values.flat[0])
            table["threshold"] = table["threshold"] * DELTA_SCALE / math.sqrt(beta)
        for column, text in _columns(runs_at(f) for f in table["factor"] * base).items():
            table[column] = text
        parts.append(table)
    rules = {"longest": parking_runs(data)}
    for t in CAPTION_TIMES:
        if t <= float(np.nanmax(data.time.values)):
            rules[t] = parking_runs(data, rule=t)
    base = relation(rules["longest"])
    rows = pd.DataFrame([{"moved": "plateau rule", "factor": math.nan,
                          "threshold": ("longest plateau" if rule == "longest"
                                        else f"t = {rule:g}"),
                          "verdict": relation(runs), "same": relation(runs) == base}
                         for rule, runs in rules.items()])
    for column, text in _columns(rules.values()).items():
        rows[column] = text
    parts.append(rows)
    out = pd.concat(parts, ignore_index=True)
    out["threshold"] = [f"{v:.4g}" if isinstance(v, float) else v for v in out["threshold"]]
    out["same"] = out["same"].map({True: "yes", False: "no"})
    return out.rename(columns={"verdict": "S <= C <= R"})


def reduce(data):
    runs = convergence_runs(data["convergence"])
    parking = parking_runs(data["parking"])
    return {"causal": convergence_table(runs),
            "causal_parking": parking_table(parking),
            "causal_displacement": displacement_table(parking),
            "causal_sensitivity": sensitivity_table(data["parking"]),
            "causal_runs": runs,
            "causal_parking_runs": parking}


def figure(table, data, path):
    import matplotlib.pyplot as plt

    parking = data["parking"]
    times = parking.time.values
    beta = float(parking.beta.values.flat[0])
    delta = DELTA_SCALE / math.sqrt(beta)
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    # (a) one seed: every token's angle against t, the start's centres drawn over the others.
    ax = axes[0]
    seed = parking.seed.values[0]
    series = parking.positions.sel(seed=seed).values
    phi = np.arctan2(series[:, :, 1], series[:, :, 0])
    strong = strong_renyi_centres(series[0], delta)
    renyi = [k for k in renyi_centres(series[0], delta) if k not in strong]
    for k in range(phi.shape[1]):
        ax.plot(times, phi[:, k], color="0.8", lw=0.5, zorder=1)
    for k in renyi:
        ax.plot(times, phi[:, k], color="black", lw=1.2, zorder=2)
    for k in strong:
        ax.plot(times, phi[:, k], color="red", lw=1.6, zorder=3)
    ax.set_xlabel("t")
    ax.set_ylabel("angle of each token (rad)")
    ax.set_title(f"seed {int(seed)}: the start's strong Renyi centres (red), other Renyi "
                 "centres (black)", fontsize=9)
    # (b) the counts against t over the seeds: clusters, and the centres of each frame.
    ax = axes[1]
    step = max(1, len(times) // 60)
    frames = np.arange(0, len(times), step)
    counts = {"clusters": [], "Renyi centres": [], "strong Renyi centres": []}
    for s in parking.seed.values:
        series = parking.positions.sel(seed=s).values
        counts["clusters"].append([circle_count(series[i], CLUSTER_EPS) for i in frames])
        counts["Renyi centres"].append([len(renyi_centres(series[i], delta)) for i in frames])
        counts["strong Renyi centres"].append(
            [len(strong_renyi_centres(series[i], delta)) for i in frames])
    for (name, values), colour in zip(counts.items(), ("tab:blue", "black", "red")):
        low, mid, high = np.percentile(np.asarray(values, float), [25, 50, 75], axis=0)
        ax.plot(times[frames], mid, color=colour, label=name)
        ax.fill_between(times[frames], low, high, color=colour, alpha=0.15, lw=0)
    ax.set_ylim(0, 30)
    ax.set_xlabel("t")
    ax.set_ylabel("count (median, quartiles over the seeds)")
    ax.set_title(f"n = {parking.positions.sizes['token']}, d = 2, beta = {beta:g}, "
                 f"delta = {delta:.3g}: each frame's centres", fontsize=9)
    ax.legend(fontsize=8)
    # (c) the time to one cluster: Kaplan-Meier medians against beta.
    ax = axes[2]
    runs = convergence_runs(data["convergence"])
    for (weights, n, d), group in runs.groupby(["weights", "n", "d"], sort=True):
        betas, medians, lows, highs = [], [], [], []
        for b, g in group.groupby("beta", sort=True):
            m = stats.km_median(g["t_one"], g["merged"])
            if math.isfinite(m.median):
                betas.append(b)
                medians.append(m.median)
                lows.append(m.low)
                highs.append(m.high if math.isfinite(m.high) else g["horizon"].max())
        if not betas:
            continue
        line, = ax.semilogy(betas, medians, ("o-" if weights == "identity" else "s--"), ms=4,
                            label=f"{weights}, n = {n}, d = {d}")
        ax.vlines(betas, lows, highs, color=line.get_color(), lw=1)
    ax.set_xlabel("beta")
    ax.set_ylabel("time to one cluster: Kaplan-Meier median, 95 %")
    ax.set_title("V = I: Q = K = I (circles) and Gaussian Q, K (squares)", fontsize=9)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
