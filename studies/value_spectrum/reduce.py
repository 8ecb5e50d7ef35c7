"""The value matrix decides the limit geometry: the rescaled tokens z_i = exp(-t V) x_i of the
unnormalised dynamics go to the vertices of a polytope (V = I), to at most three parallel
hyperplanes (a simple positive leading eigenvalue), or to a mixture (a repeated one)
(Geshkovski, Letrouit, Polyanskiy, Rigollet, arXiv 2305.05465; docs/model.md §17)."""
import math
import pathlib
import tempfile

import h5py
import numpy as np
import pandas as pd

import nadyn
from nadyn import stats
from nadyn.study import StudyFailure

TITLE = "The value matrix's spectrum and the limit geometry of the rescaled tokens (no-norm, beta = 1)"
# This study runs no sweep: each seed draws its own Gaussian start and its own eigenvectors of
# V, which the study writes as input files (init=file:, weights=file:) and runs in-process
# (nadyn.simulate). Each is overridable with --set KEY=VALUE.
PARAMETERS = {
    "n": [32, 64],               # tokens
    "d": 3,                      # dimension
    "seeds": 32,                 # seeds 1..seeds per (case, n)
    "T": 20.0,                   # horizon: |x| grows like e^T (about 1e9 at T = 20)
    "window": 2.0,               # the second frame at T - window (the decay rate)
    "tolerance": 1e-3,           # clustering distance of the limit objects (rescaled units)
    "simple": [1.0, 0.5, 0.25],  # the spectrum of V with a simple positive leading eigenvalue
    "zero": [1.0, 0.5, 0.0],     # the same with an eigenvalue 0 beside it
    "repeated": [1.0, 1.0, 0.5],  # with a repeated one
}
# The quick form: one n, two seeds (six runs of a tenth of a second each).
QUICK = ["n=[32]", "seeds=2"]
TOLERANCE_FACTORS = (0.5, 1.0, 2.0)
CASES = ("identity", "simple", "zero", "repeated")
CLAIMS = {"identity": "every limit point a vertex of their convex hull",
          "simple": "at most 3 hyperplanes",
          "zero": "at most 3 hyperplanes",
          "repeated": "every limit point of the leading plane a vertex of their hull"}
OBJECTS = {1: "hyperplanes", 2: "lines"}
FORMATS = {"n": "d", "seeds": "d", "d": "d"}
DIGITS = 3
PAGE_TABLES = {"value_spectrum_tolerance": "The clustering tolerance halved and doubled"}
NOTE = """\
Per case and n, over the seeds: the tokens start i.i.d. N(0, I_d) and follow the paper's
dynamics dx_i/dt = sum_j softmax_j(<Q x_i, K x_j>) V x_j with Q = K = I (scheme no-norm,
beta = 1, softmax; dopri5, rtol 1e-10), V = R diag(spectrum) R^T with R a Haar rotation drawn
per seed. `m` is the multiplicity of V's largest eigenvalue lambda_1; the limit objects are
the affine subspaces {z : P z = c} of the rescaled tokens z_i(T) = exp(-T V) x_i(T), P the
projection onto the leading eigenspace: points for m = d, hyperplanes for m = 1, lines for
m = 2 in d = 3. `count` lists each run's number of limit objects (`count x runs`; single
linkage of the P z_i at the tolerance), `mean count` its mean with its 95 % interval; `claim`
is the paper's (the repeated case's is our reading of "a mixture"), `holds` the runs where it
holds with the Wilson 95 % interval; `vertices` the runs whose limit objects' centres (in the
leading eigenspace) are all vertices of their convex hull (scipy's ConvexHull; for m = 1 the
hull of values on a line has two vertices, so a third hyperplane is an interior one);
`at 0` the runs with a limit object at the origin (allowed by the V = I theorem).
`distance` is the largest distance of a token's P z_i to its object's centre at T (mean over
the runs, 95 % interval), `separation` the smallest distance between two objects' centres
over all runs, `rate` the decay rate of that largest distance between T - window and T
(predicted: lambda_1 = 1, docs/model.md §17), `points in R^d` the mean number of
distinct points of the whole z_i(T) at the same tolerance (equal to `mean count` when the
tokens collapse to points), `other spread` the largest distance of a token's other
coordinates (1 - P) z_i to their mean over its object at T (how far the tokens of one object
still spread along it; mean over the runs, `-` for V = I, which has none) and `other rate`
its decay rate between T - window and T (predicted: the smallest other eigenvalue).
"""

_LAST = {}  # one run per case for figure() (called right after reduce, same process)


def check(parameters):
    """ValueError naming the first bad parameter and what it may be."""
    n, d, seeds = parameters["n"], parameters["d"], parameters["seeds"]
    if not n or not all(isinstance(v, int) and v >= 2 for v in n):
        raise ValueError(f"n must be a list of integers >= 2, got {n!r}")
    if not isinstance(d, int) or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1 (seeds 1..seeds), got {seeds!r}")
    T, window, tolerance = parameters["T"], parameters["window"], parameters["tolerance"]
    # e^{2T} |x|^2 in the logits and e^T |x| in the magnitudes: far from overflow up to 100.
    if not 0.0 < T <= 100.0:
        raise ValueError(f"T must be in (0, 100] (the magnitudes grow like e^T), got {T!r}")
    if not 0.0 < window < T:
        raise ValueError(f"window must be in (0, T), got {window!r}")
    if not tolerance > 0.0:
        raise ValueError(f"tolerance must be positive, got {tolerance!r}")
    for case, want in (("simple", 1), ("zero", 1), ("repeated", None)):
        spectrum = parameters[case]
        if len(spectrum) != d or not all(isinstance(v, (int, float)) for v in spectrum):
            raise ValueError(f"{case} must be a list of d = {d} numbers, got {spectrum!r}")
        m = leading_multiplicity(spectrum)
        top = max(spectrum)
        others = [abs(v) for v in spectrum if v != top]
        if top <= 0.0 or (others and top <= max(others)):
            raise ValueError(f"{case}: the leading eigenvalue must be positive and larger than "
                             f"the others' absolute values, got {spectrum!r}")
        if want == 1 and m != 1:
            raise ValueError(f"{case}: the leading eigenvalue must be simple, got {spectrum!r}")
        if want is None and not 2 <= m < d:
            raise ValueError(f"repeated: the leading eigenvalue must have multiplicity 2 to "
                             f"d - 1 = {d - 1}, got {spectrum!r}")


def leading_multiplicity(spectrum):
    top = max(spectrum)
    return sum(1 for v in spectrum if v == top)


def spectrum_of(case, parameters):
    if case == "identity":
        return [1.0] * parameters["d"]
    return sorted((float(v) for v in parameters[case]), reverse=True)


def haar_rotation(rng, d):
    """A Haar-random orthogonal matrix: Q of the QR decomposition of a Gaussian matrix, the
    signs chosen so that R has a positive diagonal."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def draw(n, seed, parameters):
    """The start x0 (n x d, i.i.d. N(0, I)) and the eigenvectors R (V = R diag R^T) of a seed:
    one stream per (seed, n), the start's draws first, so every case starts from the same
    tokens."""
    d = parameters["d"]
    rng = np.random.default_rng([seed, n, d])
    x0 = rng.standard_normal((n, d))
    rotation = haar_rotation(rng, d)
    return x0, rotation


def run(case, n, seed, parameters, folder):
    """One run: the rescaled tokens' coordinates in V's eigenbasis, w = R^T z, at T - window
    and at T (2 x n x d), with the start's."""
    spectrum = np.array(spectrum_of(case, parameters))
    x0, rotation = draw(n, seed, parameters)
    V = rotation @ np.diag(spectrum) @ rotation.T
    start, weights = folder / f"start-{case}-{n}-{seed}.h5", folder / f"weights-{case}-{n}-{seed}.h5"
    r0 = np.linalg.norm(x0, axis=1)
    with h5py.File(start, "w") as f:
        f["theta0"] = x0 / r0[:, None]
        f["r0"] = r0
    with h5py.File(weights, "w") as f:
        f["Q"] = np.eye(parameters["d"])
        f["K"] = np.eye(parameters["d"])
        f["V"] = V
    T, window = float(parameters["T"]), float(parameters["window"])
    try:
        trajectory = nadyn.simulate(
            scheme="no-norm", n=n, d=parameters["d"], beta=1.0, T=T, init=f"file:{start}",
            weights=f"file:{weights}", integrator="dopri5", rtol=1e-10, atol=1e-12,
            frame_times=[T - window], observables="none", progress=False)
    except nadyn.NumericalFault as fault:  # the run left the model's domain: exit 1
        raise StudyFailure(f"value_spectrum: case {case}, n = {n}, seed {seed}: {fault}") from None
    if not np.all(np.isfinite(trajectory.r)):
        raise StudyFailure(f"value_spectrum: case {case}, n = {n}, seed {seed}: a magnitude is "
                           "not finite")
    times = np.asarray(trajectory.ts)
    frames = [int(np.argmin(np.abs(times - t))) for t in (T - window, T)]
    w = []
    for k in frames:
        x = np.asarray(trajectory.ys[k]) * np.asarray(trajectory.r[k])[:, None]
        # z = exp(-t V) x, in the eigenbasis: w = R^T z = exp(-t diag) R^T x.
        w.append((x @ rotation) * np.exp(-times[k] * spectrum))
    return np.array(w), x0 @ rotation


def clusters(points, tolerance):
    """Single linkage of the rows of `points` at distance `tolerance`: one label per row,
    0 to k - 1 in order of first appearance."""
    points = np.asarray(points, dtype=float)
    labels = -np.ones(len(points), dtype=int)
    k = 0
    for i in range(len(points)):
        if labels[i] >= 0:
            continue
        labels[i], stack = k, [i]
        while stack:
            j = stack.pop()
            near = np.flatnonzero((labels < 0)
                                  & (np.linalg.norm(points - points[j], axis=1) <= tolerance))
            labels[near] = k
            stack.extend(near.tolist())
        k += 1
    return labels


def centres(points, labels):
    return np.array([points[labels == c].mean(axis=0) for c in range(labels.max() + 1)])


def all_vertices(points):
    """Whether every row of `points` (distinct) is a vertex of their convex hull. On a line
    (one column) the hull's vertices are the two ends; points that span less than their
    dimension are checked in the affine hull they span."""
    points = np.asarray(points, dtype=float)
    k = len(points)
    if k <= 2:
        return True
    centred = points - points.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    rank = int(np.sum(s > 1e-9 * max(s[0], 1e-300)))
    if rank == 0:
        return False
    coords = centred @ vt[:rank].T
    if rank == 1:
        line = coords[:, 0]
        return k == 2 or bool(np.all((line == line.min()) | (line == line.max())))
    if k == rank + 1:
        return True  # a simplex: affinely independent points are its vertices
    from scipy.spatial import ConvexHull

    return len(ConvexHull(coords).vertices) == k


def measure(w, m, tolerance):
    """One run's limit objects from w (frames at T - window and T, n x d each, in V's
    eigenbasis, the leading m coordinates first)."""
    late, last = w[0][:, :m], w[1][:, :m]
    labels = clusters(last, tolerance)
    centre = centres(last, labels)
    k = len(centre)
    spread = max(float(np.max(np.linalg.norm(last[labels == c] - centre[c], axis=1)))
                 for c in range(k))
    spread_before = max(float(np.max(np.linalg.norm(late[labels == c] - late[labels == c].mean(axis=0),
                                                     axis=1))) for c in range(k))
    pairs = [np.linalg.norm(centre[a] - centre[b]) for a in range(k) for b in range(a)]
    return {
        "count": k,
        "vertices": all_vertices(centre),
        "at_zero": bool(np.any(np.linalg.norm(centre, axis=1) <= tolerance)),
        "distance": spread,
        "distance_before": spread_before,
        "separation": min(pairs) if pairs else math.nan,
        "points": int(clusters(w[1], tolerance).max() + 1),
        # How far the tokens of one object spread along it (the other coordinates), at
        # T - window and at T: 0 when they have collapsed to points.
        "other": other_spread(w[1], labels, m),
        "other_before": other_spread(w[0], labels, m),
    }


def other_spread(frame, labels, m):
    """The largest distance of a token's other coordinates (those after the leading m) to
    their mean over its object; NaN when there are none (m = d)."""
    if m >= frame.shape[1]:
        return math.nan
    rest = frame[:, m:]
    return max(float(np.max(np.linalg.norm(rest[labels == c] - rest[labels == c].mean(axis=0),
                                           axis=1))) for c in range(labels.max() + 1))


def histogram(counts):
    """The runs' counts as "count x runs", most frequent first."""
    found = pd.Series(counts).value_counts(sort=False)
    order = sorted(found.index, key=lambda v: (-found[v], v))
    return " ".join(f"{v}x{found[v]}" for v in order)


def holds(case, found):
    if case in ("simple", "zero"):
        return found["count"] <= 3
    return found["vertices"]


def reduce(parameters):
    check(parameters)
    tolerance, window = float(parameters["tolerance"]), float(parameters["window"])
    d = parameters["d"]
    rows, sensitivity_rows = [], []
    _LAST.clear()
    with tempfile.TemporaryDirectory(prefix="value_spectrum-") as scratch:
        folder = pathlib.Path(scratch)
        for case in CASES:
            spectrum = spectrum_of(case, parameters)
            m = leading_multiplicity(spectrum)
            for n in parameters["n"]:
                runs = []
                for seed in range(1, parameters["seeds"] + 1):
                    w, start = run(case, n, seed, parameters, folder)
                    runs.append(w)
                    if seed == 1 and n == parameters["n"][0]:
                        _LAST[case] = (w, start, m)
                found = [measure(w, m, tolerance) for w in runs]
                rows.append(row(case, spectrum, m, n, d, found, window))
                for factor in TOLERANCE_FACTORS:
                    moved = found if factor == 1.0 else [measure(w, m, tolerance * factor)
                                                         for w in runs]
                    counts = [f["count"] for f in moved]
                    agree = sum(bool(holds(case, f)) for f in moved)
                    sensitivity_rows.append({
                        "case": case, "n": n, "factor": factor,
                        "tolerance": tolerance * factor, "count": histogram(counts),
                        "holds": f"{agree}/{len(moved)}",
                    })
    sensitivity = pd.DataFrame(sensitivity_rows)
    base = sensitivity[sensitivity.factor == 1.0].set_index(["case", "n"])
    sensitivity["same"] = [
        "yes" if (r["count"], r["holds"]) == tuple(base.loc[(r["case"], r["n"]), ["count", "holds"]])
        else "no" for _, r in sensitivity.iterrows()]
    return {"value_spectrum": pd.DataFrame(rows), "value_spectrum_tolerance": sensitivity}


def row(case, spectrum, m, n, d, found, window):
    runs = len(found)
    counts = [f["count"] for f in found]
    agree = sum(bool(holds(case, f)) for f in found)
    vertices = sum(bool(f["vertices"]) for f in found)
    low, high = stats.proportion_interval(agree, runs)
    vlow, vhigh = stats.proportion_interval(vertices, runs)
    rates = [math.log(f["distance_before"] / f["distance"]) / window
             for f in found if f["distance"] > 0.0 and f["distance_before"] > 0.0]
    separations = [f["separation"] for f in found if np.isfinite(f["separation"])]
    return {
        "case": case, "spectrum": ", ".join(f"{v:g}" for v in spectrum), "m": m, "n": n,
        "seeds": runs, "objects": OBJECTS.get(m, "points") if m < d else "points",
        "count": histogram(counts),
        "mean count": stats.interval_text(stats.mean_interval(counts)),
        "claim": CLAIMS[case], "holds": f"{agree}/{runs} [{low:.2f}, {high:.2f}]",
        "vertices": f"{vertices}/{runs} [{vlow:.2f}, {vhigh:.2f}]",
        "at 0": f"{sum(f['at_zero'] for f in found)}/{runs}",
        "distance": stats.interval_text(stats.mean_interval([f["distance"] for f in found])),
        "separation": min(separations) if separations else math.nan,
        "rate": stats.interval_text(stats.mean_interval(rates)),
        "points in R^d": stats.interval_text(stats.mean_interval([f["points"] for f in found])),
        "other spread": stats.interval_text(stats.mean_interval([f["other"] for f in found])),
        "other rate": stats.interval_text(stats.mean_interval(
            [math.log(f["other_before"] / f["other"]) / window for f in found
             if f["other"] > 0.0 and f["other_before"] > 0.0])),
    }


def figure(table, parameters, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(_LAST), figsize=(4.2 * len(_LAST), 4.0))
    for axis, (case, (w, start, m)) in zip(np.atleast_1d(axes), _LAST.items()):
        last = w[1]
        axis.scatter(start[:, 0], start[:, 1], s=10, color="0.75", label="start x(0)")
        axis.scatter(last[:, 0], last[:, 1], s=14, color="C3", label="z(T)")
        labels = clusters(last[:, :m], float(parameters["tolerance"]))
        centre = centres(last[:, :m], labels)
        if m == 1:
            for c in centre[:, 0]:
                axis.axvline(c, color="C0", linewidth=0.8)
        elif len(centre) >= 3:
            from scipy.spatial import ConvexHull

            plane = centre[:, :2]
            hull = ConvexHull(plane)
            loop = list(hull.vertices) + [hull.vertices[0]]
            axis.plot(plane[loop, 0], plane[loop, 1], color="C0", linewidth=0.8)
        axis.set_title(f"{case}: V spectrum {table[table.case == case].spectrum.iloc[0]}",
                       fontsize=9)
        axis.set_xlabel("coordinate on eigenvector 1")
        axis.set_ylabel("coordinate on eigenvector 2")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.suptitle("Rescaled tokens z = exp(-TV) x(T), seed 1 (lines: the limit objects' hull or "
                 "hyperplanes)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
