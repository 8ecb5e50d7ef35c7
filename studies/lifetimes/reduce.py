"""Metastable lifetimes from generic starts: the time of every merger and of the last one from
a uniform start, n = 32, 128, 512 tokens on the circle and on S^2, against beta; the rate of
log(lifetime) in beta with its interval and a test of linearity, and the staircase of the
cluster count against log t (docs/model.md §15.1)."""
import math

import numpy as np
import pandas as pd

from nadyn import clusters, stats

TITLE = "Metastable lifetimes from uniform starts: the last merger against beta"
# The quick form (nadyn table lifetimes --quick): two seeds, beta = 2 and 3, a horizon of 100
# (frames within it), in seconds; it says nothing statistical.
QUICK = ["sweep.seed.range=[1,2]", "sweep.beta=[2,3]", "run.T=100",
         'run.frame_times="logspace:-1,2,40"']
CLUSTER_EPS = 1e-3  # the runs' cluster_eps (the default) in the n = 32, 128, 512 experiments
BOOTSTRAP = 2000  # resamples of the seeds behind each fit
BOOTSTRAP_SEED = 20241009  # fixed: the table is a function of the sweep files alone
NOTE = """\
Uniform starts, post-ln, identity weights, one head, 32 seeds per (n, d, beta), dopri5,
frames evenly spaced in log t from t = 0.1 to T (200, 180 and 150 frames for n = 32, 128,
512: consecutive frames 7.6, 6.5 and 6.5 per cent apart in t). `t_last` is the time of the
last merger: the first frame of the final stretch at one cluster (single linkage at
cluster_eps = 1e-3), its Kaplan-Meier median over the seeds with the 95 % interval (`> T`:
beyond the horizon); `merged` counts the seeds that reached one cluster by T (the others are
censored at T and counted, never averaged). `last_plateau` is the lifetime of the last
metastable state: how long the count stays at 2 before the last merger (Kaplan-Meier median
over the `two` runs that showed that stretch; censored at T when still at 2).
`plateau/predicted`: the last plateau over the time two point clusters take to merge from the
state at its first frame (docs/model.md §15.1: the masses from the last merger's sizes, the
angle from the mean cosine), mean over the `compared` runs with its standard error and 95 % t
interval; `within_frame` counts those whose prediction lies between the plateau's ends at the
last two frames; `antipodal` counts the runs whose mean cosine puts the pair at 180 degrees,
where the prediction is infinite (left out). `mergers`: the mean number of merge events per
run; `lifetimes_mergers.csv` has the time of each run's last mergers (those that leave at
most 8 clusters), `lifetimes_runs.csv` every run.

The fits (below): per (n, d), the least-squares line through log(median t_last) against beta
over the betas whose median is below T; `rate` its slope, `curvature` the coefficient of
beta^2 of the quadratic through the same medians, each with its 95 % interval from
"""+f"{BOOTSTRAP}"+""" bootstrap resamples of the seeds (within each beta); `linear` says
whether the curvature's interval holds 0; `max_residual` the largest distance of a median from
the line, in log units; `angle_deg` the angle D at which two point clusters' weight
exp(-beta (1 - cos D)) falls at this rate (arccos(1 - rate), docs/model.md §15).
"""
FORMATS = {"n": "d", "d": "d", "beta": "g", "runs": "d", "merged": "d", "two": "d",
           "antipodal": "d", "compared": "d", "within_frame": "d"}
PAGE_TABLES = {"lifetimes_fit": "The rate of log(t_last) in beta",
               "lifetimes_eps": "The threshold cluster_eps halved and doubled (n = 32)"}
TABLE_FORMATS = {"lifetimes_fit": {"n": "d", "d": "d", "runs": "d"},
                 "lifetimes_eps": {"d": "d", "runs": "d"}}
LABELS = ("n32", "n128", "n512")


def finite_frames(times, counts):
    """The frames a run has (a sweep pads a shorter run's series with NaN)."""
    times, counts = np.asarray(times, float), np.asarray(counts, float)
    kept = np.isfinite(times) & np.isfinite(counts)
    return times[kept], counts[kept]


# (t_last, merged): the first frame of the final stretch at one cluster, or the last frame's
# time and False when the run does not end at one (censored there): nadyn.clusters' rule,
# shared with causal.
last_merger = clusters.final_stretch_at_one


def last_two_stretch(counts):
    """(start, end, ended): the frame indices of the final stretch at two clusters before the
    last merger, from its first frame to the first frame at one (ended True), or to the run's
    last frame when the run ends at two (censored there, ended False); None when the run never
    showed that stretch (the count fell from 3 or more to 1 between two frames, or never to
    2). ``counts`` holds the finite frames only."""
    c = np.asarray(counts, float)
    if c.size == 0 or c[-1] not in (1, 2):
        return None
    if c[-1] == 2:
        end = start = len(c) - 1
    else:
        above = np.flatnonzero(c != 1)
        if not above.size or c[above[-1]] != 2:
            return None
        end, start = above[-1] + 1, above[-1]
    while start > 0 and c[start - 1] == 2:
        start -= 1
    return int(start), int(end), bool(c[-1] == 1)


def last_plateau(times, counts):
    """(length, ended, reached): the length of :func:`last_two_stretch` (a lower bound when
    not ended), and whether the run showed it."""
    t, c = finite_frames(times, counts)
    stretch = last_two_stretch(c)
    if stretch is None:
        return math.nan, False, False
    start, end, ended = stretch
    return float(t[end] - t[start]), ended, True


def pair_angle(mean_cos, n, w):
    """The angle D between two point clusters holding fractions w and 1 - w of n tokens whose
    mean cosine over the pairs k != l is mean_cos: |(1/n) sum theta|^2 = ((n - 1) mean_cos +
    1) / n = w^2 + (1 - w)^2 + 2 w (1 - w) cos D (docs/model.md §15.1)."""
    square = ((n - 1) * mean_cos + 1.0) / n
    cos = (square - w * w - (1.0 - w) ** 2) / (2.0 * w * (1.0 - w))
    return math.acos(min(1.0, max(-1.0, cos)))


def pair_merge_time(beta, angle, w, eps=CLUSTER_EPS):
    """The time two point clusters of fractions w and 1 - w at angle ``angle`` take to come
    within arccos(1 - eps) under post-ln (docs/model.md §15.1): with E = exp(beta (1 - cos D)),
    dD/dt = -sin D (w_b / (w_a E + w_b) + w_a / (w_b E + w_a)); inf at D = pi (the clusters
    then stay antipodal)."""
    from scipy.integrate import quad

    end = math.acos(1.0 - eps)
    if angle <= end:
        return 0.0
    if angle >= math.pi - 1e-12:
        return math.inf
    a, b = w, 1.0 - w

    def rate(x):
        e = math.exp(beta * (1.0 - math.cos(x)))
        return math.sin(x) * (b / (a * e + b) + a / (b * e + a))

    value, _ = quad(lambda x: 1.0 / rate(x), end, angle, limit=200)
    return value


def order_median(values):
    """The Kaplan-Meier median of a sample censored only at the horizon (``inf`` for a
    censored run), as nadyn.stats.km_median takes it: below the horizon the product-limit
    survival is the fraction of runs still waiting, so the median is the ceil(m/2)-th smallest
    time, or, when the survival equals 1/2 on a stretch (m even), the stretch's midpoint.
    Vectorised over the rows of a 2-d array (the bootstrap's resamples)."""
    x = np.sort(np.asarray(values, float), axis=-1)
    m = x.shape[-1]
    if m % 2:
        return x[..., m // 2]
    a, b = x[..., m // 2 - 1], x[..., m // 2]
    return np.where(np.isfinite(b) & (b > a), 0.5 * (a + b), a)


def run_rows(data):
    """One row per run of a sweep with axes d, beta, seed (and cluster_eps): the last merger
    (t_last, NaN when censored), the last two-cluster stretch, the merge events' count, and
    the two-point-cluster prediction of that stretch from its first frame (the angle from the
    frame's mean cosine, the masses from the last merger's sizes)."""
    from nadyn.clusters import merge_events
    from nadyn.study import run_parameters

    times = data.time.values
    axes = [a for a in data.clusters.dims if a != "time"]
    rows = []
    for point in _points(data, axes):
        record = run_parameters(data, **point)
        n, beta, eps = int(record["n"]), float(record["beta"]), float(record["cluster_eps"])
        counts = data.clusters.sel(point).values
        t_last, merged = last_merger(times, counts)
        kept = np.isfinite(times) & np.isfinite(counts)
        t, c = times[kept], counts[kept]
        mean_cos = data.mean_cos.sel(point).values[kept]
        stretch = last_two_stretch(c)
        events = merge_events(data, **point)
        row = {"n": n, **{a: point[a] for a in axes}, "merged": merged,
               "t_last": t_last if merged else math.nan, "horizon": float(t[-1]),
               "two": stretch is not None, "last_plateau": math.nan, "plateau_low": math.nan,
               "plateau_ended": False,
               "w": math.nan, "angle_deg": math.nan, "antipodal": False, "predicted": math.nan,
               "mergers": int(events["time"].size),
               "first_merger": float(events["time"][0]) if events["time"].size else math.nan}
        if stretch is not None:
            start, end, ended = stretch
            row.update({"last_plateau": float(t[end] - t[start]), "plateau_ended": ended})
            # The merger happened in (t[end - 1], t[end]]: the stretch lasted at least this.
            row["plateau_low"] = float(t[end - 1] - t[start]) if ended else math.nan
            if ended and events["time"].size and events["clusters_after"][-1] == 1:
                size, absorbed = events["size"][-1], events["absorbed_size"][-1]
                w = min(size, absorbed) / (size + absorbed)
                angle = pair_angle(float(mean_cos[start]), n, w)
                # A mean cosine at or below that of two antipodal point clusters: the pair is
                # near D = pi, where the time is infinite and the angle cannot be read from
                # the mean cosine (a cluster's own spread lowers it): no prediction.
                antipodal = angle >= math.pi - 1e-9
                row.update({"w": w, "angle_deg": math.degrees(angle), "antipodal": antipodal,
                            "predicted": (math.nan if antipodal
                                          else pair_merge_time(beta, angle, w, eps))})
        rows.append(row)
    runs = pd.DataFrame(rows)
    for axis in ("d", "seed"):
        runs[axis] = runs[axis].astype(int)
    runs["ratio"] = runs["last_plateau"] / runs["predicted"]
    runs["within_frame"] = ((runs["plateau_low"] <= runs["predicted"])
                            & (runs["predicted"] <= runs["last_plateau"]))
    return runs


LAST_MERGERS = 8  # the mergers CSV keeps the events that leave at most this many clusters


def merger_rows(data, runs):
    """The last merge events of every run, those that leave at most LAST_MERGERS clusters
    (the steps of the staircase between metastable states; the earlier ones, the start's
    tokens gathering in the first few time units, are in the sweep files and counted in the
    runs' ``mergers``): each event's time, the cluster count after it, and the sizes of the
    cluster that absorbed and of the one absorbed."""
    from nadyn.clusters import merge_events

    axes = [a for a in data.clusters.dims if a != "time"]
    n = int(runs["n"].iloc[0])  # one n per experiment
    rows = []
    for point in _points(data, axes):
        events = merge_events(data, **point)
        for i in range(events["time"].size):
            if events["clusters_after"][i] > LAST_MERGERS:
                continue
            rows.append({"n": n, **point, "event": i, "time": float(events["time"][i]),
                         "clusters_after": int(events["clusters_after"][i]),
                         "size": int(events["size"][i]),
                         "absorbed_size": int(events["absorbed_size"][i])})
    return pd.DataFrame(rows, columns=["n", *axes, "event", "time", "clusters_after", "size",
                                       "absorbed_size"])


def _points(data, axes):
    import itertools

    for values in itertools.product(*(data[a].values for a in axes)):
        yield {a: (v.item() if hasattr(v, "item") else v) for a, v in zip(axes, values)}


def _censored_times(group):
    """The runs' last-merger times with the censored ones at their horizon, and reached."""
    merged = group["merged"].to_numpy(bool)
    return np.where(merged, group["t_last"], group["horizon"]), merged


def point_table(runs, keys=("n", "d", "beta")):
    """Per point: the seeds, how many merged, the Kaplan-Meier median of t_last and of the
    last plateau with their intervals, and the mean number of mergers."""
    rows = []
    for values, group in runs.groupby(list(keys), sort=True):
        times, merged = _censored_times(group)
        median = stats.km_median(times, merged)
        two = group[group["two"]]
        plateau = (stats.median_text(stats.km_median(two["last_plateau"], two["plateau_ended"]), 4)
                   if len(two) else "-")
        rows.append({**dict(zip(keys, values)), "runs": len(group), "merged": int(merged.sum()),
                     "T": float(group["horizon"].max()),
                     "t_last": stats.median_text(median, 4),
                     "two": len(two), "last_plateau": plateau,
                     "antipodal": int(group["antipodal"].sum()),
                     "compared": int(np.isfinite(group["ratio"]).sum()),
                     "within_frame": int(group["within_frame"].sum()),
                     "plateau/predicted": stats.interval_text(
                         stats.mean_interval(group["ratio"]), 3),
                     "mergers": stats.interval_text(stats.mean_interval(group["mergers"]), 3)})
    return pd.DataFrame(rows)


def _fit_points(groups):
    """The betas and the log of the median t_last of each group (None where the median is
    beyond the horizon)."""
    betas, logs = [], []
    for beta, times in groups:
        median = float(order_median(times))
        if math.isfinite(median):
            betas.append(beta)
            logs.append(math.log(median))
    return np.asarray(betas, float), np.asarray(logs, float)


def fit(groups, resamples=BOOTSTRAP, seed=BOOTSTRAP_SEED, level=stats.LEVEL):
    """The rate of log(median t_last) in beta: ``groups`` is a list of (beta, times) with the
    censored times inf. The line and the quadratic through the medians of the betas whose
    median is finite, and their percentile intervals from ``resamples`` bootstrap resamples of
    the seeds within each beta (a resample whose median at one of these betas is censored is
    counted in ``failed`` and left out). A dict; NaN entries when fewer than 2 (the line) or 3
    (the quadratic) betas have a finite median."""
    betas, logs = _fit_points(groups)
    kept = [(b, np.asarray(t, float)) for b, t in groups if b in set(betas.tolist())]
    out = {"betas": " ".join(f"{b:g}" for b in betas), "rate": math.nan, "rate_low": math.nan,
           "rate_high": math.nan, "curvature": math.nan, "curvature_low": math.nan,
           "curvature_high": math.nan, "max_residual": math.nan, "failed": 0}
    if len(betas) < 2:
        return out
    line = np.polyfit(betas, logs, 1)
    out["rate"] = float(line[0])
    out["max_residual"] = float(np.max(np.abs(logs - np.polyval(line, betas))))
    rng = np.random.default_rng(seed)
    medians = np.column_stack([
        order_median(t[rng.integers(0, t.size, size=(resamples, t.size))]) for _, t in kept])
    good = np.all(np.isfinite(medians), axis=1)
    out["failed"] = int((~good).sum())
    samples = np.log(medians[good])
    tail = 100.0 * (1.0 - level) / 2.0
    rates = np.polyfit(betas, samples.T, 1)[0]
    out["rate_low"], out["rate_high"] = (float(v) for v in np.percentile(rates, [tail, 100 - tail]))
    if len(betas) >= 3:
        out["curvature"] = float(np.polyfit(betas, logs, 2)[0])
        curvatures = np.polyfit(betas, samples.T, 2)[0]
        out["curvature_low"], out["curvature_high"] = (
            float(v) for v in np.percentile(curvatures, [tail, 100 - tail]))
    return out


def _groups(group):
    return [(float(beta), np.where(g["merged"], g["t_last"], np.inf))
            for beta, g in group.groupby("beta", sort=True)]


def linear_verdict(result):
    """'yes' (the curvature's interval holds 0), 'no', or why there is no verdict."""
    if not math.isfinite(result["curvature_low"]):
        return "no test (fewer than 3 betas below T)"
    return "yes" if result["curvature_low"] <= 0.0 <= result["curvature_high"] else "no"


def fit_table(runs, keys=("n", "d")):
    rows = []
    for values, group in runs.groupby(list(keys), sort=True):
        result = fit(_groups(group))
        rate = result["rate"]
        rows.append({**dict(zip(keys, values)), "runs": len(group), "betas": result["betas"],
                     "rate": _interval(rate, result["rate_low"], result["rate_high"]),
                     "curvature": _interval(result["curvature"], result["curvature_low"],
                                            result["curvature_high"],
                                            missing="no fit (fewer than 3 betas below T)"),
                     "linear": linear_verdict(result),
                     "max_residual": result["max_residual"],
                     "angle_deg": (math.degrees(math.acos(1.0 - rate))
                                   if math.isfinite(rate) and 0.0 <= rate <= 2.0 else math.nan),
                     "bootstrap_failed": result["failed"]})
    return pd.DataFrame(rows)


def _interval(value, low, high, digits=3, missing="no fit (fewer betas below T)"):
    if not math.isfinite(value):
        return missing
    if not math.isfinite(low):
        return f"{value:.{digits}g}"
    return f"{value:.{digits}g} [{low:.{digits}g}, {high:.{digits}g}]"


def eps_table(runs):
    """The verdict with cluster_eps halved and doubled (nadyn.stats.sensitivity), per d:
    whether the rate's interval lies above 0 and whether log(t_last) is linear in beta; the
    rate itself beside it."""
    rows = []
    for d, group in runs.groupby("d", sort=True):
        def result(eps, group=group):
            return fit(_groups(group[np.isclose(group["cluster_eps"], eps)]))

        def verdict(eps):
            found = result(eps)
            grows = ("no fit" if not math.isfinite(found["rate_low"])
                     else "yes" if found["rate_low"] > 0 else "no")
            return f"grows: {grows}; linear: {linear_verdict(found)}"

        base = float(np.median(group["cluster_eps"].unique()))
        table = stats.sensitivity(verdict, base)
        table.insert(0, "d", int(d))
        table.insert(1, "runs", [int(np.isclose(group["cluster_eps"], e).sum())
                                 for e in table["threshold"]])
        table["rate"] = [_interval(r["rate"], r["rate_low"], r["rate_high"])
                         for r in map(result, table["threshold"])]
        table["betas"] = [result(e)["betas"] for e in table["threshold"]]
        rows.append(table)
    out = pd.concat(rows, ignore_index=True)
    out["same"] = out["same"].map({True: "yes", False: "no"})
    return out


def reduce(data):
    parts = {label: run_rows(data[label]) for label in LABELS}
    runs = pd.concat(parts.values(), ignore_index=True)
    mergers = pd.concat([merger_rows(data[label], parts[label]) for label in LABELS],
                        ignore_index=True)
    eps = run_rows(data["eps"])
    return {"lifetimes": point_table(runs),
            "lifetimes_fit": fit_table(runs),
            "lifetimes_eps": eps_table(eps),
            "lifetimes_runs": runs,
            "lifetimes_mergers": mergers}


def staircase(data):
    """Per (d, beta): the frames' times and the 25, 50 and 75 per cent quantiles of the
    cluster count over the seeds."""
    times = data.time.values
    out = {}
    for d in data.d.values:
        for beta in data.beta.values:
            counts = data.clusters.sel(d=d, beta=beta).transpose("seed", "time").values
            ok = np.isfinite(times) & (times > 0) & np.all(np.isfinite(counts), axis=0)
            out[(int(d), float(beta))] = (times[ok], *np.percentile(counts[:, ok], [25, 50, 75],
                                                                    axis=0))
    return out


def figure(table, data, path):
    import matplotlib.pyplot as plt

    runs = pd.concat([run_rows(data[label]) for label in LABELS], ignore_index=True)
    fig = plt.figure(figsize=(16, 7))
    grid = fig.add_gridspec(2, 4)
    ax = fig.add_subplot(grid[:, 0])
    for (n, d), group in runs.groupby(["n", "d"], sort=True):
        betas, medians, lows, highs = [], [], [], []
        for beta, g in group.groupby("beta", sort=True):
            times, merged = _censored_times(g)
            m = stats.km_median(times, merged)
            if math.isfinite(m.median):
                betas.append(beta)
                medians.append(m.median)
                lows.append(m.low)
                highs.append(m.high if math.isfinite(m.high) else g["horizon"].max())
        if not betas:
            continue
        medians = np.asarray(medians)
        line, = ax.semilogy(betas, medians, "o-" if d == 2 else "s--", ms=4,
                            label=f"n = {n}, d = {d}")
        ax.vlines(betas, lows, highs, color=line.get_color(), lw=1)
    ax.set_xlabel("beta")
    ax.set_ylabel("t_last: Kaplan-Meier median, 95 % interval")
    ax.set_title("the last merger")
    ax.legend(fontsize=7)
    for column, label in enumerate(LABELS):
        stairs = staircase(data[label])
        for row, d in enumerate((2, 3)):
            ax = fig.add_subplot(grid[row, column + 1])
            for (dd, beta), (t, low, mid, high) in stairs.items():
                if dd != d:
                    continue
                line, = ax.semilogx(t, mid, label=f"beta = {beta:g}")
                ax.fill_between(t, low, high, color=line.get_color(), alpha=0.2, lw=0)
            ax.set_yscale("log")
            ax.set_title(f"n = {label[1:]}, d = {d}", fontsize=9)
            ax.set_xlabel("t")
            ax.set_ylabel("clusters (median, quartiles)")
            ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
