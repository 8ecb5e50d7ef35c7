"""The mean-field limit: n particles against the density solver, against n and t."""
import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats

import nadyn
import nadyn.closed_forms as closed
import nadyn.stats as nstats

TITLE = "n particles against their mean-field density: W1 against n and t, and when they leave it"
# This study runs no sweep: each start's density is solved once (nadyn.meanfield), the
# particles run in-process (nadyn.simulate) and nadyn.compare gives the exact circular W1 at
# every common frame. Lists indexed like `n`: `seeds` (runs per n) and `horizon` (each run's
# T; 0: the start only, for the n whose dynamics is too dear: see README.md).
PARAMETERS = {
    "starts": ["uniform", "perturbed:3,0.05"],
    "n": [256, 1024, 4096, 16384, 65536],
    "seeds": [16, 16, 16, 16, 16],
    "horizon": [8.0, 8.0, 8.0, 8.0, 0.0],
    "beta": 5.0,
    "dt": 0.1,             # rk4 step of the particles
    "frame_step": 0.5,     # frames of both, every this much time
    "points": 4096,        # the density's circle grid
    "resolution_tol": 1e-6,
    "threshold": 0.1,      # w*: a run has left the density when its W1 first reaches w*
}
# The quick form: the start only, 16 seeds at n = 256, 1024, 4096, and n = 256 run to t = 3
# so that every code path runs (about 13 s on two shared cores).
QUICK = ["n=[256, 1024, 4096]", "seeds=[16, 16, 16]", "horizon=[3.0, 0.0, 0.0]"]
# The sensitivity rows of the departure time: w* times these.
THRESHOLD_FACTORS = (0.5, 1.0, 2.0)
# The times of the rate table (the W1 table has every frame).
RATE_TIMES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
PAGE_TABLES = {"mean_field_limit_rate": "The rate: slope of log W1 against log n at each time",
               "mean_field_limit_departure": "When the particles leave the density, per n",
               "mean_field_limit_departure_fit":
                   "The departure time against log(n) / lambda_max (expected slope 1/2)",
               "mean_field_limit_density": "The density runs"}
FORMATS = {"n": "d", "runs": "d", "reached": "d", "started_above": "d", "censored": "d",
           "n_count": "d", "n_from": "d", "n_to": "d", "points": "d"}
NOTE = """\
`w1_mean`: the exact W1 on the circle (arc length) between the n particles' empirical
measure and the density solver's density at time t (`nadyn.compare`), mean over the `runs`;
`w1_sem` its standard error, `w1_low`, `w1_high` its 95 % Student-t interval (none from fewer
than 2 runs);
`sqrt_n_w1`: sqrt(n) w1_mean, which is constant in n where W1 falls like n^-1/2.
Post-ln, beta = 5, d = 2, identity weights, softmax; particles i.i.d. from the start's
density (`--init`), rk4 with dt = 0.1; the density on the grid of `points` nodes.

The departure (below): `t_leave_median` is the Kaplan-Meier median of the time W1 first
reaches the threshold w* over all `runs` (a run that starts at or above w* an event at 0, one
that never reaches it censored at its horizon), with its Brookmeyer-Crowley 95 % interval
("> T": beyond the horizon); `t_leave_mean` and its interval are over the `reached` runs only
(those that start below w* and reach it). The fit: `verdict` says whether the slope's 95 %
interval holds the predicted 1/2, `same` whether that verdict is the one at w* = 0.1 (the
rows at 0.05 and 0.2 are the sensitivity rows).
"""

_LAST = {}  # reduce()'s extra tables, for figure() (called right after it, same process)


def student_interval(values):
    """(mean, low, high): the mean and its 95 % Student-t interval (nadyn.stats.mean_interval)."""
    found = nstats.mean_interval(values)
    return found.mean, found.low, found.high


def slope_fit(x, y):
    """Least squares y = a + b x over the points; b, its 95 % interval and a."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 3 or np.ptp(x) == 0:
        return math.nan, math.nan, math.nan, math.nan
    fit = stats.linregress(x, y)
    half = stats.t.ppf(0.975, x.size - 2) * fit.stderr
    return fit.slope, fit.slope - half, fit.slope + half, fit.intercept


def departure(times, w1, threshold):
    """The first time W1 reaches `threshold`, interpolated linearly in log W1 between the
    frames; 0 when the run starts at or above it, NaN when it never reaches it."""
    if w1[0] >= threshold:
        return 0.0
    above = np.nonzero(w1 >= threshold)[0]
    if above.size == 0:
        return math.nan
    j = above[0]
    a, b = math.log(w1[j - 1]), math.log(w1[j])
    return float(times[j - 1] + (times[j] - times[j - 1]) * (math.log(threshold) - a) / (b - a))


def stats_verdict(fits):
    """The verdict at a threshold w*: whether the fitted slope's 95 % interval holds the
    predicted 1/2 ("no fit" with fewer than three runs below w* / 2 at the start)."""
    def verdict(threshold):
        slope, low, high = next(v for w, v in fits.items() if math.isclose(w, threshold))
        if math.isnan(slope):
            return "no fit"
        return "holds 1/2" if low <= 0.5 <= high else "excludes 1/2"
    return verdict


def check(parameters):
    count = len(parameters["n"])
    for key in ("seeds", "horizon"):
        if len(parameters[key]) != count:
            raise ValueError(f"{key} must have one entry per n ({count}), got {parameters[key]!r}")
    if not all(isinstance(n, int) and n >= 2 for n in parameters["n"]):
        raise ValueError(f"n must be integers >= 2, got {parameters['n']!r}")
    if not all(isinstance(s, int) and s >= 1 for s in parameters["seeds"]):
        raise ValueError(f"seeds must be positive integers, got {parameters['seeds']!r}")
    if any(h < 0 for h in parameters["horizon"]) or parameters["frame_step"] <= 0:
        raise ValueError("horizon must be >= 0 and frame_step > 0")


def solve_density(start, parameters, horizon):
    """The start's density to `horizon` (at least one frame step), frames every frame_step;
    an unresolved run keeps its resolved frames."""
    step = parameters["frame_step"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # unresolved: recorded in attrs
        return nadyn.meanfield(beta=parameters["beta"], points=parameters["points"], init=start,
                               T=max(horizon, step), dt=step / 10, every=10,
                               resolution_tol=parameters["resolution_tol"], rtol=1e-11,
                               atol=1e-13)


def particle_w1(start, n, seed, horizon, density, parameters):
    """W1 at the density's frame times up to `horizon` (the start only when horizon = 0)."""
    times = density["time"].values
    if horizon == 0:
        # One Euler step: the run exists only to draw the start (its frame at t = 0).
        run = nadyn.simulate(scheme="post-ln", d=2, n=n, beta=parameters["beta"], T=0.01,
                             dt=0.01, integrator="euler", init=start, seed=seed,
                             observables="none", frame_times="0")
        return times[:1], nadyn.compare(run, density.isel(time=[0])).values
    frames = times[times <= horizon + 1e-9]
    run = nadyn.simulate(scheme="post-ln", d=2, n=n, beta=parameters["beta"], T=horizon,
                         dt=parameters["dt"], init=start, seed=seed, observables="none",
                         frame_times=",".join(repr(float(t)) for t in frames))
    w1 = nadyn.compare(run, density)
    return w1["time"].values, w1.values


def reduce(parameters):
    check(parameters)
    beta = parameters["beta"]
    lam = closed.growth_rate(closed.fastest_mode(beta, 2), beta, 2, "softmax")
    w1_rows, rate_rows, departure_rows, fit_rows, density_rows = [], [], [], [], []
    for start in parameters["starts"]:
        density = solve_density(start, parameters, max(parameters["horizon"]))
        density_rows.append({"start": start, "points": parameters["points"],
                             "status": density.attrs.get("status"),
                             "last_time": float(density["time"].values[-1]),
                             "peaks_at_last": int(density["peaks"].values[-1]),
                             "max_density_at_last": float(density["density"].values[-1].max())})
        runs = {}  # n -> list of (times, w1)
        for n, seeds, horizon in zip(parameters["n"], parameters["seeds"], parameters["horizon"]):
            runs[n] = [particle_w1(start, n, seed, horizon, density, parameters)
                       for seed in range(1, seeds + 1)]
            times = runs[n][0][0]
            for j, t in enumerate(times):
                found = nstats.mean_interval([w1[j] for _, w1 in runs[n]])
                w1_rows.append({"start": start, "n": n, "t": round(float(t), 9),
                                "runs": found.n, "w1_mean": found.mean, "w1_sem": found.sem,
                                "w1_low": found.low, "w1_high": found.high,
                                "sqrt_n_w1": math.sqrt(n) * found.mean})
        # The rate: log W1 against log n over every run with a frame at t.
        for t in RATE_TIMES:
            x, y, ns = [], [], set()
            for n, series in runs.items():
                for times, w1 in series:
                    hit = np.nonzero(np.abs(times - t) <= 1e-9)[0]
                    if hit.size:
                        x.append(math.log(n))
                        y.append(math.log(w1[hit[0]]))
                        ns.add(n)
            if len(ns) < 2:
                continue
            slope, low, high, _ = slope_fit(x, y)
            rate_rows.append({"start": start, "t": t, "n_from": min(ns), "n_to": max(ns),
                              "n_count": len(ns), "runs": len(x), "slope": slope,
                              "slope_low": low, "slope_high": high})
        # The departure: first time W1 reaches the threshold, against log(n) / lambda_max.
        fits = {}  # threshold -> (slope, low, high)
        for factor in THRESHOLD_FACTORS:
            threshold = factor * parameters["threshold"]
            fit_x, fit_y = [], []
            for n, series in runs.items():
                if series[0][0].size < 2:
                    continue  # the start only: no dynamics
                found = [departure(times, w1, threshold) for times, w1 in series]
                above = sum(1 for f in found if f == 0.0)
                reached = [f for f in found if not math.isnan(f) and f > 0.0]
                mean, low, high = (student_interval(reached) if reached
                                   else (math.nan, math.nan, math.nan))
                # Kaplan-Meier over every run: a run that starts above is an event at 0, one
                # that never reaches the threshold is censored at its horizon.
                horizon = float(series[0][0][-1])
                median = nstats.km_median([horizon if math.isnan(f) else f for f in found],
                                          [not math.isnan(f) for f in found])
                # A run that starts within a factor 2 of the threshold has no linear phase
                # to measure before it: left out of the fit.
                starts_low = [f for f, (_, w1) in zip(found, series)
                              if not math.isnan(f) and w1[0] < threshold / 2]
                fit_x += [math.log(n) / lam] * len(starts_low)
                fit_y += starts_low
                departure_rows.append({
                    "start": start, "threshold": threshold, "n": n, "runs": len(series),
                    "started_above": above, "reached": len(reached),
                    "censored": len(series) - above - len(reached),
                    "horizon": float(series[0][0][-1]), "log_n_over_lambda": math.log(n) / lam,
                    "t_leave_median": nstats.median_text(median, 3),
                    "t_leave_mean": mean, "t_leave_low": low, "t_leave_high": high})
            slope, low, high, intercept = slope_fit(fit_x, fit_y)
            fits[threshold] = (slope, low, high)
            used = sorted({round(math.exp(x * lam)) for x in fit_x})
            fit_rows.append({"start": start, "threshold": threshold,
                             "n_from": used[0] if used else 0, "n_to": used[-1] if used else 0,
                             "runs": len(fit_x), "slope": slope, "slope_low": low,
                             "slope_high": high, "intercept": intercept, "expected_slope": 0.5})
        # The verdict on the slope 1/2 at w* and with w* halved and doubled (nadyn.stats).
        verdict = stats_verdict(fits)
        for row, (_, found) in zip(fit_rows[-len(THRESHOLD_FACTORS):],
                                   nstats.sensitivity(verdict, parameters["threshold"],
                                                      THRESHOLD_FACTORS).iterrows()):
            row["verdict"], row["same"] = found["verdict"], bool(found["same"])
    tables = {"mean_field_limit": pd.DataFrame(w1_rows),
              "mean_field_limit_rate": pd.DataFrame(rate_rows),
              "mean_field_limit_departure": pd.DataFrame(departure_rows),
              "mean_field_limit_departure_fit": pd.DataFrame(fit_rows),
              "mean_field_limit_density": pd.DataFrame(density_rows)}
    tables["mean_field_limit_density"]["lambda_max"] = lam
    _LAST.clear()
    _LAST.update(tables)
    return tables


def figure(table, parameters, path):
    import matplotlib.pyplot as plt

    starts = list(dict.fromkeys(table.start))
    fig, axes = plt.subplots(1, len(starts) + 1, figsize=(5.0 * (len(starts) + 1), 4.0))
    for axis, start in zip(axes, starts):
        for n, rows in table[table.start == start].groupby("n"):
            if len(rows) < 2:
                continue
            axis.fill_between(rows.t, rows.w1_low, rows.w1_high, alpha=0.25)
            axis.plot(rows.t, rows.w1_mean, marker=".", label=f"n = {n}")
        axis.axhline(parameters["threshold"], color="grey", linestyle=":", label="w*")
        axis.set_yscale("log")
        axis.set_xlabel("t")
        axis.set_ylabel("W1(particles, density)")
        axis.set_title(f"start {start}: mean and 95 % interval")
        axis.legend(fontsize=8)
    axis = axes[-1]
    departures = _LAST.get("mean_field_limit_departure")
    if departures is not None and len(departures):
        rows = departures[np.isclose(departures.threshold, parameters["threshold"])]
        for start, group in rows.groupby("start", sort=False):
            axis.errorbar(group.log_n_over_lambda, group.t_leave_mean,
                          yerr=[group.t_leave_mean - group.t_leave_low,
                                group.t_leave_high - group.t_leave_mean],
                          marker="o", capsize=3, label=start)
        lam = float(_LAST["mean_field_limit_density"].lambda_max.iloc[0])
        x = np.linspace(math.log(128) / lam, math.log(1 << 17) / lam, 2)
        fits = _LAST["mean_field_limit_departure_fit"]
        fits = fits[np.isclose(fits.threshold, parameters["threshold"])]
        for _, fit in fits.iterrows():
            if not math.isnan(fit.slope):
                axis.plot(x, fit.intercept + fit.slope * x, linestyle="--",
                          label=f"{fit.start}: slope {fit.slope:.2f}")
    axis.set_xlabel("log(n) / lambda_max")
    axis.set_ylabel(f"t at which W1 reaches w* = {parameters['threshold']:g}")
    axis.set_title("departure from the density")
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
