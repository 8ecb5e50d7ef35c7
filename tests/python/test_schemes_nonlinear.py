"""The study studies/schemes_nonlinear: its inverse clocks against nadyn.closed_forms.uniform_clock,
its plateau and crossing rules on series with known answers, and its quick form against runs
repeated one by one by `nadyn simulate` and read apart from reduce.py."""
from __future__ import annotations

import importlib.util
import math
import subprocess

import numpy as np
import pytest

from conftest import REPO

import nadyn
import nadyn.closed_forms as closed

STUDY = REPO / "studies" / "schemes_nonlinear"


def reduce_module():
    spec = importlib.util.spec_from_file_location("schemes_nonlinear_reduce", STUDY / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLOCKED = ["post-ln", "sqrt-scaling", "ngpt", "mix-ln", "pre-ln", "peri-ln"]


@pytest.mark.parametrize("scheme", CLOCKED)
def test_inverse_clock_inverts_the_library_clock(scheme):
    reduce = reduce_module()
    for beta in (1.0, 4.0):
        for t in (0.5, 2.0, 7.0, 300.0):
            tau = closed.uniform_clock(scheme, t, beta, 3, t_switch=reduce.T_SWITCH)
            assert reduce.inverse_clock(scheme, tau, beta, 3) == pytest.approx(t, rel=1e-12)
    # a on S^2 is coth(beta) - 1/beta (docs/model.md §13.3, Funk-Hecke with k = 1).
    assert reduce.rate_a(2.0, 3) == pytest.approx(1.0 / math.tanh(2.0) - 0.5, rel=1e-12)


def test_first_plateau_and_time_to_one():
    reduce = reduce_module()
    t = np.arange(0.0, 20.0, 0.5)
    counts = np.array([30] * 6 + [29] * 2 + [6] * 9 + [1] * 23, dtype=float)
    # post-ln's clock is t: the 6s last 4.5, the 29s 1.0 (too short at 2).
    assert reduce.first_plateau(t, counts, "post-ln", 1.0, 3) == (6.0, 4.0, 4.5, True)
    assert reduce.first_merger(t, counts) == 3.0
    assert reduce.time_to_one(t, counts) == (8.5, True)
    # sqrt-scaling's clock runs slower (tau' = 1/sqrt(t + 1)): the 6s last tau(8.5) - tau(4)
    # = 2 (sqrt(9.5) - sqrt(5)) = 1.69 < 2 units of tau, so its first plateau is the 1s.
    assert reduce.first_plateau(t, counts, "sqrt-scaling", 1.0, 3)[0] == 1.0
    short = counts.copy()
    short[10:] = np.nan
    assert reduce.time_to_one(t, short) == (4.5, False)


def test_quick_form_against_runs_repeated(quick_twice, cli, tmp_path):
    result = quick_twice(STUDY, figures=True)
    assert result.figure is not None and result.figure.stat().st_size > 0
    table = result.table.set_index("scheme")
    assert list(table.index) == [*CLOCKED, "no-norm"]
    # Each scheme's seed 1 and 2 repeated by `nadyn simulate` at the quick form's settings; the
    # first frame with one cluster read from the run's own file (both seeds get there, so the
    # Kaplan-Meier median of two is their midpoint), and post-ln's median mapped through the
    # scheme's clock by inverting nadyn.closed_forms.uniform_clock numerically.
    from scipy.optimize import brentq

    found = {}

    def first_one(scheme, seed):
        if (scheme, seed) in found:
            return found[scheme, seed]
        path = tmp_path / f"{scheme}-{seed}.h5"
        horizon, frame_times = ("300", "logspace:-1,2.477,120") if scheme == "no-norm" else \
            ("100", "logspace:-1,2,60")
        subprocess.run([str(cli), "simulate", "--scheme", scheme, "--n", "32", "--d", "3",
                        "--beta", "1", "--init", "uniform", "--seed", str(seed), "--integrator",
                        "dopri5", "--dt", "0.5", "--T", horizon, "--frame-times", frame_times,
                        "--t-switch", "2", "--positions", "none", "--observables", "clusters",
                        "--out", str(path), "--quiet"], check=True)
        run = nadyn.open(path)
        t, c = np.asarray(run.time), np.asarray(run["clusters"])
        hits = np.flatnonzero(c == 1)
        found[scheme, seed] = float(t[hits[0]]) if hits.size else None
        return found[scheme, seed]

    post = [first_one("post-ln", s) for s in (1, 2)]
    # The first plateau's count of post-ln and sqrt-scaling (clocks t and 2 (sqrt(t + 1) - 1))
    # by a plain walk over the repeated runs' frames: a stretch of equal counts from its first
    # frame to the first frame at another count (or the last frame), at least 2 long on the
    # clock, with a count below the start's.
    clocks = {"post-ln": lambda t: t, "sqrt-scaling": lambda t: 2 * (np.sqrt(t + 1) - 1)}
    for scheme, tau_of in clocks.items():
        counts = []
        for seed in (1, 2):
            run = nadyn.open(tmp_path / f"{scheme}-{seed}.h5") if (scheme, seed) in found else None
            if run is None:
                first_one(scheme, seed)
                run = nadyn.open(tmp_path / f"{scheme}-{seed}.h5")
            t, c = np.asarray(run.time), np.asarray(run["clusters"])
            tau, first, i = tau_of(t), None, 0
            while i < len(c) and first is None:
                j = i
                while j + 1 < len(c) and c[j + 1] == c[i]:
                    j += 1
                end = tau[j + 1] if j + 1 < len(c) else tau[j]
                if end - tau[i] >= 2.0 and c[i] < c[0]:
                    first = int(c[i])
                i = j + 1
            counts.append(first)
        # Two seeds: "Cx2", or two different counts "Ax1 Bx1" in increasing order (the table
        # lists the most frequent first, equal frequencies by count).
        expected = (f"{counts[0]}x2" if counts[0] == counts[1]
                    else " ".join(f"{v}x1" for v in sorted(counts)))
        assert table.loc[scheme, "first plateau"] == expected
    assert None not in post
    post_median = 0.5 * sum(post)
    for scheme in CLOCKED:
        ones = [first_one(scheme, s) for s in (1, 2)]
        row = table.loc[scheme]
        assert row["reached"] == "2/2"
        assert float(row["t_one"].split()[0]) == pytest.approx(0.5 * sum(ones), rel=2e-3)
        mapped = brentq(lambda t: closed.uniform_clock(scheme, t, 1.0, 3, t_switch=2.0)
                        - post_median, 1e-9, 1e6, xtol=1e-12)
        assert row["t_one clock"] == pytest.approx(mapped, rel=1e-8)
        assert row["ratio"] == pytest.approx(0.5 * sum(ones) / mapped, rel=2e-3)
    # no-norm: its effective beta r^2 grows, neither seed reaches one cluster by T = 300.
    assert first_one("no-norm", 1) is None and first_one("no-norm", 2) is None
    assert table.loc["no-norm", "reached"] == "0/2"
    assert table.loc["no-norm", "verdict"] == "no clock"
