"""Critical attention scaling: where one layer of attention with beta = gamma log n turns
from collapsing the tokens into the identity, against n (docs/model.md §14)."""
import numpy as np
import pandas as pd

TITLE = "Critical attention scaling beta = gamma log n: one layer, n = 64 to 16384"
# The quick form (nadyn table critical_scaling --quick): three n, five gammas, in seconds.
QUICK = ["sweep.n=[64,256,1024]", "sweep.beta={linspace=[1,3,5]}"]
LEVEL = 0.5  # the phase boundary: lambda (or the attention entropy) crosses one half
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
gamma_lambda / simplex_lambda - 1.
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
    """Per (n, gamma): the input's mean cosine, lambda and the input's attention entropy."""
    first, last = data.time.values[0], data.time.values[-1]
    cos_in = data.mean_cos.sel(time=first)
    cos_out = data.mean_cos.sel(time=last)
    entropy = data.attention_entropy.sel(time=first)
    if "seed" in cos_in.dims:
        cos_in, cos_out, entropy = (v.mean("seed") for v in (cos_in, cos_out, entropy))
    return cos_in.transpose("n", "beta"), cos_out.transpose("n", "beta"), entropy.transpose(
        "n", "beta")


def reduce(data):
    gammas = data.beta.values.astype(float)
    fine = np.linspace(gammas[0], gammas[-1], 2001)  # the closed forms' crossings, finely
    cos_in, cos_out, entropy = _measured(data)
    rows = []
    for i, n in enumerate(data.n.values):
        n = float(n)
        rho = float(cos_in.values[i].mean())  # the start does not depend on gamma
        lam = angle_ratio(cos_in.values[i], cos_out.values[i])
        beta = fine * np.log(n)
        rows.append({
            "n": int(n),
            "rho": rho,
            "gamma_lambda": crossing(gammas, lam),
            "simplex_lambda": crossing(fine, angle_ratio(rho, simplex_output_cos(n, rho, beta))),
            # the entropy falls as gamma grows: cross 1 - H upwards
            "gamma_entropy": crossing(gammas, 1.0 - entropy.values[i]),
            "simplex_entropy": crossing(fine, 1.0 - simplex_entropy(n, rho, beta)),
            "gamma_c": 1.0 / (1.0 - rho),
        })
    table = pd.DataFrame(rows)
    table["rel_diff"] = table["gamma_lambda"] / table["simplex_lambda"] - 1.0
    return table


def figure(table, data, path):
    import matplotlib.pyplot as plt

    gammas = data.beta.values.astype(float)
    cos_in, cos_out, _ = _measured(data)
    lam = angle_ratio(cos_in.values, cos_out.values)
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
