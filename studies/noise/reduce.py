"""Noise on the norms: argmax flips and attention entropy, mean over frames, then over seeds
with standard errors and 95 % intervals; QKV-Norm against pre-ln and sparse against isotropic
attention as paired differences over the seeds."""
import pandas as pd

from nadyn import stats

TITLE = "Noise on the norms of q, k and v: argmax flips against sigma"
FIGURE = "fig_noise.png"  # the name results/README.md and earlier versions use
# The check CI runs: two seeds, two noise levels (no statistics).
QUICK = ["sweep.seed.range=[1,2]", "sweep.norm_noise=[0,0.1]"]
MEAN, SEM = ".6f", ".6f"
FORMATS = {"beta": "g", "sigma": "g", "flips_mean": MEAN, "flips_sem": SEM,
           "flips_low": MEAN, "flips_high": MEAN, "entropy_mean": MEAN, "entropy_sem": SEM}
TABLE_FORMATS = {"noise_comparisons": {"beta": "g", "sigma": "g", "difference": MEAN,
                                       "difference_sem": SEM, "low": MEAN, "high": MEAN}}
PAGE_TABLES = {"noise_comparisons": "Paired differences over the seeds"}
NOTE = """\
Each entry: the fraction of tokens whose most-attended key differs from the noiseless
attention at the same state (`argmax_flips`) and the attention's normalised entropy (0: one
key, 1: uniform), each averaged over the frames of a pre-ln run (rk4, T = 4, dt = 0.05,
n = d = 64, gaussian weights, one head, the noise redrawn every 0.5 of depth), then over the
`seeds` runs: mean +- standard error [95 % interval] (Student's t; the `_mean`, `_sem`,
`_low`, `_high` columns the same as numbers). `pre-ln`: q = Q theta, k = K theta,
v = V theta; `qkv-norm`: the same normalised per token. A seed draws the same start, weights
and noise for every norm and beta, so the comparisons below are paired: per seed the
difference of the two runs' flips, then its mean, standard error and 95 % interval over the
seeds; `verdict`: `more` or `fewer` when the interval lies above or below 0, else
`not resolved`.
"""


def is_qkv_norm(value):
    return str(value).lower() == "true"


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
                f = stats.mean_interval(flips.sel(at).values)
                e = stats.mean_interval(entropy.sel(at).values)
                rows.append({"norm": "qkv-norm" if is_qkv_norm(qkv_norm) else "pre-ln",
                             "beta": float(beta), "sigma": float(sigma), "seeds": f.n,
                             "flips": stats.interval_text(f, 4), "flips_mean": f.mean,
                             "flips_sem": f.sem, "flips_low": f.low, "flips_high": f.high,
                             "entropy": stats.interval_text(e, 4), "entropy_mean": e.mean,
                             "entropy_sem": e.sem})
    return {"noise": pd.DataFrame(rows), "noise_comparisons": comparisons(data, flips)}


def paired(flips, at, axis, first, second):
    """The per-seed difference of the flips at ``axis`` = ``second`` minus ``first``."""
    return (flips.sel({**at, axis: second}) - flips.sel({**at, axis: first})).values


def comparison_row(comparison, at_text, beta, sigma, differences):
    d = stats.mean_interval(differences)
    if d.n < 2 or not d.sem == d.sem:
        verdict = "-"
    elif d.low > 0.0:
        verdict = "more"
    elif d.high < 0.0:
        verdict = "fewer"
    else:
        verdict = "not resolved"
    return {"comparison": comparison, "at": at_text, "beta": beta, "sigma": sigma,
            "seeds": d.n, "flips_difference": stats.interval_text(d, 3),
            "difference": d.mean, "difference_sem": d.sem, "low": d.low, "high": d.high,
            "verdict": verdict}


def comparisons(data, flips):
    """QKV-Norm minus pre-ln per (beta, sigma), and the largest beta minus the smallest per
    (norm, sigma), over the noisy sigmas: paired over the seeds."""
    rows = []
    noisy = [s for s in data.norm_noise.values if float(s) > 0.0]
    norms = list(data.qkv_norm.values)
    pre = [v for v in norms if not is_qkv_norm(v)]
    qkv = [v for v in norms if is_qkv_norm(v)]
    if pre and qkv:
        for beta in data.beta.values:
            for sigma in noisy:
                rows.append(comparison_row(
                    "qkv-norm - pre-ln", f"beta = {float(beta):g}", float(beta), float(sigma),
                    paired(flips, dict(beta=beta, norm_noise=sigma), "qkv_norm", pre[0], qkv[0])))
    betas = sorted(float(b) for b in data.beta.values)
    if len(betas) > 1:
        low, high = betas[0], betas[-1]
        for qkv_norm in norms:
            name = "qkv-norm" if is_qkv_norm(qkv_norm) else "pre-ln"
            for sigma in noisy:
                rows.append(comparison_row(
                    f"beta {high:g} - beta {low:g}", name, float("nan"), float(sigma),
                    paired(flips, dict(qkv_norm=qkv_norm, norm_noise=sigma), "beta", low, high)))
    return pd.DataFrame(rows, columns=["comparison", "at", "beta", "sigma", "seeds",
                                       "flips_difference", "difference", "difference_sem",
                                       "low", "high", "verdict"])


def figure(table, data, path):
    """argmax_flips against sigma (log axis; sigma = 0, where flips are 0, left out), with
    the 95 % interval of each mean."""
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6.0, 4.0))
    for (norm, beta), rows in table[table.sigma > 0].groupby(["norm", "beta"]):
        below = (rows.flips_mean - rows.flips_low).fillna(0.0)
        above = (rows.flips_high - rows.flips_mean).fillna(0.0)
        axis.errorbar(rows.sigma, rows.flips_mean, yerr=[below, above], capsize=3,
                      marker="o" if norm == "pre-ln" else "s",
                      linestyle="-" if norm == "pre-ln" else "--",
                      label=f"{norm}, beta = {beta:g} (entropy {rows.entropy_mean.mean():.2f})")
    axis.set_xscale("log")
    axis.set_xlabel("norm noise sigma")
    axis.set_ylabel("argmax_flips (fraction of tokens)")
    axis.set_title("Top key moved by noise on the norms of q, k, v (mean, 95 % interval)",
                   fontsize=9)
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
