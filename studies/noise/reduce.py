"""Noise on the norms: argmax flips and attention entropy, mean over frames, then seeds."""
import numpy as np
import pandas as pd

TITLE = "Noise on the norms of q, k and v: argmax flips against sigma"
FIGURE = "fig_noise.png"  # the name results/README.md and earlier versions use
FORMATS = {"beta": "g", "sigma": "g", "flips_mean": ".6f", "flips_spread": ".6f",
           "entropy_mean": ".6f", "entropy_spread": ".6f"}
NOTE = """\
Each entry: the fraction of tokens whose most-attended key differs from the noiseless
attention at the same state (`argmax_flips`) and the attention's normalised entropy (0: one
key, 1: uniform), each averaged over the frames of a pre-ln run (rk4, T = 4, dt = 0.05,
n = d = 64, gaussian weights, one head, the noise redrawn every 0.5 of depth), then mean and
sample standard deviation over the seeds. `pre-ln`: q = Q theta, k = K theta, v = V theta;
`qkv-norm`: the same normalised per token.
"""


def reduce(data):
    if not (data.status == 1).all():
        raise ValueError("the noise sweep has runs that did not complete")
    # Mean over the frames of each run (every frame is present: rk4 with a fixed step).
    flips = data.argmax_flips.mean("time")
    entropy = data.attention_entropy.mean("time")
    rows = []
    for qkv_norm in data.qkv_norm.values:
        for beta in data.beta.values:
            for sigma in data.norm_noise.values:
                at = dict(qkv_norm=qkv_norm, beta=beta, norm_noise=sigma)
                f, e = flips.sel(at).values, entropy.sel(at).values
                spread = (lambda v: float(np.std(v, ddof=1)) if v.size > 1 else 0.0)
                rows.append({"norm": "qkv-norm" if str(qkv_norm).lower() == "true" else "pre-ln",
                             "beta": float(beta), "sigma": float(sigma), "seeds": f.size,
                             "flips_mean": float(np.mean(f)), "flips_spread": spread(f),
                             "entropy_mean": float(np.mean(e)), "entropy_spread": spread(e)})
    return pd.DataFrame(rows)


def figure(table, data, path):
    """argmax_flips against sigma (log axis; sigma = 0, where flips are 0, left out)."""
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6.0, 4.0))
    for (norm, beta), rows in table[table.sigma > 0].groupby(["norm", "beta"]):
        axis.errorbar(rows.sigma, rows.flips_mean, yerr=rows.flips_spread, capsize=3,
                      marker="o" if norm == "pre-ln" else "s",
                      linestyle="-" if norm == "pre-ln" else "--",
                      label=f"{norm}, beta = {beta:g} (entropy {rows.entropy_mean.mean():.2f})")
    axis.set_xscale("log")
    axis.set_xlabel("norm noise sigma")
    axis.set_ylabel("argmax_flips (fraction of tokens)")
    axis.set_title("Top key moved by noise on the norms of q, k, v")
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
