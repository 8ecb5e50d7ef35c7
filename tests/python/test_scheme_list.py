"""One list of schemes (include/nadyn/model/schemes/list.hpp), seen from Python as
nadyn._core.schemes(): its rows against the library's other answers, README.md's scheme
table, and the scheme axes of the studies that sweep every scheme or the paper's six."""

from __future__ import annotations

import pathlib
import re
import tomllib

import pytest

import nadyn

pytestmark = pytest.mark.skipif(not nadyn.has_core, reason="nadyn._core is not built")

REPO = pathlib.Path(__file__).resolve().parents[2]


def schemes():
    return nadyn._core.schemes()


def names(rows):
    return [row["name"] for row in rows]


def test_schemes_are_the_list_in_help_order():
    rows = schemes()
    assert names(rows) == nadyn._core.scheme_names()
    assert names(rows)[:2] == ["post-ln", "pre-ln"] and "no-norm" in names(rows)
    assert set(rows[0]) == {"name", "layer", "speed", "radial_rate", "uses_magnitude",
                            "uses_attention_norm", "attention_reads_tokens", "in_paper_tables",
                            "has_breakpoint", "has_initial_velocity", "has_clock",
                            "has_terminal_law"}
    by_name = {row["name"]: row for row in rows}
    assert by_name["mix-ln"]["has_breakpoint"] and not by_name["pre-ln"]["has_breakpoint"]
    assert by_name["no-norm"]["attention_reads_tokens"]
    assert by_name["peri-ln"]["speed"] == "r_k ‖A_k‖"


def test_optional_parts_are_what_the_library_answers():
    for row in schemes():
        scheme = row["name"]
        if row["has_terminal_law"]:
            assert nadyn._core.fits.predicted(scheme)[0] in nadyn._core.fits.laws()
        else:
            with pytest.raises(ValueError, match="has no terminal law"):
                nadyn._core.fits.predicted(scheme)
        if row["has_clock"]:
            assert nadyn._core.closed_forms.uniform_clock(scheme, 0.0, 1.0, 2, "softmax") == 0.0
        else:
            with pytest.raises(ValueError, match=f"{scheme} has no clock .*; valid: post-ln"):
                nadyn._core.closed_forms.uniform_clock(scheme, 1.0, 1.0, 2, "softmax")
        assert row["has_initial_velocity"]  # every scheme of the library has gamma'(0)
        assert nadyn._core.closed_forms.initial_velocity(scheme, 4, 1.0) > 0.0
        # The paper's six are the schemes with a terminal law.
        assert row["in_paper_tables"] == row["has_terminal_law"]


def test_readme_scheme_table_is_the_list():
    text = (REPO / "README.md").read_text()
    table = re.findall(r"^\| `([\w-]+)` \| .* \| (.+?) \| (.+?) \|$", text, re.M)
    assert [name for name, _, _ in table] == names(schemes())
    for (name, speed, radial), row in zip(table, schemes()):
        assert (speed, radial) == (row["speed"], row["radial_rate"]), name


def scheme_axis(path):
    axis = tomllib.loads(path.read_text())["sweep"]["scheme"]
    return axis if isinstance(axis, list) else [axis]


def test_studies_sweep_the_schemes_of_the_list():
    every = names(schemes())
    paper = [row["name"] for row in schemes() if row["in_paper_tables"]]
    assert scheme_axis(REPO / "studies" / "initial" / "experiment.toml") == every
    assert scheme_axis(REPO / "studies" / "random_weights" / "experiment.toml") == paper
    terminal = [s for toml in sorted((REPO / "studies" / "terminal" / "experiments").glob("*.toml"))
                for s in scheme_axis(toml)]
    assert sorted(terminal) == sorted(paper)
    # Each in the experiment of its own law.
    for toml in (REPO / "studies" / "terminal" / "experiments").glob("*.toml"):
        for scheme in scheme_axis(toml):
            assert nadyn._core.fits.predicted(scheme)[0] == toml.stem
