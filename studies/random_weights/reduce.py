"""Random weights per layer: how fast the paper's six schemes cluster, and the paper's words."""
import numpy as np
import pandas as pd

import nadyn

TITLE = "Random weights per layer: clustering speed of the six schemes"
FIGURE = "fig5_random_mean_cos.png"  # the name results/README.md and earlier versions use
# The paper's words for its validation with random weights (d = 512, one head,
# beta = sqrt d): (early, collapse); sqrt-scaling is not in it.
PAPER = {"post-ln": ("moderate", "fast"), "pre-ln": ("slow", "slow"),
         "peri-ln": ("fast", "slow"), "ngpt": ("fast", "fast"), "mix-ln": ("moderate", "slow")}
# The windows' keys in the csv, and their names in the verdicts.
WINDOW_KEYS = ["layer1", "layers1_5", "first10pct"]
WINDOW_WORDS = ["layer 1", "layers 1-5", "first 10%"]
# "fast" above this ratio to the median over the schemes, "slow" below its inverse
# (studies/random_weights/README.md says why 1.5).
RATIO = 1.5
# The sensitivity rows: the margin RATIO - 1 halved and doubled (ratios 1.25 and 2).
MARGIN_FACTORS = (0.5, 2.0)
# The gap of a collapsed cluster is round-off below this (O(1) directions in doubles).
GAP_FLOOR = 1e-24

MEAN, SPREAD = ".6g", ".3g"
FORMATS = {f"{what}_{key}{suffix}": spec
           for what in ("gain", "pair_change") for key in WINDOW_KEYS
           for suffix, spec in (("", MEAN), ("_sem", SPREAD))}
FORMATS.update({"angle_first10pct": MEAN, "angle_first10pct_sem": SPREAD,
                "collapse_parameter": MEAN, "collapse_sem": SPREAD,
                "final_mean_cos": MEAN, "final_mean_cos_sem": SPREAD})
TABLE_FORMATS = {"data/random_mean_cos": {"mean_cos": ".17g"}}
NOTE = """\
Each number: the mean over the seeds (the `_sem` columns: its standard error, the sample
standard deviation over sqrt(seeds)).
`gain_*`: the rise of mean_cos per layer over the window; `pair_change_*`: the mean over
pairs of the change of their cosine per layer (observable `pair_change`); `angle_first10pct`:
the mean angle a token moves per layer (observable `angle`, rad), which also counts a whole
cluster turned by a fresh V and so is not a clustering speed. The windows are layer 1,
layers 1-5 and the first 10% of the layers. `collapse_*`: the law (of three)
fitted best to the gap over the last half of the layers, chosen by most seeds, its parameter
(rate, power or coefficient) over those seeds, and the votes. `ours_*`: fast / moderate /
slow = above 1.5x, between, below 1/1.5x the median over the six schemes in that window
(the angle likewise); collapse fast = exponential, slow = polynomial or stretched, none =
no decay. `paper_*`: the paper's words; `verdict`: in which windows ours equal them.
`data/random_mean_cos.csv` holds mean_cos of every run at every layer (figure 5). The
sensitivity table (below) repeats the verdicts with the ratio 1.5 moved to 1.25 and 2 (the
margin 0.5 halved and doubled); `same` says whether every verdict word equals the one at 1.5.
"""
PAGE_TABLES = {"random_weights_sensitivity": "The ratio 1.5 moved to 1.25 and 2"}


def windows(layers):
    """(first, last) layers of each window: layer 1, layers 1-5, the first 10% (at least 1)."""
    tenth = max(1, layers // 10)
    return [(0, min(1, layers)), (0, min(5, layers)), (0, tenth)]


def run_measures(run):
    """One run's window speeds, the law of its collapse and its final mean_cos."""
    t = run.time.values.astype(float)
    mean_cos = run.mean_cos.values.astype(float)
    # Frame i holds the motion from frame i-1 to i (frame 0: NaN, no previous frame).
    pair_change = run.pair_change.values.astype(float)
    angle = run.angle.values.astype(float)
    gap = run.gap.values.astype(float)
    speeds = []
    for first, last in windows(len(t) - 1):
        length = float(last - first)
        speeds.append({"gain": (mean_cos[last] - mean_cos[first]) / length,
                       "pair_change": sum(pair_change[i] / length
                                          for i in range(first + 1, last + 1)),
                       "angle": sum(angle[i] / length for i in range(first + 1, last + 1))})
    # Deep collapse: the gap over the last half of the layers, while above round-off. When
    # the gap reaches round-off earlier, the window is the half-length stretch ending there.
    half = t[-1] / 2.0
    end = t[0]
    for ti, gi in zip(t, gap):
        if not gi > GAP_FLOOR:
            break
        end = ti
    start = max(t[0], min(half, end - half))
    collapse = nadyn._core.fits.rank_laws(t, gap, start, end)[0]
    return speeds, collapse, mean_cos[-1]


def mean_and_sem(values):
    """The mean and its standard error (0 for one seed)."""
    values = [float(v) for v in values]
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    sd = float(np.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)))
    return mean, sd / float(np.sqrt(len(values)))


def speed_word(value, median, ratio_threshold=RATIO):
    if not median > 0.0:
        return "fast" if value > 0.0 else "slow"
    ratio = value / median
    return ("fast" if ratio > ratio_threshold else
            "slow" if ratio < 1.0 / ratio_threshold else "moderate")


def verdict(ours_early, ours_collapse, paper):
    """Which windows' early verdicts equal the paper's word, and whether the collapse does."""
    if paper is None:
        return "n/a (not in the paper's table)"
    agree = [name for name, word in zip(WINDOW_WORDS, ours_early) if word == paper[0]]
    if len(agree) == len(WINDOW_WORDS):
        early = "early agrees in every window"
    elif not agree:
        early = "early disagrees in every window"
    else:
        listed = agree[0] if len(agree) == 1 else ", ".join(agree[:-1]) + " and " + agree[-1]
        early = f"early agrees over {listed} only"
    return early + "; collapse " + ("agrees" if ours_collapse == paper[1] else "disagrees")


def reduce(data):
    if not (data.status == 1).all():
        raise ValueError("the random-weights sweep has runs that did not complete")
    for name in ("pair_change", "angle"):
        if name not in data:
            raise ValueError(f"the sweep lacks the observable {name} (observe = "
                             "\"pair_change,angle\" in the experiment)")
    for axis in ("scheme", "seed"):
        if axis not in data.dims:
            raise ValueError(f"the sweep has no '{axis}' axis; the study sweeps scheme and seed")
    seeds = [int(s) for s in data.seed.values]
    rows, curves = [], []
    for scheme in [str(s) for s in data.scheme.values]:  # the experiment's order
        runs = [run_measures(data.sel(scheme=scheme, seed=seed)) for seed in seeds]
        row = {"scheme": scheme}
        for what in ("gain", "pair_change"):
            for w, key in enumerate(WINDOW_KEYS):
                row[f"{what}_{key}"], row[f"{what}_{key}_sem"] = mean_and_sem(
                    [speeds[w][what] for speeds, _, _ in runs])
        row["angle_first10pct"], row["angle_first10pct_sem"] = mean_and_sem(
            [speeds[-1]["angle"] for speeds, _, _ in runs])
        # The law most seeds chose (ties: the first of the laws' order), over those seeds.
        by_law = {}
        for _, collapse, _ in runs:
            by_law.setdefault(collapse["law"], []).append(collapse["parameter"])
        law = max(nadyn._core.fits.laws(), key=lambda name: len(by_law.get(name, [])))
        row["collapse_law"] = law
        row["collapse_parameter"], row["collapse_sem"] = mean_and_sem(by_law[law])
        row["collapse_votes"] = f"{len(by_law[law])}/{len(seeds)}"
        row["final_mean_cos"], row["final_mean_cos_sem"] = mean_and_sem(
            [final for _, _, final in runs])
        rows.append(row)
        for seed in seeds:
            values = data.mean_cos.sel(scheme=scheme, seed=seed).values
            curves += [{"scheme": scheme, "seed": seed, "layer": layer, "mean_cos": float(v)}
                       for layer, v in enumerate(values)]
    judge(rows, RATIO)
    sensitivity = []
    for factor in MARGIN_FACTORS:
        ratio = 1.0 + (RATIO - 1.0) * factor
        moved = judge([dict(row) for row in rows], ratio)
        for row, base in zip(moved, rows):
            words = [f"ours_gain_{key}" for key in WINDOW_KEYS] + ["ours_angle", "verdict"]
            sensitivity.append({"ratio": ratio, "scheme": row["scheme"],
                                **{w: row[w] for w in words},
                                "same": all(row[w] == base[w] for w in words)})
    return {"random_weights": pd.DataFrame(rows),
            "random_weights_sensitivity": pd.DataFrame(sensitivity),
            "data/random_mean_cos": pd.DataFrame(curves)}


def judge(rows, ratio):
    """The verdict words of every row (in place), relative to the median over the schemes in
    each window, as the paper's are: fast above ``ratio`` times it, slow below 1 / ratio."""
    gain_median = [float(np.median([r[f"gain_{key}"] for r in rows])) for key in WINDOW_KEYS]
    angle_median = float(np.median([r["angle_first10pct"] for r in rows]))
    for row in rows:
        early = [speed_word(row[f"gain_{key}"], median, ratio)
                 for key, median in zip(WINDOW_KEYS, gain_median)]
        for key, word in zip(WINDOW_KEYS, early):
            row[f"ours_gain_{key}"] = word
        row["ours_angle"] = speed_word(row["angle_first10pct"], angle_median, ratio)
        row["ours_collapse"] = ("none" if row["collapse_parameter"] <= 0.0 else
                                "fast" if row["collapse_law"] == "exponential" else "slow")
        paper = PAPER.get(row["scheme"])
        row["paper_early"], row["paper_collapse"] = paper if paper else ("-", "-")
        row["verdict"] = verdict(early, row["ours_collapse"], paper)
    return rows


def figure(table, data, path):
    """Figure 5: mean_cos against layer (log axis from layer 1), mean over the seeds and the
    min-max band, every scheme."""
    import matplotlib.pyplot as plt

    plt.rcdefaults()  # a user's matplotlibrc must not change the figure
    plt.rcParams.update({"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8,
                         "legend.fontsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7})
    colours = {str(s): f"C{i}" for i, s in enumerate(data.scheme.values)}  # the sweep's order
    fig, ax = plt.subplots(figsize=(3.4, 3.0), layout="constrained")
    layers = np.arange(data.sizes["time"])[1:]
    for scheme in [str(s) for s in data.scheme.values]:
        # Log layer axis from layer 1: the early layers, where the schemes differ most, get
        # as much room as the deep ones.
        curves = data.mean_cos.sel(scheme=scheme).transpose("seed", "time").values[:, 1:]
        colour = colours.get(scheme, "k")
        ax.fill_between(layers, curves.min(axis=0), curves.max(axis=0), color=colour,
                        alpha=0.25, lw=0)
        ax.plot(layers, curves.mean(axis=0), color=colour, lw=1.3,
                ls="--" if scheme == "mix-ln" else "-", label=scheme)
    ax.set(xlabel="layer (log scale)", ylabel="mean cosine of the tokens", ylim=(-0.02, 1.02),
           xlim=(1, layers.max()), xscale="log")
    ax.set_title("Random weights per layer: how fast tokens cluster\n(line: mean over %d "
                 "seeds, band: min to max)" % data.sizes["seed"])
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    # No Software/creation-time chunks, so the bytes depend only on the data.
    fig.savefig(path, dpi=200, metadata={"Software": None})
    plt.close(fig)
