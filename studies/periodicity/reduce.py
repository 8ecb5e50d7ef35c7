"""The periodicity of the first metastable state against the fastest mode k_max(beta)."""
import numpy as np
import pandas as pd

from scipy.optimize import brentq
from scipy.stats import fisher_exact

import nadyn
import nadyn.closed_forms as closed
import nadyn.stats as stats

TITLE = "Periodicity of the first metastable state: dominant mode and clusters against k_max(beta)"
# The quick form: small n, one beta on the circle, two seeds; it applies to the particle
# experiments alike (run.T stays: the schemes' frame times run to their own horizon). The
# density's: beta = 5 and 20 on a grid of 1024 points (which follows the bumps for about one
# time unit less than 4096), two seeds.
QUICK = ([f"{e}:{s}" for e in ("plateaus", "fast", "slow")
          for s in ("run.n=512", "sweep.d=[2]", "sweep.beta=[5]")]
         + ["sweep.seed.range=[1,2]", "density:sweep.beta=[5,20]", "density:run.points=1024"])
# The schemes that are post-ln on another clock whatever the configuration: a speed divisor
# common to all tokens and independent of the state (docs/model.md §2.6, §2.7).
PURE_TIME_CHANGES = ("post-ln", "sqrt-scaling")
# The linear phase ends when the largest mode reaches this value (an amplitude of ~0.2,
# before the nonlinear terms have filled in the harmonics 2k, 3k, ... of the winner).
DOMINANT_LEVEL = 0.05
# A plateau: a maximal run of frames with the same cluster count lasting at least this long,
# after the linear phase has ended (the count of a dense uniform start can sit still too).
PLATEAU_LENGTH = 3.0
# The density's first metastable state: its peak count (the `peaks` observable, strict local
# maxima above twice the uniform density) on the run's last frames, once it has held for at
# least this long before the run stopped (a formed bump narrows like exp(-t) and its peak
# rises like exp(t): over one time unit every counted bump has risen e-fold). A run whose
# count changed less than STABLE before it stopped, or that never had a peak, is censored.
STABLE = 1.0
# Peaks of the final density closer than the particles' single-linkage distance (cluster_eps
# = 1e-3: cosine >= 1 - 1e-3, an angle of 0.0447) form one group: the density's analogue of
# the particles' cluster count, which merges the sub-peaks a noisy start leaves inside a bump.
GROUP_ANGLE = float(np.arccos(1.0 - 1e-3))
# The start whose runs give the n = infinity columns (experiments/density.toml): EPS = 1e-4,
# n = 1e8 tokens' worth of noise.
INFINITE_N = "noise:1e-4,24"
# The finite-n test: the particles' fraction of seeds whose mode is k_max against the
# density's (the same noise, EPS = 1/32, and n = infinity, EPS = 1e-4), Fisher's exact test;
# a difference is reported where p < ALPHA (with ALPHA halved and doubled: the sensitivity
# rows). 0.05 is the usual level; nine betas are tested, so about one false difference in
# two such tables is expected by chance at 0.05, none in ten at 0.05 / 9 (Bonferroni).
ALPHA = 0.05
FINITE_N = "noise:0.03125,24"  # the density with the noise of n = 1024 tokens
FORMATS = {"d": "d", "k_max": "d", "seeds": "d", "plateaus": "d", "censored_inf": "d",
           "no_plateau": "d",
           "censored": "d", "n_equiv": ".4g"}
# The rows per scheme (point 5 of the claim) on the page as well as in their CSV.
PAGE_TABLES = {"periodicity_density": "The density, n = infinity and n = 1024 (d = 2; experiments/density.toml)",
               "periodicity_finite_n": "Finite n: the particles against the density (d = 2)",
               "periodicity_sensitivity": "Sensitivity: each threshold halved and doubled",
               "periodicity_schemes": "Per scheme (d = 2, beta = 5; experiments fast.toml and slow.toml)"}
NOTE = f"""\
Per run: the dominant mode is argmax_k m_k at the first frame where max_k m_k >=
{DOMINANT_LEVEL:g} (the end of the linear phase); the plateau count is the cluster count
(single linkage at cluster_eps = 1e-3) on the first plateau (at least {PLATEAU_LENGTH:g} time
units of constant count) that starts after that frame. `mode` and `clusters` are histograms
of the seeds' values ("3x14 4x2": fourteen seeds at 3, two at 4; "-": no plateau by T = 30,
counted in `no_plateau`); `mode_agree`: the fraction of seeds whose mode is k_max,
`clusters_agree` the fraction of the seeds with a plateau whose count is k_max,
`mode_within_1` the fraction within one of it. On S^2
the number of clusters of a degree-k state is not k, so only the mode is compared there.
`*_95`: Wilson 95 % intervals of the fractions; `t_linear`: the mean end of the linear phase
+- its standard error [95 % Student-t interval].

The n = infinity columns (`*_inf`, d = 2): the density solver (experiments/density.toml)
from white noise of amplitude EPS = 1e-4 in the modes 1..24, 16 seeds. `mode_agree_inf`:
the fraction of seeds whose dominant mode (as above, from the density's m_k) is k_max;
`peaks_agree_inf`: the fraction of the uncensored seeds whose first metastable state has
k_max peaks, its count being the `peaks` observable (strict local maxima of the density
above twice the uniform level) on the run's last frames, provided it has held for at least
{STABLE:g} time unit before the run stopped (every run stops when its bumps have narrowed past
what the grid of 4096 points holds); `censored_inf`: the seeds whose count changed less than
{STABLE:g} before the stop, or that never had a peak. `clusters_eq_mode`: the fraction of
seeds whose plateau count equals their own dominant mode.

`periodicity_density.csv`, on this page below: the density's values per amplitude, EPS =
1e-4 (n_equiv = 1/EPS^2 = 1e8) and EPS = 1/32 (the noise of n = 1024 tokens), as histograms
over the 16 seeds ("4x12 5x4": twelve seeds at 4, four at 5; "-": censored);
`peaks_agree` over the uncensored seeds, `peaks_eq_mode` the fraction of those whose count
equals their own dominant mode, `held_min` the shortest time a run's last count held.
`groups`: the peaks of each run's last (resolved) density joined when closer than the
particles' single-linkage distance (angle {GROUP_ANGLE:.4f}, cluster_eps = 1e-3), the density's
analogue of the particles' cluster count; `groups_agree` its fraction equal to k_max.

`periodicity_finite_n.csv`, on this page below: per beta on the circle, the seeds whose
dominant mode is k_max among the n = 1024 particles (16 seeds), the density with their noise
level (EPS = 1/32, `density_same_noise`) and the density at n = infinity (EPS = 1e-4), and
the two-sided p-value of Fisher's exact test of the particles against each (`p_same_noise`,
`p_infinite`). `periodicity_sensitivity.csv`: each threshold a verdict depends on, halved and
doubled, with the betas (circle) where the verdict holds: ALPHA = {ALPHA:g} (the betas where
the particles differ from the density at p < ALPHA), DOMINANT_LEVEL (the betas where most
particle seeds' mode is k_max), PLATEAU_LENGTH (where most seeds' plateau count is k_max),
STABLE (where most density seeds at EPS = 1e-4 have k_max peaks); `same`: the verdict is the
one at the threshold itself.

`periodicity_schemes.csv` (experiments/fast.toml and slow.toml): the same measurement for every scheme
on the circle, the plateau's length taken on the scheme's clock at the uniform state
tau(t) (docs/model.md §13.3), so that "3 time units" means the same for every scheme.
`clusters` lists the seeds' plateau counts ("-": no plateau by the horizon T; `plateaus`
counts the others), `clusters_agree` and `same_as_post_ln` the fractions of those seeds
whose count equals k_max and post-ln's for the same seed (same start), `t_plateau` the mean start of the
plateau in the scheme's own time and `t_predicted` post-ln's start moved to the scheme's
clock (t with tau(t) = post-ln's start, per seed, then averaged); `rel_diff` the mean of
t_plateau / t_predicted - 1 over the seeds with a plateau, `rel_diff_95` with its standard
error and 95 % interval (four seeds: below the standard, README.md). `time_change`: the scheme is post-ln on another
clock for every configuration (sqrt-scaling); the others share post-ln's clock only while
the tokens are uniform.
"""


def first_long_plateau(times, counts, start, length=PLATEAU_LENGTH):
    """(start, end, count) of the first plateau (nadyn.plateaus, docs/model.md §5.3: a maximal
    run of equal counts lasting at least `length`, its end the first frame at another count)
    of the series from frame `start` on; None if there is none."""
    table = nadyn.plateaus(times[start:], counts[start:], plateau_min=float(length))
    if table.sizes["plateau"] == 0:
        return None
    return float(table.start[0]), float(table.end[0]), int(table.clusters[0])


def measure(modes, clusters, times, level=DOMINANT_LEVEL, length=PLATEAU_LENGTH):
    """(dominant mode, plateau count, t of the linear phase's end) of one run."""
    ok = np.isfinite(clusters)
    times, modes, clusters = times[ok], modes[ok], clusters[ok]
    peak = modes.max(axis=1)
    above = np.flatnonzero(peak >= level)
    if above.size == 0:
        return np.nan, np.nan, np.nan
    frame = above[0]
    dominant = int(np.argmax(modes[frame])) + 1
    plateau = first_long_plateau(times, clusters, frame, length)
    return dominant, (plateau[2] if plateau else np.nan), float(times[frame])


def wilson(successes, trials):
    """The Wilson score interval (lo, hi) of a binomial fraction (nadyn.stats); (nan, nan) for
    no trials."""
    return stats.proportion_interval(successes, trials)


def interval(successes, trials):
    lo, hi = wilson(successes, trials)
    return "-" if np.isnan(lo) else f"{lo:.2f}-{hi:.2f}"


def histogram(values):
    """Seeds' values as "value x count", most frequent first ("-": censored or none)."""
    labels = ["-" if np.isnan(v) else str(int(v)) for v in values]
    counts = pd.Series(labels).value_counts(sort=False)
    order = sorted(counts.index, key=lambda v: (-counts[v], v == "-", int(v) if v != "-" else 0))
    return " ".join(f"{v}x{counts[v]}" for v in order)


def density_measure(times, modes, peaks, stable=STABLE, level=DOMINANT_LEVEL):
    """(dominant mode, peak count of the first metastable state or nan (censored), t at the
    end of the linear phase, how long the last count held before the run stopped) of one
    density run; its frames are those up to its last resolved one."""
    ok = np.isfinite(peaks)
    times, modes, peaks = times[ok], modes[ok], peaks[ok]
    above = np.flatnonzero(modes.max(axis=1) >= level)
    if above.size == 0:
        return np.nan, np.nan, np.nan, np.nan
    dominant = int(np.argmax(modes[above[0]])) + 1
    changed = np.flatnonzero(peaks != peaks[-1])
    start = times[changed[-1] + 1] if changed.size else times[0]
    held = float(times[-1] - start)
    count = float(peaks[-1]) if held >= stable and peaks[-1] >= 1 else np.nan
    return dominant, count, float(times[above[0]]), held


def peak_groups(density, floor=2.0, angle=GROUP_ANGLE):
    """The number of groups of the density's peaks on the circle's equispaced grid (strict
    local maxima above `floor`, as the `peaks` observable), peaks closer than `angle` (along
    the circle) joined by single linkage; nan for a density with no peak."""
    rho = np.asarray(density, float)
    if not np.isfinite(rho).all():
        return np.nan
    n = len(rho)
    where = np.flatnonzero((rho > np.roll(rho, 1)) & (rho > np.roll(rho, -1)) & (rho > floor))
    if where.size == 0:
        return np.nan
    positions = 2 * np.pi * where / n
    gaps = np.diff(np.concatenate([positions, [positions[0] + 2 * np.pi]]))
    return float(max(1, np.sum(gaps > angle)))


def density_runs(data, stable=STABLE, level=DOMINANT_LEVEL):
    """{(init, beta): [(dominant, count, t_linear, held, groups) per seed]} of the density
    sweep."""
    bad = ~data.status.isin([1, 4])  # complete, or stopped when the grid gave out
    if bad.any():
        raise ValueError("the density sweep has runs that were not run, interrupted or failed")
    found = {}
    for init in data.init.values:
        for beta in data.beta.values:
            found[str(init), float(beta)] = [
                density_measure(data.time.values,
                                data.modes.sel(init=init, beta=beta, seed=seed)
                                .transpose("time", "mode").values,
                                data.peaks.sel(init=init, beta=beta, seed=seed).values,
                                stable, level)
                + (peak_groups(data.density.sel(init=init, beta=beta, seed=seed).values),)
                for seed in data.seed.values]
    return found


def amplitude(init):
    """EPS of a start "noise:EPS,KMAX"."""
    return float(init.split(":", 1)[1].split(",")[0])


def density_table(data, found):
    """Per (EPS, beta): the seeds' dominant modes and first-state peak counts against k_max."""
    rows = []
    for init in data.init.values:
        eps = amplitude(str(init))
        for beta in data.beta.values:
            k_max = closed.fastest_mode(float(beta), 2)
            runs = found[str(init), float(beta)]
            dominant = np.array([r[0] for r in runs], float)
            counts = np.array([r[1] for r in runs], float)
            groups = np.array([r[4] for r in runs], float)
            measured = np.isfinite(counts)
            rows.append({
                "eps": eps, "n_equiv": 1.0 / eps ** 2, "beta": float(beta), "k_max": k_max,
                "mode": histogram(dominant),
                "mode_agree": float(np.mean(dominant == k_max)),
                "mode_agree_95": interval(int(np.sum(dominant == k_max)), len(runs)),
                "peaks": histogram(counts),
                "peaks_agree": (float(np.mean(counts[measured] == k_max)) if measured.any()
                                else np.nan),
                "peaks_agree_95": interval(int(np.sum(counts[measured] == k_max)),
                                           int(measured.sum())),
                "censored": int((~measured).sum()),
                "peaks_eq_mode": (float(np.mean(counts[measured] == dominant[measured]))
                                  if measured.any() else np.nan),
                "groups": histogram(groups),
                "groups_agree": float(np.mean(groups == k_max)),
                "groups_agree_95": interval(int(np.sum(groups == k_max)), len(runs)),
                "t_linear": stats.interval_text(stats.mean_interval([r[2] for r in runs]), 3),
                "held_min": float(np.nanmin([r[3] for r in runs])),
                "seeds": len(runs),
            })
    return pd.DataFrame(rows)


def reduce(data):
    """The table per (d, beta) of experiments/plateaus.toml with the n = infinity columns of
    experiments/density.toml, the density's rows per amplitude (periodicity_density.csv),
    and the rows per scheme of experiments/fast.toml and slow.toml (periodicity_schemes.csv)."""
    density = data["density"]
    if INFINITE_N not in [str(i) for i in density.init.values]:
        raise ValueError(f"the density sweep has no run from {INFINITE_N}")
    found = density_runs(density)
    particles = plateau_runs(data["plateaus"])
    table = plateau_table(data["plateaus"], particles)
    finite = finite_n_table(particles, found)
    for column in ("mode_agree_inf", "mode_agree_inf_95", "peaks_agree_inf", "peaks_agree_inf_95",
                   "censored_inf"):
        table[column] = pd.Series([np.nan] * len(table), dtype=object)
    for i, row in table.iterrows():
        runs = found.get((INFINITE_N, float(row["beta"])))
        if row["d"] != 2 or runs is None:
            continue
        dominant = np.array([r[0] for r in runs], float)
        counts = np.array([r[1] for r in runs], float)
        measured = np.isfinite(counts)
        agree = int(np.sum(counts[measured] == row["k_max"]))
        table.at[i, "mode_agree_inf"] = float(np.mean(dominant == row["k_max"]))
        table.at[i, "mode_agree_inf_95"] = interval(int(np.sum(dominant == row["k_max"])), len(runs))
        table.at[i, "peaks_agree_inf"] = agree / measured.sum() if measured.any() else np.nan
        table.at[i, "peaks_agree_inf_95"] = interval(agree, int(measured.sum()))
        table.at[i, "censored_inf"] = int((~measured).sum())
    return {"periodicity": table,
            "periodicity_density": density_table(density, found),
            "periodicity_finite_n": finite,
            "periodicity_sensitivity": sensitivity_table(data["plateaus"], density, finite),
            "periodicity_schemes": scheme_table([data["fast"], data["slow"]])}


def plateau_runs(data, level=DOMINANT_LEVEL, length=PLATEAU_LENGTH):
    """{(d, beta): [(dominant, plateau count, t_linear) per seed]} of experiments/plateaus.toml."""
    if not (data.status == 1).all():
        raise ValueError("the sweep has runs that did not complete")
    found = {}
    for d in data.d.values:
        for beta in data.beta.values:
            found[int(d), float(beta)] = [
                measure(data.modes.sel(d=d, beta=beta, seed=seed).transpose("time", "mode").values,
                        data.clusters.sel(d=d, beta=beta, seed=seed).values, data.time.values,
                        level, length)
                for seed in data.seed.values]
    return found


def plateau_table(data, found=None):
    found = plateau_runs(data) if found is None else found
    rows = []
    for (d, beta), runs in found.items():
        k_max = closed.fastest_mode(beta, d)
        dominant = np.array([f[0] for f in runs], float)
        counts = np.array([f[1] for f in runs], float)
        reached = np.isfinite(counts)  # a run with no plateau by T is counted, not compared
        circle = d == 2 and reached.any()
        rows.append({
            "d": d, "beta": beta, "k_max": k_max,
            "mode": histogram(dominant),
            "mode_agree": float(np.mean(dominant == k_max)),
            "mode_agree_95": interval(int(np.sum(dominant == k_max)), len(runs)),
            "mode_within_1": float(np.mean(np.abs(dominant - k_max) <= 1)),
            "clusters": histogram(counts),
            "no_plateau": int((~reached).sum()),
            "clusters_agree": float(np.mean(counts[reached] == k_max)) if circle else np.nan,
            "clusters_agree_95": (interval(int(np.sum(counts[reached] == k_max)),
                                           int(reached.sum())) if circle else "-"),
            "clusters_eq_mode": (float(np.mean(counts[reached] == dominant[reached]))
                                 if circle else np.nan),
            "t_linear": stats.interval_text(stats.mean_interval([f[2] for f in runs]), 3),
            "seeds": len(runs),
        })
    return pd.DataFrame(rows)


def finite_n_table(particles, density):
    """Per beta on the circle: the seeds whose dominant mode is k_max, for the n = 1024
    particles and for the density with the same noise (EPS = 1/32) and with EPS = 1e-4, and
    Fisher's exact test (two-sided) of the particles against each."""
    rows = []
    for (d, beta), runs in particles.items():
        if d != 2 or (FINITE_N, beta) not in density or (INFINITE_N, beta) not in density:
            continue
        k_max = closed.fastest_mode(beta, 2)

        def agree(values):
            return int(sum(v[0] == k_max for v in values)), len(values)

        row = {"beta": beta, "k_max": k_max}
        k, n = agree(runs)
        row["particles"] = f"{k} of {n}"
        for label, init in (("same_noise", FINITE_N), ("infinite", INFINITE_N)):
            kd, nd = agree(density[init, beta])
            row[f"density_{label}"] = f"{kd} of {nd}"
            row[f"p_{label}"] = float(fisher_exact([[k, n - k], [kd, nd - kd]])[1])
        rows.append(row)
    return pd.DataFrame(rows)


def differing(table, alpha, column):
    """The betas where the particles' fraction differs from the density's at level alpha."""
    hits = table.beta[table[column] < alpha]
    return " ".join(f"{b:g}" for b in hits) or "none"


def majority(found, index, k_max_of):
    """The betas (circle) where most seeds' value at `index` (0: mode, 1: count) is k_max."""
    return " ".join(f"{beta:g}" for (d, beta), runs in found.items()
                    if d == 2 and sum(r[index] == k_max_of(beta) for r in runs) * 2 > len(runs)
                    ) or "none"


def sensitivity_table(data, density_data, finite):
    """Each threshold a verdict depends on, halved and doubled (nadyn.stats.sensitivity):
    ALPHA (the betas where the particles differ from the density), DOMINANT_LEVEL (the betas
    where most particle seeds' mode is k_max), PLATEAU_LENGTH (where most plateau counts are
    k_max) and STABLE (where most density seeds at EPS = 1e-4 have k_max peaks)."""
    k_max = lambda beta: closed.fastest_mode(beta, 2)  # noqa: E731
    checks = [
        ("ALPHA: particles differ from the density, same noise", ALPHA,
         lambda a: differing(finite, a, "p_same_noise")),
        ("ALPHA: particles differ from the density, n = infinity", ALPHA,
         lambda a: differing(finite, a, "p_infinite")),
        ("DOMINANT_LEVEL: most particle modes are k_max", DOMINANT_LEVEL,
         lambda v: majority(plateau_runs(data, level=v), 0, k_max)),
        ("PLATEAU_LENGTH: most plateau counts are k_max", PLATEAU_LENGTH,
         lambda v: majority(plateau_runs(data, length=v), 1, k_max)),
        ("STABLE: most density peak counts (EPS = 1e-4) are k_max", STABLE,
         lambda v: majority({(2, b): r for (i, b), r in density_runs(density_data, v).items()
                             if i == INFINITE_N}, 1, k_max)),
    ]
    tables = []
    for name, threshold, verdict in checks:
        table = stats.sensitivity(verdict, threshold)
        table.insert(0, "threshold_of", name)
        tables.append(table)
    table = pd.concat(tables, ignore_index=True)
    return table.rename(columns={"verdict": "betas"})


def first_plateau_on_clock(modes, clusters, times, clock):
    """(dominant mode, plateau count, plateau start in the run's own time) of one run, the
    plateau at least PLATEAU_LENGTH long on `clock` (the frames' times on post-ln's clock)."""
    ok = np.isfinite(clusters)
    times, clock, modes, clusters = times[ok], clock[ok], modes[ok], clusters[ok]
    above = np.flatnonzero(modes.max(axis=1) >= DOMINANT_LEVEL)
    if above.size == 0:
        return np.nan, np.nan, np.nan
    frame = above[0]
    dominant = int(np.argmax(modes[frame])) + 1
    plateau = first_long_plateau(clock, clusters, frame)
    if plateau is None:
        return dominant, np.nan, np.nan
    return dominant, plateau[2], float(times[np.flatnonzero(clock == plateau[0])[0]])


def clock_inverse(scheme, tau, beta, d, t_switch):
    """t with uniform_clock(scheme, t) = tau: when the scheme reaches post-ln's time tau."""
    if not np.isfinite(tau):
        return np.nan
    clock = lambda t: closed.uniform_clock(scheme, t, beta, d, t_switch=t_switch) - tau
    return brentq(clock, 0.0, 1e12, xtol=1e-9, rtol=1e-12)


def scheme_table(sweeps):
    """Per scheme and beta: each seed's first-plateau count and its start, against post-ln's
    start moved to the scheme's clock (docs/model.md §13.3). `sweeps`: the sweep files of
    the schemes (one holds post-ln), with the same d, beta and seed axes."""
    from nadyn.study import run_parameters

    found = {}
    for data in sweeps:
        if not (data.status == 1).all():
            raise ValueError("the scheme sweeps have runs that did not complete")
        times = data.time.values
        for point in (dict(zip(("scheme", "d", "beta", "seed"), values)) for values in
                      np.array(np.meshgrid(data.scheme.values, data.d.values, data.beta.values,
                                           data.seed.values, indexing="ij"),
                               dtype=object).reshape(4, -1).T):
            scheme, d, beta = str(point["scheme"]), int(point["d"]), float(point["beta"])
            t_switch = float(run_parameters(data, **point)["t_switch"])
            clock = np.array([closed.uniform_clock(scheme, float(t), beta, d, t_switch=t_switch)
                              if np.isfinite(t) else np.nan for t in times])
            modes = data.modes.sel(point).transpose("time", "mode").values
            found[scheme, d, beta, int(point["seed"])] = first_plateau_on_clock(
                modes, data.clusters.sel(point).values, times, clock) + (t_switch,)
    schemes = [str(s) for data in sweeps for s in data.scheme.values]
    seeds = [int(s) for s in sweeps[0].seed.values]
    rows = []
    for d in sweeps[0].d.values:
        for beta in sweeps[0].beta.values:
            d, beta = int(d), float(beta)
            k_max = closed.fastest_mode(beta, d)
            for scheme in schemes:
                runs = [found[scheme, d, beta, s] for s in seeds]
                post = [found["post-ln", d, beta, s] for s in seeds]
                counts = np.array([r[1] for r in runs], float)
                post_counts = np.array([p[1] for p in post], float)
                start = np.array([r[2] for r in runs], float)
                predicted = np.array([clock_inverse(scheme, p[2], beta, d, r[3])
                                      for r, p in zip(runs, post)])
                ratio = start / predicted - 1.0
                rows.append({
                    "scheme": scheme, "d": d, "beta": beta, "k_max": k_max,
                    "time_change": scheme in PURE_TIME_CHANGES,
                    "mode": " ".join("-" if np.isnan(v) else str(int(v)) for v in
                                     (r[0] for r in runs)),
                    "clusters": " ".join("-" if np.isnan(v) else str(int(v)) for v in counts),
                    # Over the seeds whose plateau the horizon reaches (`plateaus` of them):
                    # a slow clock may not reach a late post-ln plateau by T.
                    "plateaus": int(np.isfinite(counts).sum()),
                    "clusters_agree": (float(np.mean(counts[np.isfinite(counts)] == k_max))
                                       if np.isfinite(counts).any() else np.nan),
                    "same_as_post_ln": (float(np.mean((counts == post_counts)[np.isfinite(counts)]))
                                        if np.isfinite(counts).any() else np.nan),
                    "t_plateau": float(np.nanmean(start)) if np.isfinite(start).any() else np.nan,
                    "t_predicted": (float(np.nanmean(predicted)) if np.isfinite(predicted).any()
                                    else np.nan),
                    "rel_diff": float(np.nanmean(ratio)) if np.isfinite(ratio).any() else np.nan,
                    "rel_diff_95": stats.interval_text(stats.mean_interval(ratio), 3),
                    "seeds": len(runs),
                })
    return pd.DataFrame(rows)


def figure(table, data, path):
    import matplotlib.pyplot as plt

    everything = data
    data = data["plateaus"]

    fig, axes = plt.subplots(1, len(data.d.values), figsize=(5.5 * len(data.d.values), 4),
                             squeeze=False)
    for ax, d in zip(axes[0], data.d.values):
        rows = table[table.d == int(d)]
        betas = np.linspace(0.5, max(rows.beta.max(), 1.0), 400)
        ax.step(betas, [closed.fastest_mode(b, int(d)) for b in betas], where="post", color="k",
                label="k_max(beta), predicted")
        for offset, column, marker, label in ((-0.08, "mode", "o", "dominant mode"),
                                              (0.08, "clusters", "s", "clusters on the plateau")):
            if column == "clusters" and int(d) != 2:
                continue
            xs, ys = [], []
            for _, row in rows.iterrows():
                for entry in row[column].split():  # a histogram: "VALUExSEEDS"
                    value, seeds = entry.split("x")
                    if value != "-":
                        xs += [row["beta"] * (1 + offset)] * int(seeds)
                        ys += [int(value)] * int(seeds)
            ax.plot(xs, ys, marker, alpha=0.6, label=label)
        if int(d) == 2 and "density" in everything:
            found = density_runs(everything["density"])
            for offset, index, marker, label in ((-0.16, 0, "^", "density (EPS = 1e-4): mode"),
                                                 (0.16, 1, "v", "density (EPS = 1e-4): peaks")):
                xs, ys, sizes = [], [], []  # marker area grows with the number of seeds
                for (init, beta), runs in found.items():
                    if init != INFINITE_N:
                        continue
                    values = [r[index] for r in runs if np.isfinite(r[index])]
                    for v, n in pd.Series(values, dtype=float).value_counts().items():
                        xs.append(beta * (1 + offset))
                        ys.append(v)
                        sizes.append(12 + 6 * n)
                ax.scatter(xs, ys, s=sizes, marker=marker, alpha=0.5, label=label)
        ax.set_xscale("log")
        ax.set_xlabel("beta")
        ax.set_ylabel("k")
        ax.set_title(f"d = {int(d)}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
