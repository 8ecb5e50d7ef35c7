"""The study studies/value_spectrum: the map onto nadyn (no-norm at beta = 1 is the paper's
dx_i/dt = sum_j softmax_j(<Q x_i, K x_j>) V x_j, integrated here with scipy), its clustering
and hull rules on points with known answers, its refusals, and its quick form against the runs
repeated by `nadyn simulate` and rescaled here with scipy's expm, apart from reduce.py."""
from __future__ import annotations

import importlib.util
import subprocess

import h5py
import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.integrate import solve_ivp
from scipy.linalg import expm
from scipy.spatial import ConvexHull

from conftest import REPO

import nadyn

STUDY = REPO / "studies" / "value_spectrum"


def reduce_module():
    spec = importlib.util.spec_from_file_location("value_spectrum_reduce", STUDY / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_inputs(folder, x0, Q, K, V):
    start, weights = folder / "start.h5", folder / "weights.h5"
    r0 = np.linalg.norm(x0, axis=1)
    with h5py.File(start, "w") as f:
        f["theta0"] = x0 / r0[:, None]
        f["r0"] = r0
    with h5py.File(weights, "w") as f:
        f["Q"], f["K"], f["V"] = Q, K, V
    return start, weights


def test_no_norm_at_beta_one_is_the_papers_dynamics(cli, tmp_path):
    # Q, K, V all different and V not symmetric, so that a transposed matrix would show.
    rng = np.random.default_rng(7)
    n, d, T = 8, 3, 2.0
    x0 = rng.standard_normal((n, d))
    Q, K, V = (np.eye(d) + 0.3 * rng.standard_normal((d, d)) for _ in range(3))
    start, weights = write_inputs(tmp_path, x0, Q, K, V)

    def paper(_, flat):
        x = flat.reshape(n, d)
        logits = (x @ Q.T) @ (x @ K.T).T
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return (p @ (x @ V.T)).ravel()

    ode = solve_ivp(paper, (0.0, T), x0.ravel(), method="DOP853", rtol=1e-12, atol=1e-12)
    out = tmp_path / "run.h5"
    subprocess.run([cli, "simulate", "--scheme", "no-norm", "--beta", "1", "--n", str(n), "--d",
                    str(d), "--T", str(T), "--init", f"file:{start}", "--weights", f"file:{weights}",
                    "--integrator", "dopri5", "--rtol", "1e-11", "--atol", "1e-13", "--out",
                    str(out), "--quiet"], check=True)
    ds = nadyn.open(out)
    x = ds.theta.values[-1] * ds.r.values[-1][:, None]
    assert ds.time.values[-1] == T
    np.testing.assert_allclose(x, ode.y[:, -1].reshape(n, d), rtol=1e-7, atol=1e-9)


def test_clusters_and_hull_vertices():
    reduce = reduce_module()
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert reduce.all_vertices(square)
    assert not reduce.all_vertices(np.vstack([square, [[0.5, 0.5]]]))  # the centre is inside
    assert not reduce.all_vertices(np.array([[0.0], [0.3], [1.0]]))     # a middle value on a line
    assert reduce.all_vertices(np.array([[0.0], [1.0]]))
    assert not reduce.all_vertices(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))  # collinear
    assert reduce.all_vertices(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    # Single linkage chains: 0, 0.0008, 0.0016 are one cluster at 1e-3, three at 5e-4.
    values = np.array([[0.0], [0.0008], [0.0016], [1.0]])
    assert list(reduce.clusters(values, 1e-3)) == [0, 0, 0, 1]
    assert reduce.clusters(values, 5e-4).max() + 1 == 4
    # Two hyperplanes (first coordinate 0.5 and 1.5) whose tokens still slide along them.
    late = np.array([[0.5, 0.0], [0.5 + 1e-6, 0.5], [1.5, 0.2], [1.5 + 2e-6, 0.9]])
    last = late + [[0.0, 0.1]]
    last[:, 0] = [0.5, 0.5 + 1e-7, 1.5, 1.5 + 2e-7]
    found = reduce.measure(np.array([late, last]), 1, 1e-3)
    assert found["count"] == 2 and found["vertices"] and not found["at_zero"]
    assert found["distance"] == pytest.approx(1e-7, rel=1e-6)
    assert found["distance_before"] == pytest.approx(1e-6, rel=1e-6)
    # Along the hyperplanes: at most 0.25 and 0.35 from their objects' means at T - window,
    # the same at T (every token moved by 0.1).
    assert found["points"] == 4
    assert found["other_before"] == pytest.approx(0.35) and found["other"] == pytest.approx(0.35)
    # The same tokens with a third value at the origin: an interior hyperplane, at 0.
    found = reduce.measure(np.array([np.vstack([late, [[0.0, 0.0]]]),
                                     np.vstack([last, [[0.0, 0.0]]])]), 1, 1e-3)
    assert found["count"] == 3 and found["at_zero"] and not found["vertices"]


@pytest.mark.parametrize("setting, named", [
    ("seeds=0", "seeds must be an integer >= 1"),
    ("T=1000.0", "T must be in (0, 100]"),
    ("simple=[1.0, 1.0, 0.5]", "simple: the leading eigenvalue must be simple"),
    ("repeated=[1.0, 0.5, 0.25]", "repeated: the leading eigenvalue must have multiplicity"),
    ("simple=[1.0, -2.0, 0.5]", "larger than the others' absolute values"),
    ("tolerance=0.0", "tolerance must be positive"),
])
def test_bad_settings_exit_2_before_any_file(cli, tmp_path, setting, named):
    out = tmp_path / "out"
    result = subprocess.run([cli, "table", "value_spectrum", "--set", setting, "--out-dir",
                             str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert named in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not out.exists() or not any(out.iterdir())


def limit_objects(z, basis, tolerance):
    """The limit objects of the rescaled tokens z, from their coordinates on `basis` (the
    leading eigenvectors): single linkage with scipy, then the centres."""
    coords = z @ basis
    if len(coords) < 2:
        return coords
    labels = fcluster(linkage(coords, method="single"), t=tolerance, criterion="distance")
    return np.array([coords[labels == c].mean(axis=0) for c in np.unique(labels)])


def test_quick_form_against_the_runs(quick_twice, cli, tmp_path):
    result = quick_twice(STUDY, figures=True)
    assert result.figure is not None and result.figure.stat().st_size > 0
    reduce = reduce_module()
    parameters = dict(reduce.PARAMETERS, n=[32], seeds=2)
    T, tolerance = parameters["T"], parameters["tolerance"]
    table = result.table.set_index("case")
    assert list(table.index) == ["identity", "simple", "zero", "repeated"]
    for case in table.index:
        spectrum = np.array(reduce.spectrum_of(case, parameters))
        counts = []
        for seed in (1, 2):
            x0, rotation = reduce.draw(32, seed, parameters)
            V = rotation @ np.diag(spectrum) @ rotation.T
            folder = tmp_path / f"{case}-{seed}"
            folder.mkdir()
            start, weights = write_inputs(folder, x0, np.eye(3), np.eye(3), V)
            out = folder / "run.h5"
            subprocess.run([cli, "simulate", "--scheme", "no-norm", "--beta", "1", "--n", "32",
                            "--d", "3", "--T", str(T), "--init", f"file:{start}", "--weights",
                            f"file:{weights}", "--integrator", "dopri5", "--rtol", "1e-10",
                            "--atol", "1e-12", "--frame-times", str(T - 2.0), "--observables",
                            "none", "--out", str(out), "--quiet"], check=True)
            ds = nadyn.open(out)
            assert ds.attrs["status"] == "complete"
            assert np.all(np.isfinite(ds.r.values)) and ds.r.values.max() < 1e12
            x = ds.theta.values[-1] * ds.r.values[-1][:, None]
            z = x @ expm(-T * ds.V.values).T
            values, vectors = np.linalg.eigh(ds.V.values)
            m = int(np.sum(spectrum == spectrum.max()))  # the multiplicity the case asks for
            basis = vectors[:, np.argsort(values)[::-1][:m]]
            objects = limit_objects(z, basis, tolerance)
            counts.append(len(objects))
            if case in ("simple", "zero"):
                assert len(objects) <= 3  # the paper's at most three hyperplanes
            else:
                # Every limit point a vertex of their convex hull (in the leading eigenspace).
                if len(objects) > m + 1:
                    assert len(ConvexHull(objects).vertices) == len(objects)
            # Every token within 1e-6 of its object (e^-20 times the start's scale).
            coords = z @ basis
            assert max(np.min(np.linalg.norm(coords[:, None] - objects[None], axis=2), axis=1)) < 1e-6
        assert table.loc[case, "count"] == reduce.histogram(counts), case
        assert table.loc[case, "holds"].startswith("2/2"), case
    # The simple eigenvalue: two hyperplanes in every run; by T the tokens have not yet
    # collapsed to points inside them (spectrum 1, 0.5, 0.25), and with an eigenvalue 0 they
    # never do (docs/model.md §17: that coordinate is frozen, its spread's rate is 0).
    assert table.loc["simple", "count"] == "2x2" and table.loc["zero", "count"] == "2x2"
    assert float(table.loc["simple", "points in R^d"].split()[0]) > 2
    assert float(table.loc["zero", "other spread"].split()[0]) > 0.1
    assert abs(float(table.loc["zero", "other rate"].split()[0])) < 1e-3
    assert float(table.loc["simple", "other rate"].split()[0]) == pytest.approx(0.25, abs=0.01)
    assert float(table.loc["identity", "rate"].split()[0]) == pytest.approx(1.0, abs=0.01)
