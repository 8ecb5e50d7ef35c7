"""Studies: an experiment, a reduction and a figure, as files in one folder.

A study is a folder (``studies/<name>/`` in the source tree) holding

``experiment.toml``
    the experiment, exactly as ``nadyn sweep`` reads it ([run] and [sweep]);
``reduce.py``
    ``reduce(data) -> pandas.DataFrame``: the table, from the sweep file opened with
    :func:`nadyn.open` (an ``xarray.Dataset`` over the sweep's axes and time); or a dict of
    DataFrames, the first the study's table (named by its key: ``<key>.md``/``.csv``), the
    others extra ``<key>.csv`` files. Optional:
    ``TITLE`` (the table's heading), ``NOTE`` (Markdown printed under the table),
    ``FORMATS`` (a format spec per column, e.g. ``{"flips_mean": ".6f"}``), ``DIGITS``
    (significant digits of other numbers in the Markdown, default 4), ``FIGURE`` (the
    figure's file name, default ``<name>.png``) and ``figure(table, data, path)`` writing
    the figure to ``path``; ``QUICK`` (a list of ``KEY=VALUE`` settings, as ``--set`` takes
    them: the study's quick form, run by ``--quick``, for a check in seconds rather than
    minutes; ``LABEL:KEY=VALUE`` applies to the experiment ``experiments/LABEL.toml`` only); ``PAGE_TABLES`` (extra tables shown on the Markdown page too, each under its
    heading: ``{"<key>": "heading"}``; the others are CSV files only);
``README.md``
    what the study measures, the claim it checks and where the claim comes from.

A study that is not a run of the dynamics (say, a computation on random keys) has no
experiment: its ``reduce.py`` defines ``PARAMETERS`` (a dict of defaults, each one
overridable with ``--set KEY=VALUE``, VALUE a TOML value such as ``[1, 2, 3]``) and
``reduce(parameters)`` computes the table with the library's compiled functions
(``nadyn._core``); ``figure(table, parameters, path)`` likewise.

Running a study runs the sweep (``nadyn sweep experiment.toml --set ...``) into
``<out_dir>/data/<name>.h5``, reduces it and writes ``<out_dir>/<name>.md``, ``<name>.csv``
and ``<name>.png``. Nothing else is needed to add one: no C++, no rebuild.

    /usr/bin/python3 -m nadyn.study run studies/clustering_time --out-dir results
    /usr/bin/python3 -m nadyn.study run studies/clustering_time --set sweep.seed.range=[1,2]
    nadyn table clustering_time            # the same, through the command line

From Python::

    import nadyn.study
    result = nadyn.study.run("studies/clustering_time", out_dir="out", figures=False)
    result.table            # pandas.DataFrame
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import math
import os
import pathlib
import shutil
import subprocess
import sys
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .io import open as open_file


class StudyError(ValueError):
    """A study folder that cannot run: what is wrong, and what a study needs."""


@dataclasses.dataclass
class Study:
    """One study folder, checked: its name, experiment, reduction module and README."""

    name: str
    folder: pathlib.Path
    # The experiments by label: {"": experiment.toml}, or {"<stem>": experiments/<stem>.toml}.
    experiments: dict[str, pathlib.Path]
    module: Any

    def sweep_files(self, out: pathlib.Path) -> dict[str, pathlib.Path]:
        """Where each experiment's sweep goes: data/<name>.h5 or data/<name>-<label>.h5."""
        return {label: out / "data" / (f"{self.name}-{label}.h5" if label else f"{self.name}.h5")
                for label in self.experiments}

    @property
    def title(self) -> str:
        return getattr(self.module, "TITLE", self.name.replace("_", " ").capitalize())


@dataclasses.dataclass
class Result:
    """What running a study made: the table and the paths of every file written."""

    study: Study
    table: pd.DataFrame
    sweep_file: pathlib.Path | None  # the first experiment's (None: no sweep); sweep_files has every one by label
    sweep_files: dict[str, pathlib.Path]
    extra_tables: dict[str, pd.DataFrame]
    markdown: pathlib.Path
    csv: pathlib.Path
    figure: pathlib.Path | None


REQUIRED_FILES = ("experiment.toml", "reduce.py", "README.md")


def _experiments(folder: pathlib.Path) -> dict[str, pathlib.Path]:
    """experiment.toml, or the files of experiments/ by stem (sorted); empty when neither."""
    if (folder / "experiment.toml").is_file():
        return {"": folder / "experiment.toml"}
    if (folder / "experiments").is_dir():
        return {p.stem: p for p in sorted((folder / "experiments").glob("*.toml"))}
    return {}


def _is_study(folder: pathlib.Path) -> bool:
    return folder.is_dir() and all((folder / f).is_file() for f in REQUIRED_FILES[1:])


def default_studies_directory() -> pathlib.Path:
    """``$NADYN_STUDIES``, else ``studies/`` of the source tree this package lives in."""
    configured = os.environ.get("NADYN_STUDIES")
    if configured:
        return pathlib.Path(configured)
    return pathlib.Path(__file__).resolve().parents[2] / "studies"


def available(directory: str | os.PathLike | None = None) -> list[str]:
    """The names of the studies in ``directory`` (default: :func:`default_studies_directory`)."""
    root = pathlib.Path(directory) if directory is not None else default_studies_directory()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if _is_study(p))


def load(study: str | os.PathLike, directory: str | os.PathLike | None = None) -> Study:
    """A study by folder path, or by name in ``directory``; StudyError names what is missing."""
    folder = pathlib.Path(study)
    if not folder.is_dir():
        root = pathlib.Path(directory) if directory is not None else default_studies_directory()
        folder = root / str(study)
        if not folder.is_dir():
            names = ", ".join(available(root)) or "none"
            raise StudyError(f"no study '{study}' (studies in {root}: {names})")
    missing = [f for f in REQUIRED_FILES[1:] if not (folder / f).is_file()]
    if missing:
        raise StudyError(f"'{folder}' is not a study: it lacks {', '.join(missing)} "
                         f"(a study folder holds {', '.join(REQUIRED_FILES)}, or experiments/*.toml "
                         "for several experiments)")
    name = folder.resolve().name
    spec = importlib.util.spec_from_file_location(f"nadyn_study_{name}", folder / "reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "reduce", None)):
        raise StudyError(f"'{folder / 'reduce.py'}' defines no reduce(data) function")
    if not _experiments(folder) and not isinstance(getattr(module, "PARAMETERS", None), dict):
        raise StudyError(f"'{folder}' is not a study: it lacks experiment.toml (or "
                         "experiments/*.toml), and its reduce.py defines no PARAMETERS dict "
                         "(a study that runs no sweep)")
    return Study(name=name, folder=folder, experiments=_experiments(folder), module=module)


def nadyn_program(explicit: str | os.PathLike | None = None) -> str:
    """The nadyn program: ``explicit``, ``$NADYN_CLI``, the build tree's, or ``nadyn`` on PATH."""
    candidates = [explicit, os.environ.get("NADYN_CLI"),
                  pathlib.Path(__file__).resolve().parents[2] / "build" / "bin" / "nadyn",
                  shutil.which("nadyn")]
    for candidate in candidates:
        if candidate and pathlib.Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise StudyError("cannot find the nadyn program: pass nadyn=..., set NADYN_CLI, "
                     "or build it (scripts/setup.sh)")


def run_sweep(experiment: pathlib.Path, sweep_file: pathlib.Path, sets: Sequence[str] = (),
              nadyn: str | None = None, quiet: bool = True) -> None:
    """``nadyn sweep`` on one experiment into ``sweep_file`` (replaced)."""
    command = [nadyn_program(nadyn), "sweep", str(experiment)]
    for setting in sets:
        command += ["--set", setting]
    # The sweep's report goes to stderr: stdout carries the table only.
    completed = subprocess.run(command + ["--out", str(sweep_file), "--force"]
                               + (["--quiet"] if quiet else []), stdout=subprocess.PIPE,
                               text=True)
    sys.stderr.write(completed.stdout)
    if completed.returncode != 0:
        raise subprocess.CalledProcessError(completed.returncode, command)


def experiment_settings(study: Study, label: str, sets: Sequence[str] = ()) -> list[str]:
    """The settings of ``sets`` that apply to the experiment ``label``: ``KEY=VALUE`` applies to
    every experiment, ``LABEL:KEY=VALUE`` to the experiment ``experiments/LABEL.toml`` only
    (experiments of different models take different keys: a particle sweep's ``run.n`` is no
    key of a density sweep). StudyError names an unknown label."""
    chosen = []
    for setting in sets:
        key = setting.partition("=")[0]
        if ":" in key:
            target, _, setting = setting.partition(":")
            if target.strip() not in study.experiments:
                raise StudyError(f"{study.name}: --set {target}:{setting}: no experiment "
                                 f"'{target}' (its experiments: "
                                 f"{', '.join(l for l in study.experiments if l) or 'experiment.toml'})")
            if target.strip() != label:
                continue
        chosen.append(setting)
    return chosen


def check_experiment(study: Study, sets: Sequence[str] = (), nadyn: str | None = None) -> None:
    """``nadyn sweep --dry-run`` on every experiment: a bad key or value fails here, before
    any file is made. ``sets`` apply to each experiment (``LABEL:KEY=VALUE`` to one only,
    :func:`experiment_settings`)."""
    for label, experiment in study.experiments.items():
        command = [nadyn_program(nadyn), "sweep", str(experiment), "--dry-run"]
        for setting in experiment_settings(study, label, sets):
            command += ["--set", setting]
        completed = subprocess.run(command, stdout=subprocess.DEVNULL)
        if completed.returncode != 0:
            raise subprocess.CalledProcessError(completed.returncode, command)


def open_sweeps(study: Study, sweep_files: dict[str, pathlib.Path] | str | os.PathLike):
    """What reduce() gets: the Dataset of a study with one experiment, else a dict of
    Datasets by experiment label."""
    if not isinstance(sweep_files, dict):
        sweep_files = {"": pathlib.Path(sweep_files)}
    if list(sweep_files) == [""]:
        return open_file(sweep_files[""])
    return {label: open_file(path) for label, path in sweep_files.items()}


def run_parameters(data, **point) -> dict[str, str]:
    """The full parameter record of one run of a sweep (``point``: one value per axis, e.g.
    ``scheme="pre-ln", beta=5.0``), as text by name: ``{"n": "256", "r0": "1", ...}``."""
    record = data.parameters.sel(point).values
    if record.ndim:
        raise StudyError(f"run_parameters needs one value for every axis {list(data.parameters.dims)}")
    return dict(item.split("=", 1) for item in str(record.item()).split("; ") if "=" in item)


def study_parameters(study: Study, sets: Sequence[str] = ()) -> dict[str, Any]:
    """The PARAMETERS of a study that runs no sweep, with ``sets`` (``KEY=VALUE``, VALUE a
    TOML value) applied; StudyError names an unknown key or a value that does not parse."""
    import tomllib

    parameters = dict(study.module.PARAMETERS)
    for setting in sets:
        key, equals, text = setting.partition("=")
        key = key.strip()
        if not equals or key not in parameters:
            raise StudyError(f"{study.name}: --set {setting}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(parameters)}")
        try:
            value = tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError as error:
            raise StudyError(f"{study.name}: --set {setting}: '{text}' is not a TOML value "
                             f"({error})") from None
        default = parameters[key]
        if type(value) is not type(default) and not (
                isinstance(default, float) and isinstance(value, int)):
            raise StudyError(f"{study.name}: --set {setting}: {key} is a "
                             f"{type(default).__name__} (default {default!r})")
        parameters[key] = value
    return parameters


def reduce_tables(study: Study, sweep_file) -> dict[str, pd.DataFrame]:
    """Every table of the study from its sweep file(s) already run (a path, or a dict of
    paths by experiment label): ``reduce()`` returns one DataFrame (the study's table) or a
    dict of them, the first being the study's table and the others extra CSV files (name:
    the file's path under the output folder, without .csv). For a study that runs no sweep,
    ``sweep_file`` is its parameters (:func:`study_parameters`)."""
    data = sweep_file if not study.experiments else open_sweeps(study, sweep_file)
    try:
        result = study.module.reduce(data)
    except ValueError as error:  # the reduction refuses this sweep (say, a missing axis value)
        raise StudyError(f"{study.name}: {error}") from error
    tables = result if isinstance(result, dict) else {study.name: result}
    for name, table in tables.items():
        if not isinstance(table, pd.DataFrame):
            raise StudyError(f"{study.name}: reduce() gave {type(table).__name__} for '{name}', "
                             "not a pandas.DataFrame")
    if not tables:
        raise StudyError(f"{study.name}: reduce() returned no table")
    return tables


def _cell(value: Any, spec: str | None, digits: int, missing: str = "-") -> str:
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return missing
    if spec is not None:
        return format(value, spec)
    if isinstance(value, (float, np.floating)):
        return f"{value:.{digits}g}"
    return str(value)


def formatted(table: pd.DataFrame, formats: dict[str, str] | None = None,
              digits: int | None = 4, missing: str = "-") -> pd.DataFrame:
    """The table as text: ``formats`` maps a column to a format spec (``".6f"``, ``"g"``);
    other floats get ``digits`` significant digits (``None``: as Python prints them); NaN
    becomes ``missing``."""
    frame = table.reset_index() if not isinstance(table.index, pd.RangeIndex) else table
    formats = formats or {}
    columns = {}
    for column in frame.columns:
        spec = formats.get(str(column))
        if spec is None and digits is None:
            columns[column] = [_cell(v, "", 0, missing) if isinstance(v, (float, np.floating))
                               else str(v) for v in frame[column]]
        else:
            columns[column] = [_cell(v, spec, digits or 4, missing) for v in frame[column]]
    return pd.DataFrame(columns)


def markdown_table(table: pd.DataFrame, digits: int = 4,
                   formats: dict[str, str] | None = None) -> str:
    """A DataFrame as a GitHub Markdown table (numbers to ``digits`` significant digits, or
    as ``formats`` says per column)."""
    frame = formatted(table, formats, digits)
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows]) + "\n"


def csv_text(study: Study, table: pd.DataFrame, name: str | None = None) -> str:
    """The table as CSV: per column the study's ``FORMATS`` (for an extra table ``name``,
    ``TABLE_FORMATS[name]`` when given), full precision elsewhere."""
    formats = getattr(study.module, "FORMATS", None)
    if name is not None:
        formats = getattr(study.module, "TABLE_FORMATS", {}).get(name, formats)
    text = formatted(table, formats, digits=None, missing="")
    return text.to_csv(index=False)


def markdown(study: Study, table: pd.DataFrame, sets: Sequence[str] = (),
             extras: dict[str, tuple[str, pd.DataFrame]] | None = None) -> str:
    """The study's Markdown page: title, how it was made, the table, the note, then the
    extra tables the study shows on its page (``extras``: by key, heading and table)."""
    experiments = ", ".join(f"`studies/{study.name}/{p.relative_to(study.folder)}`"
                            for p in study.experiments.values())
    if study.experiments:
        how = f"Study `studies/{study.name}/` (experiment{'s' if len(study.experiments) > 1 else ''} {experiments}"
    else:
        how = f"Study `studies/{study.name}/` (a computation of `reduce.py`, no sweep"
    how += (", with " + ", ".join(f"`--set {s}`" for s in sets)) if sets else ""
    how += f"); made by `nadyn table {study.name}`. What it checks: `studies/{study.name}/README.md`."
    digits = getattr(study.module, "DIGITS", 4)
    parts = [f"# {study.title}\n", how + "\n",
             markdown_table(table, digits, getattr(study.module, "FORMATS", None))]
    note = getattr(study.module, "NOTE", "")
    if note:
        parts.append(note.strip() + "\n")
    for name, (heading, extra) in (extras or {}).items():
        formats = getattr(study.module, "TABLE_FORMATS", {}).get(
            name, getattr(study.module, "FORMATS", None))
        parts.append(f"## {heading}\n\nAlso in `{name}.csv`.\n")
        parts.append(markdown_table(extra, digits, formats))
    return "\n".join(parts)


def _write_whole(path: pathlib.Path, text: str) -> None:
    """Writes a file whole or not at all: a temporary beside it, renamed into place."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


def quick_settings(study: Study) -> list[str]:
    """The settings of the study's quick form (``QUICK`` in its reduce.py); StudyError when
    it has none or they are not a list of ``KEY=VALUE`` strings."""
    quick = getattr(study.module, "QUICK", None)
    if quick is None:
        raise StudyError(f"{study.name} has no quick form for --quick (its reduce.py "
                         "defines no QUICK list of KEY=VALUE settings)")
    if not isinstance(quick, (list, tuple)) or not all(
            isinstance(s, str) and "=" in s for s in quick):
        raise StudyError(f"{study.name}: QUICK must be a list of KEY=VALUE strings, "
                         f"got {quick!r}")
    return list(quick)


def run(study: str | os.PathLike | Study, out_dir: str | os.PathLike = "results",
        sets: Sequence[str] = (), *, figures: bool = True, nadyn: str | None = None,
        sweep_file: str | os.PathLike | None = None, quiet: bool = True,
        quick: bool = False) -> Result:
    """Run a study: the sweep, the reduction, the files (see the module's documentation).

    ``sweep_file``: reduce this sweep file instead of running the experiment (for a study of
    several experiments, a dict of files by label). ``quick``: the study's quick form, its
    ``QUICK`` settings applied before ``sets`` (so ``sets`` can still change them).
    """
    if not isinstance(study, Study):
        study = load(study)
    if quick:
        sets = quick_settings(study) + list(sets)
    out = pathlib.Path(out_dir)
    if not study.experiments:
        if sweep_file is not None:
            raise StudyError(f"{study.name} runs no sweep: there is no sweep file to reduce")
        return _run_computation(study, out, sets, figures)
    if sweep_file is None:
        check_experiment(study, sets, nadyn)
        (out / "data").mkdir(parents=True, exist_ok=True)
        sweep_files = study.sweep_files(out)
        for label, experiment in study.experiments.items():
            run_sweep(experiment, sweep_files[label], experiment_settings(study, label, sets),
                      nadyn=nadyn, quiet=quiet)
    else:
        if sets:
            raise StudyError("--set applies to the experiment; with a given sweep file "
                             "there is nothing to run")
        out.mkdir(parents=True, exist_ok=True)
        sweep_files = ({label: pathlib.Path(p) for label, p in sweep_file.items()}
                       if isinstance(sweep_file, dict) else {"": pathlib.Path(sweep_file)})
        if sorted(sweep_files) != sorted(study.experiments):
            raise StudyError(f"{study.name}: give one sweep file per experiment "
                             f"({', '.join(study.experiments) or 'experiment.toml'})")
    tables = reduce_tables(study, sweep_files)
    return _write(study, out, sets, tables, figures, sweep_files,
                  lambda: open_sweeps(study, sweep_files))


def _run_computation(study: Study, out: pathlib.Path, sets: Sequence[str],
                     figures: bool) -> Result:
    """A study without an experiment: reduce(PARAMETERS with ``sets``), then the files."""
    parameters = study_parameters(study, sets)
    tables = reduce_tables(study, parameters)  # bad parameters fail here, before any file
    out.mkdir(parents=True, exist_ok=True)
    return _write(study, out, sets, tables, figures, {}, lambda: parameters)


def _write(study: Study, out: pathlib.Path, sets: Sequence[str],
           tables: dict[str, pd.DataFrame], figures: bool,
           sweep_files: dict[str, pathlib.Path], figure_data) -> Result:
    main_name, table = next(iter(tables.items()))
    md, csv = out / f"{main_name}.md", out / f"{main_name}.csv"
    page_tables = getattr(study.module, "PAGE_TABLES", {})
    unknown = sorted(set(page_tables) - set(list(tables)[1:]))
    if unknown:
        raise StudyError(f"{study.name}: PAGE_TABLES names {', '.join(unknown)}, which reduce() "
                         f"does not return (its extra tables: {', '.join(list(tables)[1:]) or 'none'})")
    extras = {name: (heading, tables[name]) for name, heading in page_tables.items()}
    _write_whole(md, markdown(study, table, sets, extras))
    _write_whole(csv, csv_text(study, table))
    for name, extra in list(tables.items())[1:]:
        (out / f"{name}.csv").parent.mkdir(parents=True, exist_ok=True)
        _write_whole(out / f"{name}.csv", csv_text(study, extra, name))
    figure = None
    if figures and callable(getattr(study.module, "figure", None)):
        import matplotlib

        matplotlib.use("Agg")
        figure = out / getattr(study.module, "FIGURE", f"{study.name}.png")
        study.module.figure(table, figure_data(), figure)
    return Result(study=study, table=table, sweep_file=next(iter(sweep_files.values()), None),
                  sweep_files=sweep_files,
                  extra_tables=dict(list(tables.items())[1:]), markdown=md, csv=csv,
                  figure=figure)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m nadyn.study",
                                     description="Run or list nadyn's studies.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the studies available")
    listing.add_argument("--studies", help="the folder of studies (default: the source tree's)")
    running = commands.add_parser("run", help="run one study: sweep, reduce, write")
    running.add_argument("study", help="a study folder, or a study's name")
    running.add_argument("--studies", help="the folder of studies (default: the source tree's)")
    running.add_argument("--out-dir", default="results", help="where the files go")
    running.add_argument("--set", action="append", default=[], dest="sets",
                         metavar="KEY=VALUE", help="override a key of the experiment")
    running.add_argument("--sweep-file", help="reduce this sweep file instead of running")
    running.add_argument("--quick", action="store_true",
                         help="the study's quick form (its QUICK settings, before any --set)")
    running.add_argument("--no-figures", action="store_true", help="skip the figure")
    running.add_argument("--format", choices=["md", "csv"], default="md",
                         help="what to print on stdout")
    running.add_argument("--nadyn", help="the nadyn program (default: $NADYN_CLI, the build's)")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for name in available(args.studies):
                print(name)
            return 0
        study = load(args.study, args.studies)
        result = run(study, args.out_dir, args.sets, figures=not args.no_figures,
                     nadyn=args.nadyn, sweep_file=args.sweep_file, quick=args.quick)
    except StudyError as error:
        print(f"nadyn study: {error}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as error:
        # nadyn sweep said why on stderr; its status (2: bad input, 1: a failed run) carries on.
        return error.returncode
    sys.stdout.write((result.markdown if args.format == "md" else result.csv).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
