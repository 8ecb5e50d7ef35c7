"""Clustering time against beta: the first time the mean cosine reaches a threshold."""
import numpy as np
import pandas as pd

TITLE = "Clustering time against beta: post-ln and pre-ln"
# The quick form (nadyn table clustering_time --quick): two betas, one seed, in seconds.
QUICK = ["sweep.beta=[0.5,1]", "sweep.seed.range=[1,1]"]
THRESHOLD = 0.99
NOTE = f"""\
`t_cluster` is the first time the mean pairwise cosine `mean_cos` reaches {THRESHOLD}
(linear interpolation between frames), averaged over the seeds that reach it within the
horizon; `reached` counts them. `ratio` is pre-ln's time over post-ln's at the same beta.
"""


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


def reduce(data):
    times = data.time.values
    rows = []
    for beta in data.beta.values:
        row = {"beta": float(beta)}
        for scheme in data.scheme.values:
            series = data.mean_cos.sel(beta=beta, scheme=scheme)
            crossings = np.array([crossing_time(times, s) for s in series.transpose("seed", "time").values])
            reached = np.isfinite(crossings)
            row[f"t_cluster {scheme}"] = crossings[reached].mean() if reached.any() else np.nan
            row[f"reached {scheme}"] = f"{reached.sum()}/{reached.size}"
        row["ratio"] = row["t_cluster pre-ln"] / row["t_cluster post-ln"]
        rows.append(row)
    return pd.DataFrame(rows)


def figure(table, data, path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for scheme in data.scheme.values:
        ax.plot(table["beta"], table[f"t_cluster {scheme}"], "o-", label=scheme)
    ax.set_xlabel("beta")
    ax.set_ylabel(f"time to mean_cos = {THRESHOLD}")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
