"""Shared fixtures of the Python tests: the nadyn command line (NADYN_CLI, set by ctest; else
build/bin/nadyn of this checkout) and a helper that makes small trajectory files with it."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# Test the source tree, not an installed copy (ctest sets PYTHONPATH too).
sys.path.insert(0, str(REPO / "python"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("NADYN_CLI") or str(REPO / "build" / "bin" / "nadyn")
    if not os.access(path, os.X_OK):
        pytest.fail(f"nadyn CLI not found at {path}; build it (cmake --build build --target nadyn_cli) or set NADYN_CLI")
    return path


@pytest.fixture
def simulate(cli, tmp_path):
    """simulate(name, *flags) runs `nadyn simulate` quietly into tmp_path/name and returns the path."""

    def run(name: str, *flags: str, expect: int = 0) -> pathlib.Path:
        out = tmp_path / name
        result = subprocess.run(
            [cli, "simulate", *flags, "--out", str(out), "--quiet"],
            capture_output=True, text=True, timeout=300,
        )
        assert result.returncode == expect, result.stderr
        return out

    return run


@pytest.fixture
def quick_twice(cli, tmp_path):
    """quick_twice(study_folder, figures=False) runs the study's quick form twice (into
    tmp_path/"a" and tmp_path/"b"), asserts that every table it writes (.md and .csv) is the
    same bytes both times (the issue's "quick forms' tables reproducible bitwise"), and
    returns the first run's nadyn.study.Result."""
    import nadyn.study as study

    def run(folder, figures: bool = False):
        first = study.run(folder, tmp_path / "a", quick=True, figures=figures, nadyn=cli)
        study.run(folder, tmp_path / "b", quick=True, figures=False, nadyn=cli)
        tables = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*")
                        if p.suffix in (".md", ".csv"))
        assert tables, "the study wrote no table"
        for name in tables:
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
        assert tables == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*")
                                if p.suffix in (".md", ".csv"))
        return first

    return run
