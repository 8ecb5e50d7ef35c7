"""--beta-log-n and the study critical_scaling (docs/model.md §14).

The one-layer closed forms of the exact simplex (studies/critical_scaling/reduce.py) are
checked against nadyn runs from an exact simplex written to an init file, and the study's
quick form is run twice to the same bytes.
"""
from __future__ import annotations

import importlib.util
import math

import h5py
import numpy as np
import pytest

from conftest import REPO

import nadyn
import nadyn.study as study

STUDY = REPO / "studies" / "critical_scaling"


def _reduce_module():
    spec = importlib.util.spec_from_file_location("critical_scaling_reduce", STUDY / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _series(path, name):
    with h5py.File(path, "r") as f:
        return f[f"observables/{name}/value"][()]


def test_beta_log_n_is_beta_times_log_n(simulate):
    common = ["--n", "48", "--d", "6", "--T", "2", "--dt", "0.1", "--seed", "3"]
    scaled = simulate("scaled.h5", *common, "--beta", "0.75", "--beta-log-n")
    plain = simulate("plain.h5", *common, "--beta", repr(0.75 * math.log(48)))
    # The same logits to the last bit, so the same run.
    assert np.array_equal(_series(scaled, "mean_cos"), _series(plain, "mean_cos"))
    with h5py.File(scaled, "r") as f:
        assert f["parameters"].attrs["beta_log_n"] == 1
        assert f["parameters"].attrs["beta"] == 0.75
    with h5py.File(plain, "r") as f:
        assert f["parameters"].attrs["beta_log_n"] == 0


@pytest.mark.parametrize("rho", [0.0, 0.5])
def test_one_layer_on_a_simplex_matches_the_closed_forms(simulate, tmp_path, rho):
    reduce = _reduce_module()
    n, d = 24, 25
    # y_i = sqrt(rho) e_0 + sqrt(1 - rho) e_i: every pairwise cosine is rho.
    theta = np.zeros((n, d))
    theta[:, 0] = math.sqrt(rho)
    theta[np.arange(n), np.arange(1, n + 1)] = math.sqrt(1.0 - rho)
    start = tmp_path / "simplex.h5"
    with h5py.File(start, "w") as f:
        f["theta0"] = theta
    for gamma in [0.5, 1.0, 2.0, 3.0]:
        out = simulate(f"g{gamma}.h5", "--n", str(n), "--d", str(d), "--init", f"file:{start}",
                       "--scheme", "pre-ln", "--integrator", "layers", "--T", "1", "--dt", "1",
                       "--every", "1", "--r0", "1e-12", "--beta", str(gamma), "--beta-log-n")
        cos = _series(out, "mean_cos")
        entropy = _series(out, "attention_entropy")
        beta = gamma * math.log(n)
        assert cos[0] == pytest.approx(rho, abs=1e-14)
        assert cos[1] == pytest.approx(reduce.simplex_output_cos(n, rho, beta), abs=1e-9)
        assert entropy[0] == pytest.approx(reduce.simplex_entropy(n, rho, beta), abs=1e-9)


def test_closed_form_limits():
    reduce = _reduce_module()
    rho = 0.5
    # beta = 0: the layer averages everything, every output is S / |S|: cosine 1.
    assert reduce.simplex_output_cos(100.0, rho, 0.0) == pytest.approx(1.0)
    # Far above gamma_c = 2 the layer is the identity; far below it collapses.
    n = 2.0 ** 40
    assert reduce.angle_ratio(rho, reduce.simplex_output_cos(n, rho, 3.0 * math.log(n))) > 0.99
    assert reduce.angle_ratio(rho, reduce.simplex_output_cos(n, rho, 1.0 * math.log(n))) < 0.01
    # The entropy of a row with weight W on itself and 1 on n - 1 others, by its definition.
    n, beta = 10.0, 3.0
    w = np.array([math.exp(beta * (1 - rho))] + [1.0] * 9)
    p = w / w.sum()
    assert reduce.simplex_entropy(n, rho, beta) == pytest.approx(-(p * np.log(p)).sum() / math.log(n))
    assert reduce.crossing([0, 1, 2], [0.0, 0.25, 0.75]) == pytest.approx(1.5)


def test_quick_form_is_reproducible_and_brackets_the_transition(quick_twice):
    first = quick_twice(STUDY)
    table = first.table
    assert list(table["n"]) == [64, 256, 1024]
    # The cap of radius pi/4 in d = 64: pairwise cosines near cos^2(pi/4) = 1/2, a bit above.
    assert ((table["rho"] > 0.5) & (table["rho"] < 0.56)).all()
    # Every crossing lies inside the swept gamma range and the measured one near the simplex's.
    assert table["gamma_lambda"].between(1.0, 3.0).all()
    assert (table["rel_diff"].abs() < 0.15).all()


def test_quick_form_crossings_per_seed_against_the_sweep(quick_twice):
    """The statistics standard: each seed's crossing found here from the sweep file, apart from
    reduce.py, and their mean with its Student-t interval is the table's; the sensitivity rows
    move the level 1/2 to 1/4 and 3/4."""
    from scipy import stats as scipy_stats

    result = quick_twice(STUDY)
    data = nadyn.open(result.sweep_file)
    gammas = data.beta.values.astype(float)
    for _, row in result.table.iterrows():
        crossings = []
        for seed in data.seed.values:
            point = {"n": row["n"], "seed": seed}
            before = data.mean_cos.sel(point).isel(time=0).values
            after = data.mean_cos.sel(point).isel(time=-1).values
            lam = np.arccos(after) / np.arccos(before)
            i = next(i for i in range(1, len(gammas)) if lam[i - 1] < 0.5 <= lam[i])
            crossings.append(gammas[i - 1] + (0.5 - lam[i - 1]) * (gammas[i] - gammas[i - 1])
                             / (lam[i] - lam[i - 1]))
        mean = np.mean(crossings)
        half = scipy_stats.t.ppf(0.975, len(crossings) - 1) * np.std(crossings, ddof=1) / math.sqrt(
            len(crossings))
        assert row["seeds"] == 2 and row["lambda_crossed"] == 2
        assert row["gamma_lambda"] == pytest.approx(mean, rel=1e-12)
        low, high = (float(v) for v in row["gamma_lambda_95"].split("[")[1].rstrip("]").split(","))
        assert low == pytest.approx(mean - half, rel=1e-3)
        assert high == pytest.approx(mean + half, rel=1e-3)
    sensitivity = result.extra_tables["critical_scaling_sensitivity"]
    assert list(sensitivity["level"]) == [0.25, 0.5, 0.75]
    # lambda's crossing moves towards gamma_c (~2.07) from below at level 1/2: it rises with n.
    middle = sensitivity[sensitivity.level == 0.5].iloc[0]
    assert middle["towards_gamma_c"] == "yes" and middle["slope_low"] > 0
