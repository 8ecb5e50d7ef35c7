"""Critical attention scaling: where one layer of attention with beta = gamma log n turns
from collapsing the tokens into the identity, against n (docs/model.md §14)."""
import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

import nadyn.stats as stats

TITLE = "Critical attention scaling beta = gamma log n: one layer, n = 64 to 4096"
# The quick form (nadyn table critical_scaling --quick): three n, five gammas, two seeds.
QUICK = ["sweep.n=[64,256,1024]", "sweep.beta={linspace=[1,3,5]}", "sweep.seed.range=[1,2]"]
LEVEL = 0.5  # the phase boundary: lambda (or the attention entropy) crosses one half
# The sensitivity rows: the level x0.5 and x1.5 (x2 is lambda = 1, never crossed).
LEVEL_FACTORS = (0.5, 1.0, 1.5)
PAGE_TABLES = {"critical_scaling_sensitivity":
               "The verdicts with the level 1/2 moved to 1/4 and 3/4 (sensitivity)"}
NOTE = f"""\
One attention layer (pre-ln with residual weight r0 = 1e-9, identity weights) on n tokens
uniform in a cap of radius pi/4 in d = 64 (pairwise cosines near rho), with beta = gamma
log n. `lambda` = arccos(mean_cos after) / arccos(mean_cos before) is the paper's input-to-
output angle ratio: 0 when the layer collapses the tokens, 1 when it is the identity.
`gamma_lambda` is the gamma where lambda crosses {LEVEL} (linear in gamma between grid
points), `simplex_lambda` the same crossing for the exact simplex with the same n and rho
(closed form, docs/model.md §14), `gamma_entropy` and `simplex_entropy` those of the
attention entropy (H / log n at the input) crossing {LEVEL}. `gamma_c` = 1 / (1 - rho) is
the paper's critical value, the limit n -> infinity of every crossing; `rel_diff` =
gamma_lambda / simplex_lambda - 1. Each crossing is found per seed (its own start, its own
rho); the columns are means over the `seeds` runs (`simplex_*` at each seed's rho),
`*_95` the mean +- its standard error [95 % Student-t interval]; `lambda_crossed` and
`entropy_crossed` count the seeds whose curve crosses inside the gamma grid (the others are
left out of the mean). Every run's crossings: `critical_scaling_runs.csv`.

The sensitivity rows: the verdicts recomputed with the level moved from {LEVEL} to
{LEVEL * LEVEL_FACTORS[0]:g} and {LEVEL * LEVEL_FACTORS[2]:g}. `towards_gamma_c`: lambda's
crossing moves towards gamma_c as n grows (`slope`: its least-squares slope against log2 n
over every run, with its 95 % interval `slope_low`..`slope_high`; "yes" when the interval
excludes 0 on gamma_c's side of the smallest n's crossing); `bracketed`: at how
many n the 95 % interval of lambda's crossing lies below gamma_c and the entropy's above it.
"""
FORMATS = {"rho": ".4f"}


def simplex_output_cos(n, rho, beta):
    """The pairwise cosine after one attention layer (identity weights, no residual) of n
    tokens with every pairwise cosine rho: token i goes to (W - 1) y_i + S, S = sum_j y_j,
    W = exp(beta (1 - rho)) (docs/model.md §14)."""
    a = np.expm1(beta * (1.0 - rho))
    s_i = 1.0 + (n - 1.0) * rho  # <y_i, S>
    s2 = n + n * (n - 1.0) * rho  # |S|^2
    return (a * a * rho + 2.0 * a * s_i + s2) / (a * a + 2.0 * a * s_i + s2)


def simplex_entropy(n, rho, beta):
    """The attention entropy / log n of that simplex: weight p = W / (W + n - 1) on the token
    itself, 1 / (W + n - 1) on each other."""
    z = np.exp(beta * (1.0 - rho)) + n - 1.0
    p = np.exp(beta * (1.0 - rho)) / z
    q = 1.0 / z
    return -(p * np.log(p) + (n - 1.0) * q * np.log(q)) / np.log(n)


def angle_ratio(cos_in, cos_out):
    """lambda: the angle between two tokens after the layer over the angle before."""
    return np.arccos(np.clip(cos_out, -1.0, 1.0)) / np.arccos(np.clip(cos_in, -1.0, 1.0))


def crossing(x, y, level=LEVEL):
    """The first x where y (along increasing x) crosses `level` upwards, linear between grid
    points; NaN if it does not cross inside the grid."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    for i in range(1, len(x)):
        if y[i - 1] < level <= y[i]:
            return float(x[i - 1] + (level - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))
    return np.nan


def _measured(data):
    """Per (seed, n, gamma): the input's mean cosine, lambda's output cosine and the input's
    attention entropy (a run without a seed axis is one seed)."""
    first, last = data.time.values[0], data.time.values[-1]
    series = [data.mean_cos.sel(time=first), data.mean_cos.sel(time=last),
              data.attention_entropy.sel(time=first)]
    series = [v if "seed" in v.dims else v.expand_dims(seed=[1]) for v in series]
    return tuple(v.transpose("seed", "n", "beta").values for v in series)


def seed_crossings(data, level=LEVEL):
    """One row per (n, seed): the seed's rho (mean cosine of its start), the gammas where its
    lambda and its 1 - H / log n cross `level`, and the simplex's crossings at its rho."""
    gammas = data.beta.values.astype(float)
    fine = np.linspace(gammas[0], gammas[-1], 2001)  # the closed forms' crossings, finely
    cos_in, cos_out, entropy = _measured(data)
    seeds = data.seed.values if "seed" in data.dims else [1]
    rows = []
    for i, n in enumerate(data.n.values.astype(float)):
        beta = fine * np.log(n)
        for s, seed in enumerate(seeds):
            rho = float(cos_in[s, i].mean())  # the start does not depend on gamma
            rows.append({
                "n": int(n), "seed": int(seed), "rho": rho,
                "gamma_lambda": crossing(gammas, angle_ratio(cos_in[s, i], cos_out[s, i]), level),
                "simplex_lambda": crossing(fine, angle_ratio(rho, simplex_output_cos(n, rho, beta)),
                                           level),
                # the entropy falls as gamma grows: cross 1 - H upwards
                "gamma_entropy": crossing(gammas, 1.0 - entropy[s, i], level),
                "simplex_entropy": crossing(fine, 1.0 - simplex_entropy(n, rho, beta), level),
            })
    runs = pd.DataFrame(rows)
    runs["gamma_c"] = 1.0 / (1.0 - runs["rho"])
    runs["rel_diff"] = runs["gamma_lambda"] / runs["simplex_lambda"] - 1.0
    return runs


def rise(runs, column="gamma_lambda"):
    """The least-squares slope of a crossing against log2 n over every run (seeds at
    different n are independent starts), with its 95 % Student-t interval."""
    ok = runs[column].notna()
    x, y = np.log2(runs.n[ok].to_numpy(float)), runs[column][ok].to_numpy(float)
    fit = scipy_stats.linregress(x, y)
    half = float(scipy_stats.t.ppf(0.5 + stats.LEVEL / 2.0, x.size - 2)) * fit.stderr
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half)


def verdicts(runs):
    """The table's two verdicts: does lambda's crossing move towards gamma_c as n grows (its
    slope against log2 n has the sign of gamma_c minus the crossing at the smallest n, beyond
    its 95 % interval), and at how many n do the two crossings bracket gamma_c (the 95 %
    interval of lambda's below gamma_c, the entropy's above)."""
    slope, low, high = rise(runs)
    smallest = runs[runs.n == runs.n.min()]
    towards = np.sign(float(smallest.gamma_c.mean()) - float(smallest.gamma_lambda.mean()))
    bracketed = 0
    for _, group in runs.groupby("n"):
        lam, ent = stats.mean_interval(group.gamma_lambda), stats.mean_interval(group.gamma_entropy)
        bracketed += int(lam.high < float(group.gamma_c.mean()) < ent.low)
    if low > 0 or high < 0:
        verdict = "yes" if np.sign(slope) == towards else "no, away"
    else:
        verdict = "undecided"
    return {"towards_gamma_c": verdict, "slope": slope, "slope_low": low, "slope_high": high,
            "bracketed": f"{bracketed} of {runs.n.nunique()}"}


def sensitivity_table(data):
    """The verdicts with the level 1/2 moved to 1/4 and 3/4 (x0.5 and x1.5: x2 would be
    lambda = 1, the identity itself, which no finite gamma reaches)."""
    found = {}

    def verdict(level):
        found[level] = verdicts(seed_crossings(data, level))
        return (found[level]["towards_gamma_c"], found[level]["bracketed"])

    table = stats.sensitivity(verdict, LEVEL, LEVEL_FACTORS)
    table = table.rename(columns={"threshold": "level"})
    for key in ("slope", "slope_low", "slope_high"):
        table[key] = [found[level][key] for level in table.level]
    table["towards_gamma_c"] = [v[0] for v in table.verdict]
    table["bracketed"] = [v[1] for v in table.verdict]
    return table.drop(columns="verdict")[["factor", "level", "towards_gamma_c", "slope", "slope_low",
                                          "slope_high", "bracketed", "same"]]


def reduce(data):
    runs = seed_crossings(data)
    rows = []
    for n, group in runs.groupby("n"):
        lam = stats.mean_interval(group.gamma_lambda)
        ent = stats.mean_interval(group.gamma_entropy)
        rel = stats.mean_interval(group.rel_diff)
        rows.append({
            "n": int(n), "seeds": len(group),
            "lambda_crossed": int(group.gamma_lambda.notna().sum()),
            "entropy_crossed": int(group.gamma_entropy.notna().sum()),
            "rho": float(group.rho.mean()),
            "gamma_lambda": lam.mean, "gamma_lambda_95": stats.interval_text(lam, 4),
            "simplex_lambda": float(group.simplex_lambda.mean()),
            "gamma_entropy": ent.mean, "gamma_entropy_95": stats.interval_text(ent, 4),
            "simplex_entropy": float(group.simplex_entropy.mean()),
            "gamma_c": float(group.gamma_c.mean()),
            "rel_diff": rel.mean, "rel_diff_95": stats.interval_text(rel, 3),
        })
    table = pd.DataFrame(rows)
    return {"critical_scaling": table,
            "critical_scaling_sensitivity": sensitivity_table(data),
            "critical_scaling_runs": runs}


def figure(table, data, path):
    import matplotlib.pyplot as plt

    gammas = data.beta.values.astype(float)
    cos_in, cos_out, _ = _measured(data)
    lam = angle_ratio(cos_in, cos_out).mean(axis=0)  # the mean over seeds
    log2n = np.log2(data.n.values.astype(float))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    mesh = left.pcolormesh(log2n, gammas, lam.T, shading="nearest", cmap="viridis", vmin=0,
                           vmax=1)
    fig.colorbar(mesh, ax=left, label="lambda (output angle / input angle)")
    left.plot(log2n, table["gamma_lambda"], "wo-", label=f"measured lambda = {LEVEL}")
    left.plot(log2n, table["simplex_lambda"], "r--", label="simplex closed form")
    left.plot(log2n, table["gamma_c"], "k:", label="gamma_c = 1 / (1 - rho)")
    left.set_xlabel("log2 n")
    left.set_ylabel("gamma (beta = gamma log n)")
    left.set_title("collapse (dark) and identity (light)")
    left.legend(fontsize=7, loc="lower right")
    for i, n in enumerate(data.n.values):
        right.plot(gammas, lam[i], "o-", ms=3, label=f"n = {int(n)}")
    right.axvline(table["gamma_c"].mean(), color="k", ls=":", label="gamma_c")
    right.set_xlabel("gamma")
    right.set_ylabel("lambda")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
