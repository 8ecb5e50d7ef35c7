"""Unselectable keys: Gaussian keys, raw and scaled to the sphere, decided by linear programs."""
import math

import pandas as pd

import nadyn

TITLE = "Fraction of unselectable keys among n standard Gaussian keys in d dimensions"
# This study runs no sweep: the keys are drawn and decided by the library's compiled
# functions (nadyn._core.unselectable). Each is overridable with --set KEY=VALUE.
PARAMETERS = {"n": [16, 64, 256], "d": [2, 3, 8, 32], "seeds": [1, 2, 3, 4, 5]}
FORMATS = {"raw_mean": ".6f", "raw_spread": ".6f", "sphere_mean": ".6f",
           "sphere_spread": ".6f"}
FIGURE = "fig_unselectable.png"
NOTE = """\
A key is unselectable when it lies in the convex hull of the other keys: no query gives it
the highest score. `raw`: the keys as drawn (no scaling step, as in `no-norm`);
`sphere`: the same keys divided by their norms (LayerNorm's scaling). Mean and sample
standard deviation over the seeds.
"""


def scaled_to_sphere(keys):
    """Each row divided by its norm, summed in order as the library sums it."""
    rows = []
    for row in keys.tolist():
        norm2 = 0.0
        for x in row:
            norm2 += x * x
        norm = math.sqrt(norm2)
        rows.append([x / norm for x in row])
    return rows


def mean_and_spread(values):
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((x - mean) ** 2 for x in values) / (len(values) - 1))


def reduce(parameters):
    keys_of = nadyn._core.unselectable
    for key in ("n", "d", "seeds"):
        values = parameters[key]
        if not values or not all(isinstance(v, int) and v >= 1 for v in values):
            raise ValueError(f"{key} must be a list of positive integers, got {values!r}")
    rows = []
    for n in parameters["n"]:
        for d in parameters["d"]:
            raw, sphere = [], []
            for seed in parameters["seeds"]:
                keys = keys_of.gaussian_keys(seed, n, d)
                raw.append(keys_of.fraction(keys))
                sphere.append(keys_of.fraction(scaled_to_sphere(keys)))
            raw_mean, raw_spread = mean_and_spread(raw)
            sphere_mean, sphere_spread = mean_and_spread(sphere)
            rows.append({"n": n, "d": d, "seeds": len(parameters["seeds"]),
                         "raw_mean": raw_mean, "raw_spread": raw_spread,
                         "sphere_mean": sphere_mean, "sphere_spread": sphere_spread})
    return pd.DataFrame(rows)


def figure(table, parameters, path):
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6.0, 4.0))
    for n, rows in table.groupby("n"):
        rows = rows.sort_values("d")
        axis.errorbar(rows.d, rows.raw_mean, yerr=rows.raw_spread, marker="o", capsize=3,
                      label=f"raw, n = {n}")
        axis.plot(rows.d, rows.sphere_mean, linestyle="--", marker="x",
                  color=axis.lines[-1].get_color(), label=f"LayerNorm scaling, n = {n}")
    axis.set_xscale("log", base=2)
    axis.set_xlabel("dimension d")
    axis.set_ylabel("fraction of unselectable keys")
    axis.set_title("Gaussian keys: raw versus scaled to the sphere")
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
