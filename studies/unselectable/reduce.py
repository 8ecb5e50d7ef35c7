"""Unselectable keys: Gaussian keys, raw and scaled to the sphere, decided by linear programs,
against the closed form of the expected fraction where there is one (d <= 3, or n <= d + 1)."""
import math

import numpy as np
import pandas as pd
from scipy import integrate
from scipy import stats as scipy_stats

import nadyn
from nadyn import stats

TITLE = "Fraction of unselectable keys among n standard Gaussian keys in d dimensions"
# This study runs no sweep: the keys are drawn and decided by the library's compiled
# functions (nadyn._core.unselectable). Each is overridable with --set KEY=VALUE.
PARAMETERS = {"n": [16, 64, 256], "d": [2, 3, 8, 32], "seeds": list(range(1, 17))}
# The check CI runs: two seeds, the small sizes (no statistics).
QUICK = ["n=[16, 64]", "d=[2, 3, 8]", "seeds=[1, 2]"]
FORMATS = {"raw_mean": ".6f", "raw_sem": ".6f", "raw_low": ".6f", "raw_high": ".6f",
           "closed_form": ".6f"}
FIGURE = "fig_unselectable.png"
NOTE = """\
A key is unselectable when it lies in the convex hull of the other keys: no query gives it
the highest score (decided exactly, docs/model.md §12). `raw`: the fraction among the keys
as drawn (no scaling step, as in `no-norm`): mean over the seeds +- its standard error
[95 % interval] (Student's t, `seeds` - 1 degrees of freedom; `raw_mean`, `raw_sem`,
`raw_low`, `raw_high` the same as numbers). `closed_form`: the expected fraction,
1 - E[vertices] / n, exact for n <= d + 1 (0: the points are affinely independent) and for
d = 2 (E[vertices] = n (n - 1) E[Phi(h)^(n-2)]) and d = 3 (2 + C(n, 3) E[Phi(h)^(n-3)]),
h ~ N(0, 1/d); blank where we know none. `in_interval`: whether the 95 % interval holds it.
`sphere`: the same keys divided by their norms (LayerNorm's scaling): unselectable keys
counted over every seed, of all the keys drawn.
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


def power_mean(m, variance):
    """E[Phi(h)^m] for h ~ N(0, variance), by quadrature."""
    scale = math.sqrt(variance)
    integrand = (lambda x: scipy_stats.norm.pdf(x) * scipy_stats.norm.cdf(scale * x) ** m)
    return integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)[0]


def expected_fraction(n, d):
    """The expected fraction of n standard Gaussian points in R^d inside the hull of the
    others, where it has a closed form, else NaN. A facet through d of the points: its
    normal u depends on their differences only, independent of their mean (Gaussian), so its
    distance to the origin is h = <mean, u> ~ N(0, 1/d), and each other point's projection on
    u is N(0, 1): E[facets] = C(n, d) 2 E[Phi(h)^(n-d)]. In the plane a polygon has as many
    vertices as edges; in R^3 a simplicial polytope has 2 + facets / 2 vertices (Euler)."""
    if n <= d + 1:
        return 0.0
    if d == 2:
        vertices = n * (n - 1) * power_mean(n - 2, 1.0 / 2.0)
    elif d == 3:
        vertices = 2.0 + math.comb(n, 3) * power_mean(n - 3, 1.0 / 3.0)
    else:
        return math.nan
    return 1.0 - vertices / n


def reduce(parameters):
    keys_of = nadyn._core.unselectable
    for key in ("n", "d", "seeds"):
        values = parameters[key]
        if not values or not all(isinstance(v, int) and v >= 1 for v in values):
            raise ValueError(f"{key} must be a list of positive integers, got {values!r}")
    rows = []
    for n in parameters["n"]:
        for d in parameters["d"]:
            raw, sphere_keys = [], 0
            for seed in parameters["seeds"]:
                keys = keys_of.gaussian_keys(seed, n, d)
                raw.append(keys_of.fraction(keys))
                # fraction * n is an exact count (a small integer over n in doubles).
                sphere_keys += round(keys_of.fraction(scaled_to_sphere(keys)) * n)
            interval = stats.mean_interval(raw)
            closed = expected_fraction(n, d)
            if math.isnan(closed) or interval.n < 2:
                held = "-"
            else:
                held = "yes" if interval.low <= closed <= interval.high else "no"
            rows.append({"n": n, "d": d, "seeds": len(raw),
                         "raw": stats.interval_text(interval, 4),
                         "raw_mean": interval.mean, "raw_sem": interval.sem,
                         "raw_low": interval.low, "raw_high": interval.high,
                         "closed_form": closed, "in_interval": held,
                         "sphere": f"{sphere_keys} of {n * len(raw)}"})
    return pd.DataFrame(rows)


def figure(table, parameters, path):
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6.0, 4.0))
    for n, rows in table.groupby("n"):
        rows = rows.sort_values("d")
        # The 95 % interval as the error bar (a zero-width one for a single seed).
        low = (rows.raw_mean - rows.raw_low).fillna(0.0)
        high = (rows.raw_high - rows.raw_mean).fillna(0.0)
        axis.errorbar(rows.d, rows.raw_mean, yerr=[low, high], marker="o", capsize=3,
                      label=f"raw, n = {n}")
        colour = axis.lines[-1].get_color()
        known = rows[rows.closed_form.notna()]
        axis.plot(known.d, known.closed_form, linestyle="none", marker="_", markersize=14,
                  color=colour)
        sphere = [int(text.split()[0]) / int(text.split()[-1]) for text in rows.sphere]
        axis.plot(rows.d, sphere, linestyle="--", marker="x", color=colour,
                  label=f"LayerNorm scaling, n = {n}")
    axis.set_xscale("log", base=2)
    axis.set_xlabel("dimension d")
    axis.set_ylabel("fraction of unselectable keys")
    axis.set_title("Gaussian keys, raw (mean and 95 % interval; bars: closed form)\n"
                   "and scaled to the sphere", fontsize=9)
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
