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

Running a study runs the sweep (what ``nadyn sweep experiment.toml --set ...`` runs: in this
process through the compiled module when it is built, else that command) into
``<out_dir>/data/<name>.h5``, reduces it and writes ``<out_dir>/<name>.md``, ``<name>.csv``
and ``<name>.png`` (files an earlier run left there are refused unless ``--force``, as
``nadyn sweep`` refuses an existing output). Nothing else is needed to add one: no C++, no
rebuild. ``nadyn table``
is this module's ``table`` command (the program execs it); ``table all`` runs the studies of
the manifest ``studies/paper.toml`` (:mod:`nadyn.paper`).

    /usr/bin/python3 -m nadyn.study run studies/clustering_time --out-dir results --force
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
import errno
import importlib.util
import math
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import traceback
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .io import open as open_file


class StudyError(ValueError):
    """A study folder that cannot run: what is wrong, and what a study needs (exit status 2)."""


class StudyFailure(RuntimeError):
    """A study that ran and failed: runs of its sweep failed (exit status 1)."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the study (``main`` exits 128 + the signal's number: 130, 143).

    Raised by the handlers ``main`` installs; a sweep in this process stops at its runs' next
    step (the compiled module polls Python's handlers), a ``nadyn`` child is sent the same
    signal and waited for."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


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
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # a syntax error, a failed import, anything raised at load
        raise StudyError(code_error(folder / "reduce.py", error)) from error
    if not callable(getattr(module, "reduce", None)):
        raise StudyError(f"'{folder / 'reduce.py'}' defines no reduce(data) function")
    if not _experiments(folder) and not isinstance(getattr(module, "PARAMETERS", None), dict):
        raise StudyError(f"'{folder}' is not a study: it lacks experiment.toml (or "
                         "experiments/*.toml), and its reduce.py defines no PARAMETERS dict "
                         "(a study that runs no sweep)")
    return Study(name=name, folder=folder, experiments=_experiments(folder), module=module)


def code_error(path: pathlib.Path, error: BaseException) -> str:
    """One line for an error in a study's code: ``path:line: Type: message``, the line being
    the deepest of the traceback in ``path`` (for a syntax error, the error's own)."""
    line = None
    if isinstance(error, SyntaxError) and error.filename and \
            pathlib.Path(error.filename).resolve() == path.resolve():
        line, message = error.lineno, error.msg
    else:
        message = str(error)
        for frame in traceback.extract_tb(error.__traceback__):
            if pathlib.Path(frame.filename).resolve() == path.resolve():
                line = frame.lineno
    where = f"{path}:{line}" if line else str(path)
    return (f"{where}: {type(error).__name__}: {message} " if message else
            f"{where}: {type(error).__name__} ") + "(--verbose shows the traceback)"


# ---- child processes and signals -----------------------------------------------------------

CHILD_GRACE_SECONDS = 15.0  # a stopped `nadyn` child closes its files within 8 s (its alarm)
_PR_SET_PDEATHSIG = 1
_stopping = False


def _on_stop_signal(signum, frame):
    """SIGINT and SIGTERM: raise Interrupted once; a repeat while it unwinds is ignored here
    (a child being stopped meanwhile is killed: _stop_child)."""
    global _stopping
    if _stopping:
        return
    _stopping = True
    raise Interrupted(signum)


def install_stop_signals() -> dict:
    """SIGINT and SIGTERM raise Interrupted (once); returns the previous handlers."""
    global _stopping
    _stopping = False
    return {s: signal.signal(s, _on_stop_signal) for s in (signal.SIGINT, signal.SIGTERM)}


def _prctl():
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def _die_with(parent: int, prctl):
    """The child's set-up (after fork, before exec): SIGTERM when this process ends, however
    it ends (SIGKILL included), so no `nadyn sweep` outlives the study that started it."""

    def setup():
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent ended before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return setup


def _stop_child(process: subprocess.Popen, signum: int) -> None:
    """Stops a child as the signal would have stopped it alone (nadyn: its runs keep their
    last frame, its files are closed) and waits for it; a second signal, or the grace period
    passing, kills it."""
    previous = {}
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            previous[s] = signal.signal(s, lambda *_: process.kill())
    except ValueError:  # not the main thread: its handlers are not ours to change
        pass
    try:
        if process.poll() is None:
            process.send_signal(signum)
        try:
            process.wait(timeout=CHILD_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_child(command: Sequence[str], stdout=None) -> subprocess.CompletedProcess:
    """Runs a program this study needs (``nadyn sweep``, the figure script) in this process's
    group; it dies with this process (PR_SET_PDEATHSIG) and is stopped with it (Interrupted:
    the same signal, then a wait). ``stdout``: as subprocess.Popen's (PIPE: returned as text)."""
    process = subprocess.Popen(list(command), stdout=stdout, text=True,
                               preexec_fn=_die_with(os.getpid(), _prctl()))
    try:
        out, _ = process.communicate()
    except BaseException as error:
        _stop_child(process, error.signum if isinstance(error, Interrupted) else
                    signal.SIGINT if isinstance(error, KeyboardInterrupt) else signal.SIGTERM)
        raise
    return subprocess.CompletedProcess(list(command), process.returncode, out)


def compiled_sweeps():
    """The compiled module when sweeps run in this process, else None (they run through
    ``nadyn sweep``). ``$NADYN_STUDY_SWEEPS``: ``auto`` (the default: in-process when the
    module is built), ``in-process`` or ``cli``."""
    mode = os.environ.get("NADYN_STUDY_SWEEPS", "auto") or "auto"
    if mode not in ("auto", "in-process", "cli"):
        raise StudyError(f"NADYN_STUDY_SWEEPS='{mode}': valid values: auto, in-process, cli")
    if mode == "cli":
        return None
    import nadyn

    core = nadyn._core if nadyn.has_core else None
    if core is not None and all(hasattr(core, f) for f in ("_sweep", "_plan_sweep")):
        return core
    if mode == "in-process":
        raise StudyError("NADYN_STUDY_SWEEPS=in-process, but nadyn's compiled module is not "
                         "built (or is older than its Python package): build it, or unset "
                         "NADYN_STUDY_SWEEPS")
    return None


def make_directory(path: pathlib.Path) -> None:
    """Creates an output directory; StudyError (exit 2) naming it and the system's reason."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StudyError(f"cannot create output directory '{path}': "
                         f"{error.strerror or error}") from error
    if not path.is_dir():
        raise StudyError(f"cannot create output directory '{path}': not a directory")
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        raise StudyError(f"cannot write into output directory '{path}': "
                         f"{os.strerror(errno.EROFS)}")
    if not os.access(path, os.W_OK):
        raise StudyError(f"cannot write into output directory '{path}': "
                         f"{os.strerror(errno.EACCES)}")


def refuse_non_regular(*paths: pathlib.Path) -> None:
    """StudyError naming the first path that exists and is not a regular file (a FIFO, a
    directory, a device): a study writes its files whole and replaces only regular files."""
    for path in paths:
        for candidate in (path, path.with_name(path.name + ".partial")):
            try:
                mode = os.stat(candidate).st_mode
            except FileNotFoundError:
                continue
            except OSError as error:
                raise StudyError(f"cannot use '{candidate}': {error.strerror}") from error
            if not stat.S_ISREG(mode):
                raise StudyError(f"'{candidate}' exists and is not a regular file; a study "
                                 "writes its files there (remove it, or choose another "
                                 "--out-dir)")


def _finished_sweep(path: pathlib.Path) -> bool:
    """Whether ``path`` is a sweep file whose every run finished (root status complete)."""
    if not path.is_file():
        return False
    try:
        import h5py  # noqa: PLC0415

        with h5py.File(path, "r", locking=False) as f:
            status = f.attrs.get("status", b"")
    except (OSError, ValueError):
        return False
    return (status.decode() if isinstance(status, bytes) else str(status)) == "complete"


def refuse_overwrite(force: bool, *paths: pathlib.Path) -> None:
    """StudyError naming the first of ``paths`` that exists, unless ``force``."""
    if force:
        return
    for path in paths:
        if path.exists():
            raise StudyError(f"'{path}' already exists; pass --force to overwrite it (or "
                             "choose another --out-dir)")


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
              nadyn: str | None = None, quiet: bool = True,
              progress: bool | None = None) -> None:
    """``nadyn sweep`` on one experiment into ``sweep_file`` (replaced): in this process when
    the compiled module is built (:func:`compiled_sweeps`) and the experiment is one of
    particles, else through the program ``nadyn``. ``progress``: a bar of the runs done
    (nadyn.progress: None on a terminal or in a notebook), the program's own bar for a child."""
    from .progress import Bar, wanted  # noqa: PLC0415

    core = compiled_sweeps()
    if core is not None and _model(core, experiment, sets) == "particles":
        try:
            with Bar(progress, f"sweep {sweep_file.name}", "run") as bar:
                summary = core._sweep(None, str(experiment), list(sets), str(sweep_file), 0, True,
                                      **({"progress": bar.callback} if bar.callback else {}))
                if summary["signal"] is None:
                    done = summary["complete"] + summary["interrupted"] + summary["failed"]
                    bar.finish(done, done)
        except ValueError as error:
            raise StudyError(str(error)) from error
        if summary["signal"] is not None:  # main says it in one line
            raise summary["signal"]
        # The report `nadyn sweep --quiet` prints, on stderr: stdout carries the table only.
        sys.stderr.write(f"complete: {summary['complete']} runs complete, {summary['interrupted']} "
                         f"interrupted, {summary['failed']} failed, {summary.get('skipped', 0)} "
                         f"already done ({summary['jobs']} side by side), "
                         f"{summary['wall_seconds']:.3f} s\nwrote {sweep_file}\n")
        if summary["failed"]:
            raise StudyFailure(f"{summary['failed']} runs failed; the first: "
                               f"{summary['first_failure']}")
        return
    command = [nadyn_program(nadyn), "sweep", str(experiment)]
    for setting in sets:
        command += ["--set", setting]
    completed = run_child(command + ["--out", str(sweep_file), "--force"]
                          + (["--quiet"] if quiet and not wanted(progress) else []),
                          stdout=subprocess.PIPE)
    sys.stderr.write(completed.stdout or "")
    if completed.returncode != 0:
        raise subprocess.CalledProcessError(completed.returncode, command)


def _model(core, experiment: pathlib.Path, sets: Sequence[str]) -> str:
    """The experiment's model (particles, meanfield) as the library reads it."""
    try:
        return core._plan_sweep(str(experiment), list(sets), 0)["model"]
    except ValueError as error:
        raise StudyError(str(error)) from error


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
    core = compiled_sweeps()
    for label, experiment in study.experiments.items():
        settings = experiment_settings(study, label, sets)
        if core is not None and _model(core, experiment, settings) == "particles":
            continue  # _model checked every run, as --dry-run does
        command = [nadyn_program(nadyn), "sweep", str(experiment), "--dry-run"]
        for setting in settings:
            command += ["--set", setting]
        completed = run_child(command, stdout=subprocess.DEVNULL)
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
    where, studies = location(study)
    experiments = ", ".join(f"`{where}{p.relative_to(study.folder)}`"
                            for p in study.experiments.values())
    if study.experiments:
        how = f"Study `{where}` (experiment{'s' if len(study.experiments) > 1 else ''} {experiments}"
    else:
        how = f"Study `{where}` (a computation of `reduce.py`, no sweep"
    how += (", with " + ", ".join(f"`--set {s}`" for s in sets)) if sets else ""
    how += f"); made by `nadyn table {study.name}{studies}`. What it checks: `{where}README.md`."
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


def location(study: Study) -> tuple[str, str]:
    """Where the study's folder is, as its page says it: ``studies/NAME/`` for one of the
    source tree's (default) studies, else its folder, with the ``--studies DIR`` that
    ``nadyn table`` needs to find it again."""
    folder = study.folder.resolve()
    if folder.parent == default_studies_directory().resolve():
        return f"studies/{study.name}/", ""
    return f"{folder}/", f" --studies {folder.parent}"


def write_whole(path: pathlib.Path, text: str) -> None:
    """Writes a file whole or not at all: a temporary beside it, renamed into place. Refuses
    (StudyError) a path or temporary that is not a regular file (a FIFO would block the write,
    or be replaced); the temporary is removed when the write fails."""
    refuse_non_regular(path)
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text)
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


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
        quick: bool = False, force: bool = False, progress: bool | None = None) -> Result:
    """Run a study: the sweep, the reduction, the files (see the module's documentation).

    ``sweep_file``: reduce this sweep file instead of running the experiment (for a study of
    several experiments, a dict of files by label). ``quick``: the study's quick form, its
    ``QUICK`` settings applied before ``sets`` (so ``sets`` can still change them).
    ``force``: replace the files an earlier run left in ``out_dir``; without it, StudyError
    (exit 2) naming the first one, before anything runs, as ``nadyn simulate`` and
    ``nadyn sweep`` refuse an existing output. ``progress``: a bar of each sweep's runs
    (tqdm): None shows it on a terminal or in a notebook, False never, True always.
    """
    if not isinstance(study, Study):
        study = load(study)
    if quick:
        sets = quick_settings(study) + list(sets)
    out = pathlib.Path(out_dir)
    # The files named after the study (its table's, for most): a FIFO or a directory in the
    # way is refused before anything runs (_write checks every file again, by its real name).
    refuse_non_regular(out / f"{study.name}.md", out / f"{study.name}.csv")
    # A finished sweep is a result too; an interrupted one (Ctrl-C) is what a rerun replaces.
    refuse_overwrite(force, out / f"{study.name}.md", out / f"{study.name}.csv",
                     *(p for p in (study.sweep_files(out).values() if sweep_file is None else ())
                       if _finished_sweep(p)))
    if not study.experiments:
        if sweep_file is not None:
            raise StudyError(f"{study.name} runs no sweep: there is no sweep file to reduce")
        return _run_computation(study, out, sets, figures, force)
    if sweep_file is None:
        check_experiment(study, sets, nadyn)
        make_directory(out)
        make_directory(out / "data")
        sweep_files = study.sweep_files(out)
        for label, experiment in study.experiments.items():
            run_sweep(experiment, sweep_files[label], experiment_settings(study, label, sets),
                      nadyn=nadyn, quiet=quiet, progress=progress)
    else:
        if sets:
            raise StudyError("--set applies to the experiment; with a given sweep file "
                             "there is nothing to run")
        make_directory(out)
        sweep_files = ({label: pathlib.Path(p) for label, p in sweep_file.items()}
                       if isinstance(sweep_file, dict) else {"": pathlib.Path(sweep_file)})
        if sorted(sweep_files) != sorted(study.experiments):
            raise StudyError(f"{study.name}: give one sweep file per experiment "
                             f"({', '.join(study.experiments) or 'experiment.toml'})")
    tables = reduce_tables(study, sweep_files)
    return _write(study, out, sets, tables, figures, sweep_files,
                  lambda: open_sweeps(study, sweep_files), force)


def _run_computation(study: Study, out: pathlib.Path, sets: Sequence[str],
                     figures: bool, force: bool = False) -> Result:
    """A study without an experiment: reduce(PARAMETERS with ``sets``), then the files."""
    parameters = study_parameters(study, sets)
    tables = reduce_tables(study, parameters)  # bad parameters fail here, before any file
    make_directory(out)
    return _write(study, out, sets, tables, figures, {}, lambda: parameters, force)


def _write(study: Study, out: pathlib.Path, sets: Sequence[str],
           tables: dict[str, pd.DataFrame], figures: bool,
           sweep_files: dict[str, pathlib.Path], figure_data, force: bool = False) -> Result:
    main_name, table = next(iter(tables.items()))
    md, csv = out / f"{main_name}.md", out / f"{main_name}.csv"
    page_tables = getattr(study.module, "PAGE_TABLES", {})
    unknown = sorted(set(page_tables) - set(list(tables)[1:]))
    if unknown:
        raise StudyError(f"{study.name}: PAGE_TABLES names {', '.join(unknown)}, which reduce() "
                         f"does not return (its extra tables: {', '.join(list(tables)[1:]) or 'none'})")
    extras = {name: (heading, tables[name]) for name, heading in page_tables.items()}
    draws = figures and callable(getattr(study.module, "figure", None))
    figure_path = out / getattr(study.module, "FIGURE", f"{study.name}.png")
    # Every file's path first: a FIFO or a directory in the way stops the study before any
    # of its files is written.
    refuse_non_regular(md, csv, *(out / f"{name}.csv" for name in list(tables)[1:]),
                       *([figure_path] if draws else []))
    refuse_overwrite(force, md, csv, *(out / f"{name}.csv" for name in list(tables)[1:]),
                     *([figure_path] if draws else []))
    write_whole(md, markdown(study, table, sets, extras))
    write_whole(csv, csv_text(study, table))
    for name, extra in list(tables.items())[1:]:
        make_directory((out / f"{name}.csv").parent)
        write_whole(out / f"{name}.csv", csv_text(study, extra, name))
    figure = None
    if draws:
        import matplotlib

        matplotlib.use("Agg")
        figure = figure_path
        # A study may restyle matplotlib (rcParams): its style ends with its figure, so the
        # studies of one process (nadyn table all) draw as each would alone.
        with matplotlib.rc_context():
            study.module.figure(table, figure_data(), figure)
    return Result(study=study, table=table, sweep_file=next(iter(sweep_files.values()), None),
                  sweep_files=sweep_files,
                  extra_tables=dict(list(tables.items())[1:]), markdown=md, csv=csv,
                  figure=figure)


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m nadyn.study",
                                     description="Run or list nadyn's studies.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the studies available")
    listing.add_argument("--studies", help="the folder of studies (default: the source tree's)")
    running = commands.add_parser("run", help="run one study: sweep, reduce, write")
    running.add_argument("study", help="a study folder, or a study's name")
    running.add_argument("--sweep-file", help="reduce this sweep file instead of running")
    running.add_argument("--format", choices=["md", "csv"], default="md",
                         help="what to print on stdout")
    table = commands.add_parser(
        "table", help="`nadyn table WHICH`: `all` (the studies of the folder's paper.toml and "
                      "results/README.md) or one study, by name or by its command name")
    table.add_argument("which", help="all, or a study's name")
    table.add_argument("--format", default="md", help="md | csv: the table printed")
    table.add_argument("--python", help="accepted for `nadyn table --python` (this Python "
                                        "runs the studies and the figure script)")
    table.add_argument("--invocation", help="the command line shown in results/README.md")
    for command in (running, table):
        command.add_argument("--studies", help="the folder of studies (default: the source tree's)")
        command.add_argument("--out-dir", default="results", help="where the files go")
        command.add_argument("--set", action="append", default=[], dest="sets",
                             metavar="KEY=VALUE", help="override a key of the experiment")
        command.add_argument("--quick", action="store_true",
                             help="the study's quick form (its QUICK settings, before any --set)")
        command.add_argument("--no-figures", action="store_true", help="skip the figures")
        command.add_argument("--nadyn", help="the nadyn program, for sweeps the compiled module "
                                             "does not run (default: $NADYN_CLI, the build's)")
        command.add_argument("--verbose", action="store_true",
                             help="the traceback under an error in a study's code")
        command.add_argument("--force", action="store_true",
                             help="overwrite the files an earlier run left in --out-dir")
    return parser.parse_args(argv)


def _table(args: argparse.Namespace) -> int:
    """`nadyn table WHICH`: one study (its table on stdout) or `all` (nadyn.paper)."""
    from . import paper

    root = pathlib.Path(args.studies) if args.studies else default_studies_directory()
    if args.which == "all":
        if args.sets:
            raise StudyError("--set applies to a study; 'all' runs every study with its own "
                             "settings")
        if args.quick:
            raise StudyError("--quick applies to a study; 'all' runs every study in full")
        invocation = args.invocation or " ".join(["python3 -m nadyn.study", *sys.argv[1:]])
        paper.run_all(root, pathlib.Path(args.out_dir), figures=not args.no_figures,
                      nadyn=args.nadyn, invocation=invocation, force=args.force)
        return 0
    commands = paper.commands(root)
    name = commands.get(args.which, args.which)
    if not _is_study(root / name):
        if (root / name).is_dir():
            load(root / name)  # a study folder that lacks a file: names it and the layout
        valid = ", ".join(["all", *commands, *available(root)])
        raise StudyError(f"unknown table or study '{args.which}' (valid: {valid})")
    if args.format not in ("md", "csv"):
        raise StudyError(f"unknown format '{args.format}'; valid formats: md, csv")
    result = run(load(root / name), args.out_dir, args.sets, figures=not args.no_figures,
                 nadyn=args.nadyn, quick=args.quick, force=args.force)
    sys.stdout.write((result.markdown if args.format == "md" else result.csv).read_text())
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "list":
        for name in available(args.studies):
            print(name)
        return 0
    if args.command == "table":
        return _table(args)
    study = load(args.study, args.studies)
    result = run(study, args.out_dir, args.sets, figures=not args.no_figures,
                 nadyn=args.nadyn, sweep_file=args.sweep_file, quick=args.quick,
                 force=args.force)
    sys.stdout.write((result.markdown if args.format == "md" else result.csv).read_text())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``python3 -m nadyn.study``, and ``nadyn table``, which execs it).
    Every outcome is an exit status and at most one line on stderr: 2 bad input (a study
    that cannot run, a bad setting, an output path in the way), 1 a failed run or write,
    130 SIGINT, 143 SIGTERM (children stopped first); a sweep's own status carries on."""
    args = _arguments(argv)
    prefix = "nadyn: " if args.command == "table" else "nadyn study: "
    verbose = getattr(args, "verbose", False)

    def say(message: str, cause: BaseException | None = None) -> None:
        if verbose and cause is not None:
            traceback.print_exception(cause)
        print(prefix + message, file=sys.stderr, flush=True)

    previous = install_stop_signals()
    try:
        try:
            return _dispatch(args)
        except Interrupted as stop:
            say(f"interrupted by {stop.name}: stopped the study and its runs (a sweep file "
                "keeps its finished runs; tables not yet written are not)")
            return 128 + stop.signum
        except StudyError as error:
            say(str(error), error.__cause__)
            return 2
        except StudyFailure as error:
            say(str(error))
            return 1
        except subprocess.CalledProcessError as error:
            # nadyn said why on stderr; its status (2: bad input, 1: a failed run) carries on.
            return error.returncode
        except OSError as error:  # a write the system refused (read-only, full, ...)
            what = f"'{error.filename}': " if error.filename else ""
            say(f"{what}{error.strerror or error}", error)
            return 1
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


if __name__ == "__main__":
    sys.exit(main())
