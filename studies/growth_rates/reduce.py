"""Mode growth rates of the uniform measure: particles and the density solver against the
mean-field linearisation."""
import itertools

import numpy as np
import pandas as pd

import nadyn.closed_forms as closed
from nadyn import stats
from nadyn.study import run_parameters

TITLE = ("Growth rates of the modes from a uniform start: particles and the density solver "
         "against the mean-field rates")
# The quick form: 1024 tokens, one seed (the agreement is then only to ~10-20 %: the
# neglected quadratic terms scale like k_max / sqrt(n)); the density solver's experiment takes
# well under a second as it is, and runs whole.
QUICK = ["rates:run.n=1024", "rates:sweep.seed.range=[1,1]",
         "schemes:run.n=1024", "schemes:sweep.seed.range=[1,1]",
         "dimensions:run.n=512", "dimensions:sweep.seed.range=[1,1]"]
# The density solver's start whose rates fill the `solver` columns (experiments/density.toml):
# white noise of amplitude 1e-8 in every degree 1..12. The others of its init axis show how
# the difference scales with the amplitude.
SOLVER_INIT = "noise:1e-8,12"
# The fit window: the fast modes (predicted rate at least MIN_RATE_FRACTION of the fastest)
# set the clock of the nonlinearity. A mode k's window ends at the first frame where the
# fastest of them has grown in m by GROWTH * lambda_max / (2 lambda_max - lambda_k) (in log m):
# the quadratic terms feed mode k from two fast modes, so relative to k's own linear part they
# grow like exp((2 lambda_max - lambda_k) tau) (docs/model.md §13.4); every mode is stopped
# when that relative part has grown as much as the fastest mode's own at log-growth GROWTH.
GROWTH = 2.0
MIN_RATE_FRACTION = 0.5
# Every mode up to COMPARE_UP_TO * k_max is compared (and at most the recorded mode_count).
COMPARE_UP_TO = 2
MIN_FRAMES = 4
NOTE = f"""\
`predicted`: lambda_k of docs/model.md §13 (softmax, identity weights; the amplitude of the
degree-k part grows like exp(lambda_k tau), with tau the scheme's clock at the uniform state,
§13.3: tau = t for post-ln). `measured`: half the least-squares slope of log m_k against tau
over the mode's window, mean over the seeds with its standard error `sem` and 95 % t interval
[`low`, `high`] (`seeds` runs). `own_weight`: the factor n independent uniform tokens see
on every rate, (n - 1) w_0 / ((n - 1) w_0 + e^beta) (docs/model.md §13.5: a token's own atom
weighs e^beta in its softmax denominator and moves nothing); `predicted_n` = own_weight
lambda_k, the rate of these n tokens, and `rel_diff_n` = measured / predicted_n - 1. Every mode k <= {COMPARE_UP_TO} k_max is compared; `class`
is `fast` when its predicted rate is at least {MIN_RATE_FRACTION:g} of the fastest, else
`slow`. Each mode has its own window, from t = 0 to the first frame where the fastest fast
mode has grown in m by exp({GROWTH:g} lambda_max / (2 lambda_max - lambda_k)) (at least
{MIN_FRAMES} frames; `t_end`: the window's end, mean over the seeds): the quadratic terms feed
a mode from two fast ones, so relative to its own growth they grow like
exp((2 lambda_max - lambda_k) tau), faster for a slower mode. `diff_max` = (measured -
predicted) / lambda_max, the difference in units of the fastest rate (for slow modes, whose
relative difference divides by a small number). `naive`
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
PAGE_TABLES = {
    "growth_rates_agreement": "Agreement, fast and slow modes apart",
    "growth_rates_sensitivity": "The window's thresholds halved and doubled (post-ln's rows)",
    "growth_rates_solver": "The density solver, every mode (experiments/density.toml)"}


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


def mode_growth(rate, fastest, growth=GROWTH):
    """The fast modes' log-growth at which mode k's window ends: growth lambda_max /
    (2 lambda_max - lambda_k) (growth itself for the fastest mode, growth / 2 for lambda_k = 0)."""
    return growth * fastest / (2.0 * fastest - rate)


def slope(x, y):
    """Least-squares slope of y against x."""
    x = np.asarray(x, float) - np.mean(x)
    return float(np.dot(x, np.asarray(y, float) - np.mean(y)) / np.dot(x, x))


def measure(data, point, growth=GROWTH, fraction=MIN_RATE_FRACTION):
    """(rates against tau, rates against t, window ends, predicted, fast, (scheme, d, beta))
    of one run, every mode with its own window."""
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
    fast = predicted >= fraction * predicted.max()
    tau = clock(scheme, times, beta, d, record)
    against_tau, against_t, ends = [], [], []
    for i in range(len(modes)):
        frames = fit_window(log_m, fast, mode_growth(predicted[i], predicted.max(), growth))
        against_tau.append(slope(tau[:frames], log_m[:frames, i]) / 2)
        against_t.append(slope(times[:frames], log_m[:frames, i]) / 2)
        ends.append(float(times[frames - 1]))
    own = closed.own_weight_factor(int(record["n"]), beta, d, record["attention"])
    return (np.array(against_tau), np.array(against_t), np.array(ends), predicted, fast,
            (scheme, d, beta), own)


def table_of(data, group_axes, growth=GROWTH, fraction=MIN_RATE_FRACTION):
    """Rows per (group, mode k <= COMPARE_UP_TO k_max): the runs of each group are the seeds."""
    if not (data.status == 1).all():
        raise ValueError("the sweep has runs that did not complete")
    groups = [data[a].values for a in group_axes]
    rows = []
    for values in itertools.product(*groups):
        point = dict(zip(group_axes, (v.item() if hasattr(v, "item") else v for v in values)))
        runs = [measure(data, {**point, "seed": int(s)}, growth, fraction)
                for s in data.seed.values]
        tau_rates = np.array([r[0] for r in runs])
        t_rates = np.array([r[1] for r in runs])
        ends = np.array([r[2] for r in runs])
        predicted, fast, (scheme, d, beta), own = runs[0][3], runs[0][4], runs[0][5], runs[0][6]
        k_max = closed.fastest_mode(beta, d)
        for i, k in enumerate(data.mode.values):
            if int(k) > COMPARE_UP_TO * k_max:
                continue
            interval = stats.mean_interval(tau_rates[:, i])
            rows.append({
                "scheme": scheme, "d": d, "beta": beta, "k": int(k), "k_max": k_max,
                "class": "fast" if fast[i] else "slow",
                "predicted": predicted[i], "measured": interval.mean,
                "sem": interval.sem, "low": interval.low, "high": interval.high,
                "rel_diff": interval.mean / predicted[i] - 1.0,
                "diff_max": (interval.mean - predicted[i]) / predicted.max(),
                "own_weight": own, "predicted_n": own * predicted[i],
                "rel_diff_n": interval.mean / (own * predicted[i]) - 1.0,
                "naive": t_rates[:, i].mean(),
                "t_end": ends[:, i].mean(), "seeds": len(runs),
            })
    return pd.DataFrame(rows)


def agreement(table):
    """Per scheme group (post-ln's rates; the other schemes) and class: how many rows, the
    median, third quartile and largest |rel_diff| and |diff_max|, and how many rows have the
    prediction inside the 95 % interval of the measured mean."""
    rows = []
    group = np.where(table.scheme != "post-ln", "other schemes (beta = 5, d = 2)",
                     np.where(table.d <= 3, "post-ln (rates)", "post-ln, d = 16, 64 (dimensions)"))
    table = table.assign(group=group)
    for (group, kind), part in table.groupby(["group", "class"], sort=False):
        rel, dmax = part.rel_diff.abs(), part.diff_max.abs()
        inside = ((part.low <= part.predicted) & (part.predicted <= part.high)).sum()
        inside_n = ((part.low <= part.predicted_n) & (part.predicted_n <= part.high)).sum()
        rel_n = part.rel_diff_n.abs()
        rows.append({"rows of": group, "class": kind, "rows": len(part),
                     "median |rel_diff|": rel.median(), "q3 |rel_diff|": rel.quantile(0.75),
                     "max |rel_diff|": rel.max(), "median |diff_max|": dmax.median(),
                     "max |diff_max|": dmax.max(),
                     "predicted in 95% interval": f"{inside}/{len(part)}",
                     "median |rel_diff_n|": rel_n.median(), "max |rel_diff_n|": rel_n.max(),
                     "predicted_n in 95% interval": f"{inside_n}/{len(part)}"})
    return pd.DataFrame(rows)


def sensitivity(data):
    """The agreement of post-ln's rows with GROWTH and MIN_RATE_FRACTION each halved and
    doubled (the other at its value)."""
    rows = []
    for name, value in (("GROWTH", GROWTH), ("MIN_RATE_FRACTION", MIN_RATE_FRACTION)):
        for factor in (0.5, 2.0):
            growth = GROWTH * factor if name == "GROWTH" else GROWTH
            fraction = MIN_RATE_FRACTION * factor if name != "GROWTH" else MIN_RATE_FRACTION
            table = table_of(data, ["d", "beta"], growth, fraction)
            for row in agreement(table).to_dict("records"):
                rows.append({"threshold": f"{name} x{factor:g} = {value * factor:g}", **row})
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
    # d = 16 and 64 (experiments/dimensions.toml): particles only, the density solver has
    # the circle and S^2.
    dimensions = table_of(data["dimensions"], ["d", "beta"])
    table = pd.concat([rates, dimensions, schemes], ignore_index=True)
    return {"growth_rates": table,
            "growth_rates_agreement": agreement(table),
            "growth_rates_sensitivity": pd.concat(
                [sensitivity(data["rates"]), sensitivity(data["dimensions"])], ignore_index=True),
            "growth_rates_solver": solver_table(density, solver)}


def rates_panel(ax, post, d, closed):
    """Predicted lambda_k (lines) and the measured means with their 95 % intervals (dots),
    post-ln in dimension d, one colour per beta."""
    dashed = False
    for beta, rows in post[post.d == d].groupby("beta"):
        ks = np.arange(1, 13)
        rates = np.array([closed.growth_rate(int(k), beta, d) for k in ks])
        line = ax.plot(ks, rates, "-", lw=1)[0]
        own = float(rows.own_weight.iloc[0])
        if own < 0.99:  # the rate these n tokens see (docs/model.md §13.5), where it differs
            ax.plot(ks, own * rates, "--", lw=1, color=line.get_color())
            dashed = True
        ax.errorbar(rows.k, rows.measured,
                    yerr=[(rows.measured - rows.low).fillna(0),
                          (rows.high - rows.measured).fillna(0)], fmt="o",
                    color=line.get_color(), label=f"beta = {beta:g}")
    ax.set_title(f"post-ln, d = {d}: lines lambda_k, dots measured"
                 + ("\ndashed: own_weight x lambda_k (n tokens)" if dashed else ""),
                 fontsize=9 if dashed else None)
    ax.set_xlabel("mode k")
    ax.set_ylabel("growth rate lambda_k")
    ax.legend(fontsize=8)


def figure(table, data, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 6, figsize=(25, 4))
    post = table[table.scheme == "post-ln"]
    panels = (2, 3, 16, 64)
    for ax, d in zip(axes[:2], panels[:2]):
        rates_panel(ax, post, d, closed)
    for ax, d in zip(axes[4:], panels[2:]):
        rates_panel(ax, post, d, closed)
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
