"""The study studies/periodicity: its plateau extraction on series with known answers, and
its quick form against the sweep file re-read here apart from reduce.py."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from conftest import REPO

import nadyn
import nadyn.closed_forms as closed
import nadyn.study as study

PERIODICITY = REPO / "studies" / "periodicity"


def reduce_module():
    spec = importlib.util.spec_from_file_location("periodicity_reduce", PERIODICITY / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_first_long_plateau():
    plateau = reduce_module().first_long_plateau
    t = np.arange(0.0, 10.0, 0.5)  # 20 frames
    counts = np.array([9, 9, 7, 7, 7, 7, 7, 7, 7, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3])
    # The 7s: from t = 1 to the first 3 at t = 4.5, 3.5 long; the 3s last to the end (5).
    assert plateau(t, counts, 0, 3.0) == (1.0, 4.5, 7)
    assert plateau(t, counts, 0, 3.5) == (1.0, 4.5, 7)  # inclusive
    assert plateau(t, counts, 0, 4.0) == (4.5, 9.5, 3)  # too short: the next one
    # Starting inside the 7s, the plateau is what remains of them from the start frame.
    assert plateau(t, counts, 3, 3.0) == (1.5, 4.5, 7)
    assert plateau(t, counts, 3, 3.5) == (4.5, 9.5, 3)
    assert plateau(t, counts, 0, 6.0) is None


def test_quick_form_against_the_sweep(cli, tmp_path):
    result = study.run(PERIODICITY, tmp_path / "out", quick=True, figures=True, nadyn=cli)
    table = result.table
    assert result.figure is not None and result.figure.stat().st_size > 0
    data = nadyn.open(result.sweep_file)
    assert list(table.beta) == [1.0, 5.0, 20.0]
    for _, row in table.iterrows():
        assert row["k_max"] == closed.fastest_mode(row["beta"], int(row["d"]))
        modes = []
        for seed in data.seed.values:
            m = data.modes.sel(d=row["d"], beta=row["beta"], seed=seed).transpose("time", "mode")
            values = m.values
            first = next(i for i in range(len(values)) if np.nanmax(values[i]) >= 0.05)
            modes.append(str(1 + int(np.argmax(values[first]))))
        assert row["mode"] == " ".join(modes)
    # The paper's example: three-fold at beta = 5 on the circle, in both seeds.
    assert table.loc[table.beta == 5.0, "mode"].item() == "3 3"
