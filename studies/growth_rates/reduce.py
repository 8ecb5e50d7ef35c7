"""Mode growth rates of the uniform measure: particles and the density solver against the
mean-field linearisation."""
import itertools

import numpy as np
import pandas as pd

import nadyn.closed_forms as closed
from nadyn.study import run_parameters

TITLE = ("Growth rates of the modes from a uniform start: particles and the density solver "
         "against the mean-field rates")
# The quick form: 1024 tokens, one seed (the agreement is then only to ~10-20 %: the
# neglected quadratic terms scale like k_max / sqrt(n)); the density solver's experiment takes
# well under a second as it is, and runs whole.
QUICK = ["rates:run.n=1024", "rates:sweep.seed.range=[1,1]",
         "schemes:run.n=1024", "schemes:sweep.seed.range=[1,1]"]
# The density solver's start whose rates fill the `solver` columns (experiments/density.toml):
# white noise of amplitude 1e-8 in every degree 1..12. The others of its init axis show how
# the difference scales with the amplitude.
SOLVER_INIT = "noise:1e-8,12"
# The fit window of a run ends where the fastest compared mode's m_k has grown by exp(GROWTH)
# over its value at t = 0.
GROWTH = 2.0
# Modes compared: predicted rate at least this fraction of the fastest mode's (slower ones
# barely move inside the window, and the quadratic terms then dominate their change).
MIN_RATE_FRACTION = 0.5
MIN_FRAMES = 4
NOTE = f"""\
`predicted`: lambda_k of docs/model.md §13 (softmax, identity weights; the amplitude of the
degree-k part grows like exp(lambda_k tau), with tau the scheme's clock at the uniform state,
§13.3: tau = t for post-ln). `measured`: half the least-squares slope of log m_k against tau
over the run's window, mean over the seeds (`spread`: their standard deviation). The window
runs from t = 0 to the first frame where one of the compared modes has grown by
exp({GROWTH:g}) in m_k (at least {MIN_FRAMES} frames; `t_end`: its mean over the seeds).
Compared modes: predicted rate at least {MIN_RATE_FRACTION:g} of the fastest. `naive`
(scheme rows): the same fit against t instead of tau, what one would measure ignoring the
clock. `k_max`: the fastest predicted mode. `solver` (post-ln rows): the same fit on the
density solver's run from white noise of amplitude 1e-8 (experiments/density.toml, the
mean-field equation at n = infinity, docs/model.md §16), over all its 11 frames (t = 0 to 1);
`solver_rel_diff` = solver / predicted - 1.

`growth_rates_solver.csv`, on this page below: the solver's rate for every mode k = 1..12,
its relative difference to lambda_k (`rel_diff`), and the same from white noise of amplitude
1e-6 and 1e-10 with the same seed (`rel_diff_eps1e-6`, `rel_diff_eps1e-10`): the quadratic
terms the linearisation drops add a difference proportional to the amplitude, the round-off
of a density near 1 one that grows as the amplitude falls. `extrap_rel_diff` and
`extrap_abs_diff`: the difference of the rate with its part proportional to the amplitude
removed, (100 r(1e-8) - r(1e-6)) / 99 (the same seed draws the same noise at every
amplitude, so r(EPS) = lambda_k + c EPS + O(EPS^2) + round-off); `extrap_abs_diff` is in
the rate's units (per unit time).
"""
FORMATS = {"d": "d", "k": "d", "k_max": "d", "seeds": "d", "solver_rel_diff": ".2e",
           "rel_diff_solver": ".2e"}
TABLE_FORMATS = {"growth_rates_solver": {"d": "d", "k": "d", "k_max": "d", "predicted": ".9e",
                                          "solver": ".9e", "rel_diff": ".2e",
                                          "rel_diff_eps1e-6": ".2e", "rel_diff_eps1e-10": ".2e",
                                          "extrap_rel_diff": ".2e", "extrap_abs_diff": ".2e"}}
PAGE_TABLES = {"growth_rates_solver": "The density solver, every mode (experiments/density.toml)"}


def run_value(data, name, point):
    """A run parameter: the sweep's coordinate when it is an axis, else the run's record."""
    if name in data.coords and name in data.modes.dims:
        return data[name].sel({name: point[name]}).item()
    return run_parameters(data, **point)[name]


def clock(scheme, times, beta, d, record):
    return np.array([closed.uniform_clock(scheme, float(t), beta, d, record["attention"],
                                          r0=float(record["r0"]), alpha=float(record["alpha"]),
                                          t_switch=float(record["t_switch"])) for t in times])


def fit_window(log_m, compared, growth=GROWTH, min_frames=MIN_FRAMES):
    """Number of frames of the fit window: up to the first frame where one of the compared
    modes (columns of log_m, time along rows) has grown by `growth` since frame 0."""
    rise = (log_m[:, compared] - log_m[0, compared]).max(axis=1)
    beyond = np.flatnonzero(rise >= growth)
    frames = (beyond[0] + 1) if beyond.size else log_m.shape[0]
    return max(frames, min(min_frames, log_m.shape[0]))


def slope(x, y):
    """Least-squares slope of y against x."""
    x = np.asarray(x, float) - np.mean(x)
    return float(np.dot(x, np.asarray(y, float) - np.mean(y)) / np.dot(x, x))


def measure(data, point):
    """(rates against tau, rates against t, t_end, predicted, compared) of one run."""
    record = run_parameters(data, **point)
    scheme = record["scheme"]
    beta, d = float(record["beta"]), int(record["d"])
    run = data.modes.sel(point).transpose("time", "mode")
    times = run.time.values
    log_m = np.log(run.values)
    keep = np.all(np.isfinite(log_m), axis=1)  # frames the run has
    times, log_m = times[keep], log_m[keep]
    modes = run.mode.values
    predicted = np.array([closed.growth_rate(int(k), beta, d, record["attention"]) for k in modes])
    compared = predicted >= MIN_RATE_FRACTION * predicted.max()
    frames = fit_window(log_m, compared)
    tau = clock(scheme, times[:frames], beta, d, record)
    against_tau = np.array([slope(tau, log_m[:frames, i]) / 2 for i in range(len(modes))])
    against_t = np.array([slope(times[:frames], log_m[:frames, i]) / 2 for i in range(len(modes))])
    return against_tau, against_t, float(times[frames - 1]), predicted, compared, (scheme, d, beta)


def table_of(data, group_axes):
    """Rows per (group, mode): the runs of each group are the seeds."""
    if not (data.status == 1).all():
        raise ValueError("the sweep has runs that did not complete")
    groups = [data[a].values for a in group_axes]
    rows = []
    for values in itertools.product(*groups):
        point = dict(zip(group_axes, (v.item() if hasattr(v, "item") else v for v in values)))
        runs = [measure(data, {**point, "seed": int(s)}) for s in data.seed.values]
        tau_rates = np.array([r[0] for r in runs])
        t_rates = np.array([r[1] for r in runs])
        t_end = np.mean([r[2] for r in runs])
        predicted, compared, (scheme, d, beta) = runs[0][3], runs[0][4], runs[0][5]
        k_max = closed.fastest_mode(beta, d)
        for i, k in enumerate(data.mode.values):
            if not compared[i]:
                continue
            measured = tau_rates[:, i].mean()
            rows.append({
                "scheme": scheme, "d": d, "beta": beta, "k": int(k), "k_max": k_max,
                "predicted": predicted[i], "measured": measured,
                "spread": tau_rates[:, i].std(ddof=1) if len(runs) > 1 else np.nan,
                "rel_diff": measured / predicted[i] - 1.0,
                "naive": t_rates[:, i].mean(),
                "t_end": t_end, "seeds": len(runs),
            })
    return pd.DataFrame(rows)


def amplitude(init):
    """EPS of a start "noise:EPS,KMAX", as written."""
    return init.split(":", 1)[1].split(",")[0]


def solver_rates(data):
    """{(d, beta, init): half the least-squares slope of log m_k against t over every frame,
    per mode} of the density sweep (post-ln: tau = t)."""
    if not (data.status == 1).all():
        raise ValueError("the density sweep has runs that did not complete (or outgrew their grid)")
    rates = {}
    for d, beta, init in itertools.product(data.d.values, data.beta.values, data.init.values):
        run = data.modes.sel(d=d, beta=beta, init=init).transpose("time", "mode")
        log_m = np.log(run.values)
        rates[int(d), float(beta), str(init)] = np.array(
            [slope(run.time.values, log_m[:, i]) / 2 for i in range(log_m.shape[1])])
    return rates


def solver_table(data, rates):
    """Per (d, beta, k), every mode: the solver's rate against lambda_k, from SOLVER_INIT and
    from the other amplitudes of the init axis; and the rate with the part proportional to
    the amplitude removed (the same seed draws the same xi at every amplitude, so the rate
    measured at EPS is lambda_k + c EPS + O(EPS^2) + round-off: two amplitudes give c)."""
    others = [str(i) for i in data.init.values if str(i) != SOLVER_INIT]
    larger = [i for i in others if float(amplitude(i)) > float(amplitude(SOLVER_INIT))]
    rows = []
    for d, beta in itertools.product(data.d.values, data.beta.values):
        d, beta = int(d), float(beta)
        for i, k in enumerate(data.mode.values):
            predicted = closed.growth_rate(int(k), beta, d)
            measured = rates[d, beta, SOLVER_INIT][i]
            row = {"d": d, "beta": beta, "k": int(k), "k_max": closed.fastest_mode(beta, d),
                   "predicted": predicted, "solver": measured,
                   "rel_diff": measured / predicted - 1.0}
            for init in others:
                row[f"rel_diff_eps{amplitude(init)}"] = rates[d, beta, init][i] / predicted - 1.0
            if larger:
                small, large = float(amplitude(SOLVER_INIT)), float(amplitude(larger[0]))
                linear = ((large * measured - small * rates[d, beta, larger[0]][i])
                          / (large - small))
                row["extrap_rel_diff"] = linear / predicted - 1.0
                row["extrap_abs_diff"] = linear - predicted
            rows.append(row)
    return pd.DataFrame(rows)


def reduce(data):
    rates = table_of(data["rates"], ["d", "beta"])
    schemes = table_of(data["schemes"], ["scheme"])
    schemes = schemes[schemes.scheme != "post-ln"]  # post-ln at beta = 5, d = 2 is in rates
    density = data["density"]
    if SOLVER_INIT not in [str(i) for i in density.init.values]:
        raise ValueError(f"the density sweep has no run from {SOLVER_INIT}")
    solver = solver_rates(density)
    position = {int(k): i for i, k in enumerate(density.mode.values)}
    rates["solver"] = [solver[int(r.d), float(r.beta), SOLVER_INIT][position[int(r.k)]]
                       for r in rates.itertuples()]
    rates["solver_rel_diff"] = rates.solver / rates.predicted - 1.0
    return {"growth_rates": pd.concat([rates, schemes], ignore_index=True),
            "growth_rates_solver": solver_table(density, solver)}


def figure(table, data, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(17, 4))
    post = table[table.scheme == "post-ln"]
    for ax, d in zip(axes[:2], (2, 3)):
        for beta, rows in post[post.d == d].groupby("beta"):
            ks = np.arange(1, 13)
            line = ax.plot(ks, [closed.growth_rate(int(k), beta, d) for k in ks], "-", lw=1)[0]
            ax.errorbar(rows.k, rows.measured, yerr=rows.spread.fillna(0), fmt="o",
                        color=line.get_color(), label=f"beta = {beta:g}")
        ax.set_title(f"post-ln, d = {d}: lines predicted, dots measured")
        ax.set_xlabel("mode k")
        ax.set_ylabel("growth rate lambda_k")
        ax.legend(fontsize=8)
    ax = axes[2]
    others = table[(table.d == 2) & (table.beta == 5)]
    for scheme, rows in others.groupby("scheme", sort=False):
        ax.plot(rows.k, rows.measured / rows.predicted, "o-", label=f"{scheme} (vs tau)")
        if scheme != "post-ln":
            ax.plot(rows.k, rows.naive / rows.predicted, "x:", color=ax.lines[-1].get_color(),
                    label=f"{scheme} (vs t)")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_title("d = 2, beta = 5: measured / predicted per scheme")
    ax.set_xlabel("mode k")
    ax.set_ylabel("ratio")
    ax.legend(fontsize=6, ncol=2)
    ax = axes[3]
    solver = solver_table(data["density"], solver_rates(data["density"]))
    for (d, beta), rows in solver.groupby(["d", "beta"]):
        ax.semilogy(rows.k, np.abs(rows.rel_diff), "o-" if d == 2 else "s--", ms=3, lw=0.8,
                    label=f"d = {d}, beta = {beta:g}")
    particles = table[table.scheme == "post-ln"]
    ax.semilogy(particles.k, np.abs(particles.rel_diff), "k.", alpha=0.4, label="particles")
    ax.set_title("|measured / predicted - 1|\ndensity solver (EPS = 1e-8) and particles",
                 fontsize=9)
    ax.set_xlabel("mode k")
    ax.legend(fontsize=5, ncol=2, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
