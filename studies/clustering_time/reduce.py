"""Clustering time against beta: the first time the mean cosine reaches a threshold."""
import numpy as np
import pandas as pd

from nadyn import stats

TITLE = "Clustering time against beta: post-ln and pre-ln"
# The quick form (nadyn table clustering_time --quick): two betas, one seed, in seconds.
QUICK = ["sweep.beta=[0.5,1]", "sweep.seed.range=[1,1]"]
THRESHOLD = 0.99
# The sensitivity rows: the gap 1 - THRESHOLD halved and doubled.
GAP_FACTORS = (0.5, 1.0, 2.0)
NOTE = f"""\
The clustering time is the first time the mean pairwise cosine `mean_cos` reaches
{THRESHOLD} (linear interpolation between frames). `t_cluster` is its Kaplan-Meier median
over the seeds (`-`: beyond the horizon T), `95% interval` the median's interval
(Brookmeyer-Crowley; `> T`: a bound beyond the horizon): a seed that has not reached
{THRESHOLD} by T is censored there, counted in `reached` (k of n) and never averaged as if it
had. `ratio` is pre-ln's median over
post-ln's at the same beta (`-` when pre-ln's median is beyond T); `slower` says whether
pre-ln's interval lies wholly above post-ln's. The sensitivity table (below) repeats the
verdict with the gap 1 - {THRESHOLD} halved and doubled (thresholds 0.995 and 0.98).
"""
PAGE_TABLES = {"clustering_time_sensitivity": "The threshold halved and doubled"}


def crossing_time(times, values, threshold=THRESHOLD):
    """The first time `values` reaches `threshold`, interpolated; NaN if it never does."""
    above = np.flatnonzero(values >= threshold)
    if above.size == 0:
        return np.nan
    i = above[0]
    if i == 0:
        return float(times[0])
    t0, t1, v0, v1 = times[i - 1], times[i], values[i - 1], values[i]
    return float(t0 + (threshold - v0) * (t1 - t0) / (v1 - v0))


def medians(data, threshold=THRESHOLD):
    """{(beta, scheme): nadyn.stats.Median} of the crossing times over the seeds, each seed
    that never crosses censored at its last frame's time."""
    times = data.time.values
    result = {}
    for beta in data.beta.values:
        for scheme in data.scheme.values:
            series = data.mean_cos.sel(beta=beta, scheme=scheme).transpose("seed", "time").values
            crossings = np.array([crossing_time(times, s, threshold) for s in series])
            last = np.array([times[np.isfinite(s)][-1] for s in series])
            reached = np.isfinite(crossings)
            result[float(beta), str(scheme)] = stats.km_median(
                np.where(reached, crossings, last), reached)
    return result


def _ratio(pre, post):
    return pre.median / post.median if np.isfinite(pre.median) else np.nan


def _interval(m):
    """The median's 95 % interval as text, ``> T`` for a bound beyond the horizon."""
    def show(x):
        return f"> {m.horizon:.4g}" if np.isinf(x) else f"{x:.4g}"
    return f"[{show(m.low)}, {show(m.high)}]"


def reduce(data):
    found = medians(data)
    rows = []
    for beta in data.beta.values:
        beta = float(beta)
        row = {"beta": beta}
        for scheme in data.scheme.values:
            m = found[beta, str(scheme)]
            row[f"t_cluster {scheme}"] = m.median if np.isfinite(m.median) else np.nan
            row[f"95% interval {scheme}"] = _interval(m)
            row[f"reached {scheme}"] = f"{m.events}/{m.runs}"
        pre, post = found[beta, "pre-ln"], found[beta, "post-ln"]
        row["ratio"] = _ratio(pre, post)
        row["slower"] = "yes" if pre.low > post.high else "no"
        rows.append(row)
    sensitivity = []
    for factor in GAP_FACTORS:
        threshold = 1.0 - (1.0 - THRESHOLD) * factor
        moved = medians(data, threshold)
        for beta in data.beta.values:
            pre, post = moved[float(beta), "pre-ln"], moved[float(beta), "post-ln"]
            sensitivity.append({"threshold": threshold, "beta": float(beta),
                                "t_cluster post-ln": stats.median_text(post, 4),
                                "reached post-ln": f"{post.events}/{post.runs}",
                                "t_cluster pre-ln": stats.median_text(pre, 4),
                                "reached pre-ln": f"{pre.events}/{pre.runs}",
                                "ratio": _ratio(pre, post),
                                "slower": "yes" if pre.low > post.high else "no"})
    return {"clustering_time": pd.DataFrame(rows),
            "clustering_time_sensitivity": pd.DataFrame(sensitivity)}


def figure(table, data, path):
    import matplotlib.pyplot as plt

    found = medians(data)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for scheme in data.scheme.values:
        betas = np.array([float(b) for b in data.beta.values])
        m = [found[b, str(scheme)] for b in betas]
        finite = np.array([np.isfinite(x.median) for x in m])
        mid = np.array([x.median for x in m])[finite]
        low = np.array([x.low for x in m])[finite]
        high = np.array([min(x.high, x.horizon) for x in m])[finite]
        ax.errorbar(betas[finite], mid, yerr=[mid - low, high - mid], fmt="o-", capsize=3,
                    label=f"{scheme} (median, 95 %)")
        if (~finite).any():
            ax.plot(betas[~finite], [m[0].horizon] * int((~finite).sum()), "^",
                    label=f"{scheme}: median > T")
    ax.set_xlabel("beta")
    ax.set_ylabel(f"time to mean_cos = {THRESHOLD}")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
