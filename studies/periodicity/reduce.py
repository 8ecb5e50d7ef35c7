"""The periodicity of the first metastable state against the fastest mode k_max(beta)."""
import numpy as np
import pandas as pd

from scipy.optimize import brentq

import nadyn
import nadyn.closed_forms as closed

TITLE = "Periodicity of the first metastable state: dominant mode and clusters against k_max(beta)"
# The quick form: small n, one beta on the circle, two seeds; it applies to both experiments
# alike (run.T stays: the schemes' frame times run to their own horizon).
QUICK = ["run.n=512", "sweep.seed.range=[1,2]", "sweep.d=[2]", "sweep.beta=[5]"]
# The schemes that are post-ln on another clock whatever the configuration: a speed divisor
# common to all tokens and independent of the state (docs/model.md §2.6, §2.7).
PURE_TIME_CHANGES = ("post-ln", "sqrt-scaling")
# The linear phase ends when the largest mode reaches this value (an amplitude of ~0.2,
# before the nonlinear terms have filled in the harmonics 2k, 3k, ... of the winner).
DOMINANT_LEVEL = 0.05
# A plateau: a maximal run of frames with the same cluster count lasting at least this long,
# after the linear phase has ended (the count of a dense uniform start can sit still too).
PLATEAU_LENGTH = 3.0
FORMATS = {"d": "d", "k_max": "d", "seeds": "d", "plateaus": "d"}
# The rows per scheme (point 5 of the claim) on the page as well as in their CSV.
PAGE_TABLES = {"periodicity_schemes": "Per scheme (d = 2, beta = 5; experiments fast.toml and slow.toml)"}
NOTE = f"""\
Per run: the dominant mode is argmax_k m_k at the first frame where max_k m_k >=
{DOMINANT_LEVEL:g} (the end of the linear phase); the plateau count is the cluster count
(single linkage at cluster_eps = 1e-3) on the first plateau (at least {PLATEAU_LENGTH:g} time
units of constant count) that starts after that frame. `mode` and `clusters` list the
seeds' values; `mode_agree` / `clusters_agree`: the fraction of seeds equal to k_max,
`mode_within_1` the fraction within one of it. On S^2
the number of clusters of a degree-k state is not k, so only the mode is compared there.

`periodicity_schemes.csv` (experiments/fast.toml and slow.toml): the same measurement for every scheme
on the circle, the plateau's length taken on the scheme's clock at the uniform state
tau(t) (docs/model.md §13.3), so that "3 time units" means the same for every scheme.
`clusters` lists the seeds' plateau counts ("-": no plateau by the horizon T; `plateaus`
counts the others), `clusters_agree` and `same_as_post_ln` the fractions of those seeds
whose count equals k_max and post-ln's for the same seed (same start), `t_plateau` the mean start of the
plateau in the scheme's own time and `t_predicted` post-ln's start moved to the scheme's
clock (t with tau(t) = post-ln's start, per seed, then averaged); `rel_diff` the mean of
t_plateau / t_predicted - 1 over seeds. `time_change`: the scheme is post-ln on another
clock for every configuration (sqrt-scaling); the others share post-ln's clock only while
the tokens are uniform.
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
    """The table per (d, beta) of experiments/plateaus.toml, and the rows per scheme of
    experiments/fast.toml and slow.toml as the extra file periodicity_schemes.csv."""
    return {"periodicity": plateau_table(data["plateaus"]),
            "periodicity_schemes": scheme_table([data["fast"], data["slow"]])}


def plateau_table(data):
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


def first_plateau_on_clock(modes, clusters, times, clock):
    """(dominant mode, plateau count, plateau start in the run's own time) of one run, the
    plateau at least PLATEAU_LENGTH long on `clock` (the frames' times on post-ln's clock)."""
    ok = np.isfinite(clusters)
    times, clock, modes, clusters = times[ok], clock[ok], modes[ok], clusters[ok]
    above = np.flatnonzero(modes.max(axis=1) >= DOMINANT_LEVEL)
    if above.size == 0:
        return np.nan, np.nan, np.nan
    frame = above[0]
    dominant = int(np.argmax(modes[frame])) + 1
    plateau = first_long_plateau(clock, clusters, frame)
    if plateau is None:
        return dominant, np.nan, np.nan
    return dominant, plateau[2], float(times[np.flatnonzero(clock == plateau[0])[0]])


def clock_inverse(scheme, tau, beta, d, t_switch):
    """t with uniform_clock(scheme, t) = tau: when the scheme reaches post-ln's time tau."""
    if not np.isfinite(tau):
        return np.nan
    clock = lambda t: closed.uniform_clock(scheme, t, beta, d, t_switch=t_switch) - tau
    return brentq(clock, 0.0, 1e12, xtol=1e-9, rtol=1e-12)


def scheme_table(sweeps):
    """Per scheme and beta: each seed's first-plateau count and its start, against post-ln's
    start moved to the scheme's clock (docs/model.md §13.3). `sweeps`: the sweep files of
    the schemes (one holds post-ln), with the same d, beta and seed axes."""
    from nadyn.study import run_parameters

    found = {}
    for data in sweeps:
        if not (data.status == 1).all():
            raise ValueError("the scheme sweeps have runs that did not complete")
        times = data.time.values
        for point in (dict(zip(("scheme", "d", "beta", "seed"), values)) for values in
                      np.array(np.meshgrid(data.scheme.values, data.d.values, data.beta.values,
                                           data.seed.values, indexing="ij"),
                               dtype=object).reshape(4, -1).T):
            scheme, d, beta = str(point["scheme"]), int(point["d"]), float(point["beta"])
            t_switch = float(run_parameters(data, **point)["t_switch"])
            clock = np.array([closed.uniform_clock(scheme, float(t), beta, d, t_switch=t_switch)
                              if np.isfinite(t) else np.nan for t in times])
            modes = data.modes.sel(point).transpose("time", "mode").values
            found[scheme, d, beta, int(point["seed"])] = first_plateau_on_clock(
                modes, data.clusters.sel(point).values, times, clock) + (t_switch,)
    schemes = [str(s) for data in sweeps for s in data.scheme.values]
    seeds = [int(s) for s in sweeps[0].seed.values]
    rows = []
    for d in sweeps[0].d.values:
        for beta in sweeps[0].beta.values:
            d, beta = int(d), float(beta)
            k_max = closed.fastest_mode(beta, d)
            for scheme in schemes:
                runs = [found[scheme, d, beta, s] for s in seeds]
                post = [found["post-ln", d, beta, s] for s in seeds]
                counts = np.array([r[1] for r in runs], float)
                post_counts = np.array([p[1] for p in post], float)
                start = np.array([r[2] for r in runs], float)
                predicted = np.array([clock_inverse(scheme, p[2], beta, d, r[3])
                                      for r, p in zip(runs, post)])
                ratio = start / predicted - 1.0
                rows.append({
                    "scheme": scheme, "d": d, "beta": beta, "k_max": k_max,
                    "time_change": scheme in PURE_TIME_CHANGES,
                    "mode": " ".join("-" if np.isnan(v) else str(int(v)) for v in
                                     (r[0] for r in runs)),
                    "clusters": " ".join("-" if np.isnan(v) else str(int(v)) for v in counts),
                    # Over the seeds whose plateau the horizon reaches (`plateaus` of them):
                    # a slow clock may not reach a late post-ln plateau by T.
                    "plateaus": int(np.isfinite(counts).sum()),
                    "clusters_agree": (float(np.mean(counts[np.isfinite(counts)] == k_max))
                                       if np.isfinite(counts).any() else np.nan),
                    "same_as_post_ln": (float(np.mean((counts == post_counts)[np.isfinite(counts)]))
                                        if np.isfinite(counts).any() else np.nan),
                    "t_plateau": float(np.nanmean(start)) if np.isfinite(start).any() else np.nan,
                    "t_predicted": (float(np.nanmean(predicted)) if np.isfinite(predicted).any()
                                    else np.nan),
                    "rel_diff": float(np.nanmean(ratio)) if np.isfinite(ratio).any() else np.nan,
                    "seeds": len(runs),
                })
    return pd.DataFrame(rows)


def figure(table, data, path):
    import matplotlib.pyplot as plt

    data = data["plateaus"]

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
