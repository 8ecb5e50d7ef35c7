"""The periodicity of the first metastable state against the fastest mode k_max(beta)."""
import numpy as np
import pandas as pd

import nadyn
import nadyn.closed_forms as closed

TITLE = "Periodicity of the first metastable state: dominant mode and clusters against k_max(beta)"
# The quick form: small n, short horizon, three betas on the circle.
QUICK = ["run.n=512", "run.T=12", "sweep.seed.range=[1,2]", "sweep.d=[2]", "sweep.beta=[1,5,20]"]
# The linear phase ends when the largest mode reaches this value (an amplitude of ~0.2,
# before the nonlinear terms have filled in the harmonics 2k, 3k, ... of the winner).
DOMINANT_LEVEL = 0.05
# A plateau: a maximal run of frames with the same cluster count lasting at least this long,
# after the linear phase has ended (the count of a dense uniform start can sit still too).
PLATEAU_LENGTH = 3.0
FORMATS = {"d": "d", "k_max": "d", "seeds": "d"}
NOTE = f"""\
Per run: the dominant mode is argmax_k m_k at the first frame where max_k m_k >=
{DOMINANT_LEVEL:g} (the end of the linear phase); the plateau count is the cluster count
(single linkage at cluster_eps = 1e-3) on the first plateau (at least {PLATEAU_LENGTH:g} time
units of constant count) that starts after that frame. `mode` and `clusters` list the
seeds' values; `mode_agree` / `clusters_agree`: the fraction of seeds equal to k_max,
`mode_within_1` the fraction within one of it. On S^2
the number of clusters of a degree-k state is not k, so only the mode is compared there.
"""


def first_long_plateau(times, counts, start, length=PLATEAU_LENGTH):
    """(start, end, count) of the first plateau (nadyn.plateaus, docs/model.md §5.3: a maximal
    run of equal counts lasting at least `length`, its end the first frame at another count)
    of the series from frame `start` on; None if there is none."""
    table = nadyn.plateaus(times[start:], counts[start:], plateau_min=float(length))
    if table.sizes["plateau"] == 0:
        return None
    return float(table.start[0]), float(table.end[0]), int(table.clusters[0])


def measure(modes, clusters, times):
    """(dominant mode, plateau count, t of the linear phase's end) of one run."""
    ok = np.isfinite(clusters)
    times, modes, clusters = times[ok], modes[ok], clusters[ok]
    peak = modes.max(axis=1)
    above = np.flatnonzero(peak >= DOMINANT_LEVEL)
    if above.size == 0:
        return np.nan, np.nan, np.nan
    frame = above[0]
    dominant = int(np.argmax(modes[frame])) + 1
    plateau = first_long_plateau(times, clusters, frame)
    return dominant, (plateau[2] if plateau else np.nan), float(times[frame])


def reduce(data):
    if not (data.status == 1).all():
        raise ValueError("the sweep has runs that did not complete")
    rows = []
    for d in data.d.values:
        for beta in data.beta.values:
            k_max = closed.fastest_mode(float(beta), int(d))
            found = []
            for seed in data.seed.values:
                point = {"d": d, "beta": beta, "seed": seed}
                modes = data.modes.sel(point).transpose("time", "mode").values
                clusters = data.clusters.sel(point).values
                found.append(measure(modes, clusters, data.time.values))
            dominant = np.array([f[0] for f in found], float)
            counts = np.array([f[1] for f in found], float)
            rows.append({
                "d": int(d), "beta": float(beta), "k_max": k_max,
                "mode": " ".join("-" if np.isnan(v) else str(int(v)) for v in dominant),
                "mode_agree": float(np.mean(dominant == k_max)),
                "mode_within_1": float(np.mean(np.abs(dominant - k_max) <= 1)),
                "clusters": " ".join("-" if np.isnan(v) else str(int(v)) for v in counts),
                "clusters_agree": float(np.mean(counts == k_max)) if int(d) == 2 else np.nan,
                "t_linear": float(np.nanmean([f[2] for f in found])),
                "seeds": len(found),
            })
    return pd.DataFrame(rows)


def figure(table, data, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(data.d.values), figsize=(5.5 * len(data.d.values), 4),
                             squeeze=False)
    for ax, d in zip(axes[0], data.d.values):
        rows = table[table.d == int(d)]
        betas = np.linspace(0.5, max(rows.beta.max(), 1.0), 400)
        ax.step(betas, [closed.fastest_mode(b, int(d)) for b in betas], where="post", color="k",
                label="k_max(beta), predicted")
        for offset, column, marker, label in ((-0.08, "mode", "o", "dominant mode"),
                                              (0.08, "clusters", "s", "clusters on the plateau")):
            if column == "clusters" and int(d) != 2:
                continue
            xs, ys = [], []
            for _, row in rows.iterrows():
                for v in row[column].split():
                    if v != "-":
                        xs.append(row["beta"] * (1 + offset))
                        ys.append(int(v))
            ax.plot(xs, ys, marker, alpha=0.6, label=label)
        ax.set_xscale("log")
        ax.set_xlabel("beta")
        ax.set_ylabel("k")
        ax.set_title(f"d = {int(d)}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
