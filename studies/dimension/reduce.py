"""The route to one cluster against the dimension d at fixed n: the first metastable cluster
count against the linearisation's fastest mode k_max(beta, d), and the time to one cluster
against the scalar ODE of the orthogonal start (studies/dimension/README.md)."""
import numpy as np
import pandas as pd

import nadyn
from nadyn import closed_forms, stats
from nadyn.plateaus import plateaus
from nadyn.study import run_parameters

TITLE = "The dimension: first metastable state and time to one cluster, n = 32, d = 2 to 128"
# The quick form (nadyn table dimension --quick): two dimensions, one beta, four seeds.
QUICK = ["sweep.d=[3,128]", "sweep.beta=[4]", "sweep.seed.range=[1,4]", "sweep.cluster_eps=[1e-3]",
         "run.T=60"]
# A plateau: a maximal stretch of frames at one cluster count lasting at least this long (in
# time units of post-ln). 5 is about the time the whole collapse takes from the orthogonal
# start at beta = 2 to 4 (the scalar ODE: 5.5 and 7.0), so a shorter stretch is a step of the
# collapse, not a state; the sensitivity table halves and doubles it.
PLATEAU_LENGTH = 5.0
PLATEAU_FACTORS = (0.5, 1.0, 2.0)
# One cluster: single linkage at cosine >= 1 - CLUSTER_EPS (nadyn's default cluster_eps),
# every pair within 2.6 degrees along the chain. The sweep also runs it halved and doubled.
CLUSTER_EPS = 1e-3
DIGITS = 3
FORMATS = {"d": "d", "k_max": "d", "cluster_eps": "g"}
NOTE = f"""\
Per (d, beta), over 16 seeds: `k_max` is the fastest-growing mode of the uniform measure
(docs/model.md §13: argmax_k lambda_k(beta, d)); `first plateau` lists the seeds' first
metastable cluster counts (`count x seeds`; the first stretch of at least {PLATEAU_LENGTH:g}
time units at one count below the start's count; `-`: none by T), and `= k_max` how many
equal k_max, with the Wilson 95 % interval of that fraction. `t_one` is the Kaplan-Meier
median of the time to one cluster (the first frame with one cluster), `95% interval` its
Brookmeyer-Crowley interval (`> T`: beyond the horizon), `reached` the seeds that got there
by T = 400 (the others are censored there, never averaged). `t_one ODE` is the same time for
the symmetric orthogonal start (n <= d tokens at theta_k = e_k), from the scalar ODE of
docs/model.md §3: the first t with gamma(t) >= 1 - {CLUSTER_EPS:g}, when every pair is within
cluster_eps; `ratio` is `t_one` over it. The two tables below repeat the `= k_max` count
with the plateau length halved and doubled, and the time to one cluster with cluster_eps
halved and doubled (runs of their own: the count is taken while the run goes).
"""
PAGE_TABLES = {"dimension_plateau_length": "The plateau length halved and doubled",
               "dimension_cluster_eps": "cluster_eps halved and doubled"}


def first_plateau_count(times, counts, length=PLATEAU_LENGTH):
    """The count of the first plateau at least `length` long whose count is below the start's
    (the start's own count can sit still while the linear phase grows); NaN if none."""
    ok = np.isfinite(counts)
    times, counts = times[ok], counts[ok]
    table = plateaus(times, counts, plateau_min=float(length))
    below = [int(c) for c in table.clusters.values if c < counts[0]]
    return float(below[0]) if below else np.nan


def time_to_one(times, counts):
    """(time, reached): the first frame's time with one cluster, or the last frame's time and
    False (censored there)."""
    ok = np.isfinite(counts)
    times, counts = times[ok], counts[ok]
    hits = np.flatnonzero(counts == 1)
    if hits.size:
        return float(times[hits[0]]), True
    return float(times[-1]), False


def ode_time_to_one(n, beta, horizon, eps=CLUSTER_EPS):
    """The scalar ODE's first t with gamma(t) >= 1 - eps from the orthogonal start (post-ln;
    docs/model.md §3), found on a grid of 0.01 time units and refined linearly; inf when it
    is beyond `horizon`."""
    samples = int(round(horizon / 0.01))
    ode = nadyn.reduced(scheme="post-ln", n=n, beta=beta, T=horizon, samples=samples)
    t, gamma = np.asarray(ode["t"]), np.asarray(ode["gamma"])
    above = np.flatnonzero(gamma >= 1.0 - eps)
    if above.size == 0:
        return np.inf
    i = above[0]
    if i == 0:
        return float(t[0])
    g0, g1 = gamma[i - 1], gamma[i]
    return float(t[i - 1] + (1.0 - eps - g0) * (t[i] - t[i - 1]) / (g1 - g0))


def histogram(values):
    """The seeds' counts as "count x seeds", most frequent first ("-": no plateau by T)."""
    labels = ["-" if np.isnan(v) else str(int(v)) for v in values]
    found = pd.Series(labels).value_counts(sort=False)
    order = sorted(found.index, key=lambda v: (-found[v], v == "-", int(v) if v != "-" else 0))
    return " ".join(f"{v}x{found[v]}" for v in order)


def _interval(m):
    def show(x):
        return f"> {m.horizon:.4g}" if np.isinf(x) else f"{x:.3g}"
    return f"[{show(m.low)}, {show(m.high)}]"


def at_eps(data, eps=CLUSTER_EPS):
    """The runs at cluster_eps = eps (the sweep's axis, if it has one)."""
    if "cluster_eps" not in data.dims:
        return data
    return data.sel(cluster_eps=eps, method="nearest")


def measure(data, length=PLATEAU_LENGTH, eps=CLUSTER_EPS):
    """Per (d, beta), at cluster_eps = eps: each seed's first plateau count and (time to one
    cluster, reached)."""
    data = at_eps(data, eps)
    times = data.time.values
    found = {}
    for d in data.d.values:
        for beta in data.beta.values:
            series = data.clusters.sel(d=d, beta=beta).transpose("seed", "time").values
            firsts = np.array([first_plateau_count(times, s, length) for s in series])
            ones = [time_to_one(times, s) for s in series]
            found[int(d), float(beta)] = firsts, ones
    return found


def reduce(data):
    first = {axis: data[axis].values[0] for axis in data.attrs["axes"]}
    n = int(run_parameters(data, **first)["n"])
    horizon = float(data.time.values[-1])
    found = measure(data)
    ode = {float(b): ode_time_to_one(n, float(b), horizon) for b in data.beta.values}
    rows = []
    for (d, beta), (firsts, ones) in found.items():
        k_max = closed_forms.fastest_mode(beta, d)
        equal = int(np.sum(firsts == k_max))
        low, high = stats.proportion_interval(equal, firsts.size)
        times = np.array([t for t, _ in ones])
        reached = np.array([r for _, r in ones])
        m = stats.km_median(times, reached)
        rows.append({
            "d": d, "beta": beta, "n <= d": "yes" if n <= d else "no", "k_max": k_max,
            "first plateau": histogram(firsts),
            "= k_max": f"{equal}/{firsts.size} [{low:.2f}, {high:.2f}]",
            "t_one": m.median if np.isfinite(m.median) else np.nan,
            "95% interval": _interval(m),
            "reached": f"{m.events}/{m.runs}",
            "t_one ODE": ode[beta] if np.isfinite(ode[beta]) else np.nan,
            "ratio": (m.median / ode[beta]) if np.isfinite(m.median) and np.isfinite(ode[beta])
                     else np.nan,
        })
    table = pd.DataFrame(rows).sort_values(["beta", "d"], kind="stable").reset_index(drop=True)
    lengths = []
    for factor in PLATEAU_FACTORS:
        moved = measure(data, PLATEAU_LENGTH * factor) if factor != 1.0 else found
        for (d, beta), (firsts, _) in moved.items():
            k_max = closed_forms.fastest_mode(beta, d)
            lengths.append({"plateau length": PLATEAU_LENGTH * factor, "d": d, "beta": beta,
                            "k_max": k_max, "first plateau": histogram(firsts),
                            "= k_max": f"{int(np.sum(firsts == k_max))}/{firsts.size}"})
    lengths = pd.DataFrame(lengths).sort_values(["beta", "d", "plateau length"],
                                                kind="stable").reset_index(drop=True)
    epsilons = []
    for eps in (data.cluster_eps.values if "cluster_eps" in data.dims else [CLUSTER_EPS]):
        eps = float(eps)
        moved = measure(data, eps=eps)
        for (d, beta), (_, ones) in moved.items():
            m = stats.km_median(np.array([t for t, _ in ones]), np.array([r for _, r in ones]))
            t_ode = ode_time_to_one(n, beta, horizon, eps)
            epsilons.append({"cluster_eps": eps, "d": d, "beta": beta,
                             "t_one": m.median if np.isfinite(m.median) else np.nan,
                             "95% interval": _interval(m), "reached": f"{m.events}/{m.runs}",
                             "t_one ODE": t_ode if np.isfinite(t_ode) else np.nan,
                             "ratio": (m.median / t_ode) if np.isfinite(m.median) and
                             np.isfinite(t_ode) else np.nan})
    epsilons = pd.DataFrame(epsilons).sort_values(["beta", "d", "cluster_eps"],
                                                  kind="stable").reset_index(drop=True)
    return {"dimension": table, "dimension_plateau_length": lengths,
            "dimension_cluster_eps": epsilons}


def figure(table, data, path):
    import matplotlib.pyplot as plt

    found = measure(data)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    for i, beta in enumerate(sorted(table["beta"].unique())):
        rows = table[table["beta"] == beta]
        colour = f"C{i}"
        ds = rows["d"].to_numpy()
        for j, d in enumerate(ds):
            firsts = found[int(d), float(beta)][0]
            jitter = (np.arange(firsts.size) - firsts.size / 2) * 0.006 + (i - 1) * 0.04
            left.scatter(d * np.exp(jitter), firsts, s=6, color=colour, alpha=0.5)
        left.plot(ds, rows["k_max"], "-", color=colour, label=f"beta = {beta:g}: k_max")
        right.plot(ds, rows["t_one"], "o-", color=colour, label=f"beta = {beta:g}")
        if np.isfinite(rows["t_one ODE"].iloc[0]):
            right.axhline(rows["t_one ODE"].iloc[0], color=colour, ls="--", lw=0.8)
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("d")
    left.set_yscale("log")
    left.set_ylabel("first plateau's cluster count")
    left.set_title("dots: seeds; lines: k_max(beta, d)", fontsize=9)
    right.set_yscale("log")
    right.set_ylabel("time to one cluster (KM median)")
    right.set_title("dashed: the orthogonal start's scalar ODE", fontsize=9)
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    fig.suptitle(f"n = 32, post-ln, uniform start, 16 seeds (T = {data.time.values[-1]:g})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
