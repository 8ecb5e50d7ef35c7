"""nadyn.simulate, nadyn.sweep, nadyn.reduced and nadyn.table: the library, called from Python.

The keywords of ``simulate`` are generated from the library's parameter registry (the table
behind ``nadyn simulate``'s flags): same names, same defaults, same checks and the same
one-line error messages. The computations run without the GIL on a worker thread; Ctrl-C
(SIGINT) stops a run at its next step, keeps the frames written so far, and raises
KeyboardInterrupt (with the partial result as the exception's ``trajectory`` or
``dataset`` attribute).
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
import shutil
import tempfile
import warnings
from typing import Any, Iterable, Mapping

import numpy as np

from . import _core
from .progress import Bar
from .trajectory import Trajectory

__all__ = ["simulate", "meanfield", "sweep", "reduced", "table", "parameters", "NumericalFault",
           "experiment_toml"]

NumericalFault = _core.NumericalFault
NumericalFault.__doc__ = (
    "A run left the model's domain (NaN, Inf, magnitude <= 0). The file keeps the last good "
    "frame with status 'failed'; the exception's `trajectory` holds the frames so far."
)

_REGISTRY: tuple[dict[str, Any], ...] = tuple(_core.parameters())
_ROWS: dict[str, dict[str, Any]] = {row["name"]: row for row in _REGISTRY}
_OWN_KEYWORDS = ("out", "force", "progress")


def parameters() -> list[dict[str, Any]]:
    """The parameter registry: one dict per input of a run (name, flag, type, default as
    text, help, description, unit, ...), in the order of ``nadyn simulate --help``."""
    return [dict(row) for row in _REGISTRY]


def _default(row: Mapping[str, Any]) -> Any:
    """The registry's default text as a Python value (None: resolved from other inputs)."""
    text, kind = row["default"], row["type"]
    if text == "":
        return None
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "switch":
        return text == "1"
    return text


def _text(name: str, value: Any) -> str:
    """A keyword's value as the text the registry parses: ints exactly, floats by their
    shortest round-tripping repr (17 significant digits at most), switches as 1/0."""
    kind = _ROWS[name]["type"]
    if isinstance(value, (bool, np.bool_)):
        return ("1" if value else "0") if kind == "switch" else str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return float.__repr__(float(value))
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, (list, tuple)) and kind == "name" and all(isinstance(v, str) for v in value):
        # observables=["mean_cos", "clusters"]: the comma-separated list the flag takes
        return ",".join(value) if value else "none"
    if name == "frame_times" and isinstance(value, (Iterable, np.ndarray)):
        # A list of times (frame_times=[0.5, 1, 2.5]) as the flag's comma-separated list.
        return ",".join(float.__repr__(float(t)) for t in np.asarray(value, dtype=float).ravel())
    raise TypeError(f"simulate(): {name} must be an int, float, str or bool, got {type(value).__name__}")


def _call_text(kwargs: Mapping[str, Any]) -> str:
    return "nadyn.simulate(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def simulate(**kwargs: Any) -> Trajectory:
    # The signature and docstring are set below from the registry.
    out = kwargs.pop("out", None)
    force = bool(kwargs.pop("force", False))
    progress = kwargs.pop("progress", None)
    valid = ", ".join([*_ROWS, *_OWN_KEYWORDS])
    for name in kwargs:
        if name not in _ROWS:
            raise TypeError(f"simulate() got an unexpected keyword argument '{name}'; valid keywords: {valid}")
    values = {name: _text(name, value) for name, value in kwargs.items() if value is not None}
    call = dict(kwargs, **({"out": out} if out is not None else {}))
    horizon = _horizon(kwargs)
    bar = Bar(progress, "nadyn.simulate", "t", total=horizon, time_bar=horizon is not None)
    with bar:
        result = _core._simulate(values, None if out is None else os.fspath(out), force,
                                 _call_text(call), progress=bar.callback)
        if result["status"] == "complete" and result["signal"] is None:
            bar.finish(1.0)
    _say_warnings(result)
    trajectory = Trajectory._from_result(result)
    if result["fault"]:
        fault = NumericalFault(result["fault"])
        fault.trajectory = trajectory
        raise fault
    if result["signal"] is not None:
        interrupt = result["signal"]
        interrupt.trajectory = trajectory
        raise interrupt
    return trajectory


def _horizon(kwargs: Mapping[str, Any]) -> float | None:
    """T of the run, for the bar's scale (None: the registry's default is not a number)."""
    value = kwargs.get("T", _default(_ROWS["T"]) if "T" in _ROWS else None)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _simulate_signature() -> inspect.Signature:
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter(row["name"], keyword, default=_default(row)) for row in _REGISTRY]
    parameters.append(inspect.Parameter("out", keyword, default=None))
    parameters.append(inspect.Parameter("force", keyword, default=False))
    parameters.append(inspect.Parameter("progress", keyword, default=None))
    return inspect.Signature(parameters, return_annotation=Trajectory)


def _simulate_doc() -> str:
    lines = [
        "Runs one simulation, as `nadyn simulate` does, and returns a Trajectory.",
        "",
        "Every keyword is a flag of `nadyn simulate` with the same default (the name with",
        "'_' for '-'; swmr=False is --no-swmr); values are ints, floats, strs or bools. Bad",
        "values raise ValueError with the command line's message; unknown keywords raise",
        "TypeError.",
        "",
        "Keywords:",
    ]
    for row in _REGISTRY:
        default = _default(row)
        shown = "resolved from other inputs" if default is None else repr(default)
        unit = f" [{row['unit']}]" if row["unit"] else ""
        lines.append(f"    {row['name']} ({row['type']}, default {shown}){unit}: {row['help']}.")
        lines.append(f"        {row['description']}")
    lines += [
        "    out (str or path, default None): also write the H5MD file there, the file",
        "        `nadyn simulate --out` writes (its datasets equal bit for bit).",
        "    force (bool, default False): overwrite `out`; run even if the memory estimate",
        "        exceeds the memory available now.",
        "    progress (bool or None, default None): a progress bar (tqdm) of t against T;",
        "        None shows it on a terminal or in a notebook, False never, True always.",
        "",
        "Ctrl-C stops the run at its next step and raises KeyboardInterrupt; the file keeps",
        "the frames so far (status 'interrupted') and the exception's `trajectory` holds",
        "them. A numerical fault raises nadyn.NumericalFault (the file: status 'failed').",
    ]
    return "\n".join(lines)


simulate.__signature__ = _simulate_signature()  # type: ignore[attr-defined]
simulate.__doc__ = _simulate_doc()


# ---- the density solver --------------------------------------------------------------------

# A compiled module built before the density solver lacks it; simulate and the rest still work.
_MEANFIELD_DEFAULTS: dict[str, Any] = (dict(_core._meanfield_defaults())
                                       if hasattr(_core, "_meanfield_defaults") else {})


def meanfield(**kwargs: Any):
    # The signature and docstring are set below from the library's defaults.
    from .io import open as open_file

    if not _MEANFIELD_DEFAULTS:
        raise RuntimeError("nadyn's compiled module predates nadyn.meanfield; rebuild it "
                           "(cmake --build build --target nadyn_python)")
    out = kwargs.pop("out", None)
    force = bool(kwargs.pop("force", False))
    for name in kwargs:
        if name not in _MEANFIELD_DEFAULTS:
            valid = ", ".join([*_MEANFIELD_DEFAULTS, "out", "force"])
            raise TypeError(f"meanfield() got an unexpected keyword argument '{name}'; "
                            f"valid keywords: {valid}")
    # NumPy scalars as the Python numbers the binding takes.
    values = {name: value.item() if isinstance(value, np.generic) else value
              for name, value in kwargs.items()}
    values = {name: os.fspath(value) if isinstance(value, os.PathLike) else value
              for name, value in values.items()}
    call = "nadyn.meanfield(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"
    directory = None
    if out is None:
        directory = tempfile.mkdtemp(prefix="nadyn-meanfield-")
        path = os.path.join(directory, "meanfield.h5")
    else:
        path = os.fspath(out)
    try:
        summary = _core._meanfield(values, path, force, call)
        dataset = open_file(path)
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
    if directory is not None:
        dataset.attrs.pop("file", None)
    if summary["fault"]:
        fault = NumericalFault(summary["fault"])
        fault.dataset = dataset
        raise fault
    if summary["status"] == "unresolved":
        warnings.warn(
            f"nadyn.meanfield: unresolved at t = {summary['unresolved_time']:.6g} "
            f"(unresolved_time): the density's top coefficients reached "
            f"{summary['unresolved_tail']:.3g} of its mean (resolution_tol); the frames up to "
            f"t = {summary['last_time']:.6g} are kept; raise points (circle) or degree "
            "(sphere, zonal) to go further",
            RuntimeWarning,
            stacklevel=2,
        )
    if summary["signal"] is not None:
        interrupt = summary["signal"]
        interrupt.dataset = dataset
        raise interrupt
    return dataset


def _meanfield_signature() -> inspect.Signature:
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter(name, keyword, default=value)
                  for name, value in _MEANFIELD_DEFAULTS.items()]
    parameters.append(inspect.Parameter("out", keyword, default=None))
    parameters.append(inspect.Parameter("force", keyword, default=False))
    return inspect.Signature(parameters)


meanfield.__signature__ = _meanfield_signature()  # type: ignore[attr-defined]
meanfield.__doc__ = "\n".join([
    "Runs the density solver, as `nadyn meanfield` does, and returns its Dataset (nadyn.open).",
    "",
    "The tokens' density under the mean-field continuity equation (docs/model.md §16), the",
    "n -> infinity limit of nadyn.simulate. Every keyword is a flag of `nadyn meanfield` with",
    "the same default (the name with '_' for '-'); defaults: "
    + ", ".join(f"{k}={v!r}" for k, v in _MEANFIELD_DEFAULTS.items()) + ".",
    "geometry: auto (circle for d = 2, sphere for d = 3, zonal otherwise), circle, sphere,",
    "zonal; init: uniform | perturbed:K,EPS | vonmises:Q,KAPPA | noise:EPS[,KMAX];",
    "t_switch None: not given. A value the command line would refuse raises ValueError with its",
    "one-line message; a value of the wrong type or an unknown keyword raises TypeError.",
    "",
    "out (path, default None): the density file to write (None: a temporary file, removed",
    "    once read; the Dataset then has no 'file' attribute). Its datasets equal those of",
    "    `nadyn meanfield --out` with the same inputs bit for bit.",
    "force (bool, default False): overwrite `out`.",
    "",
    "A run whose grid no longer resolves the density stops there: the Dataset has status",
    "'unresolved' and attrs['unresolved_time'], and a RuntimeWarning names that time. Ctrl-C",
    "stops the run at its next step and raises KeyboardInterrupt with the frames so far as",
    "the exception's `dataset`; a numerical fault raises nadyn.NumericalFault (with `dataset`).",
])


# ---- sweeps -------------------------------------------------------------------------------

def _toml_key(key: str) -> str:
    if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key):
        return key
    return _toml_string(key)


def _toml_string(text: str) -> str:
    escaped = []
    for c in text:
        if c == '"':
            escaped.append('\\"')
        elif c == "\\":
            escaped.append("\\\\")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            escaped.append(f"\\u{ord(c):04x}")
        else:
            escaped.append(c)
    return '"' + "".join(escaped) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        x = float(value)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float.__repr__(x)
    if isinstance(value, (str, os.PathLike)):
        return _toml_string(os.fspath(value))
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, Iterable):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} in an experiment")


def experiment_toml(experiment: Mapping[str, Any]) -> str:
    """An experiment given as a dict ({"run": {...}, "sweep": {...}}) as the TOML text of an
    experiment file (docs/cli.md, "nadyn sweep"): tables of scalars, lists and inline tables."""
    roots, tables = [], []
    for key, value in experiment.items():
        if isinstance(value, Mapping):
            tables.append(f"[{_toml_key(str(key))}]")
            tables += [f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items()]
            tables.append("")
        else:
            roots.append(f"{_toml_key(str(key))} = {_toml_value(value)}")
    return "\n".join(roots + ([""] if roots else []) + tables)


def sweep(
    experiment: str | os.PathLike | Mapping[str, Any],
    out: str | os.PathLike | None = None,
    overrides: Iterable[str] | Mapping[str, Any] = (),
    jobs: int = 0,
    force: bool = False,
    progress: bool | None = None,
):
    """Runs an experiment (`nadyn sweep`) and returns its xarray Dataset, loaded.

    experiment  an experiment file's path, or a dict {"run": {...}, "sweep": {...}} with the
                file's tables (e.g. {"run": {"scheme": "pre-ln", "n": 32},
                "sweep": {"beta": {"linspace": [0.5, 8, 16]}, "seed": {"range": [1, 4]}}})
    out         the sweep file to write (None: a temporary file, removed once read)
    overrides   "table.key=value" strings (--set), or a dict {"run.n": 64}
    jobs        runs side by side (0: chosen from the runs' size and the cores)
    force       overwrite `out`
    progress    a progress bar (tqdm) of the runs done: None shows it on a terminal or in a
                notebook, False never, True always

    Failed runs are recorded (status 3) and reported with a warning. Ctrl-C stops the sweep,
    keeps the finished runs and raises KeyboardInterrupt with the Dataset as `dataset`.
    """
    from .io import open as open_file

    if isinstance(overrides, Mapping):
        overrides = [f"{key}={_toml_value(value)}" for key, value in overrides.items()]
    overrides = [str(item) for item in overrides]
    if isinstance(experiment, Mapping):
        text, source = experiment_toml(experiment), "<dict>"
    else:
        text, source = None, os.fspath(experiment)
    directory = None
    if out is None:
        directory = tempfile.mkdtemp(prefix="nadyn-sweep-")
        path = os.path.join(directory, "sweep.h5")
    else:
        path = os.fspath(out)
    try:
        with Bar(progress, "nadyn.sweep", "run") as bar:
            summary = _core._sweep(text, source, overrides, path, int(jobs), bool(force),
                                   progress=bar.callback)
            _finish_bar(bar, summary)
        _say_warnings(summary)
        dataset = open_file(path)
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
    if directory is not None:
        dataset.attrs.pop("file", None)
    return _finish_sweep("nadyn.sweep", summary, dataset)


def _say_warnings(answer: Mapping[str, Any]) -> None:
    """The library's warnings about a run or sweep (a negative beta, a step too large, ...),
    each as a RuntimeWarning with the command line's words."""
    for warning in answer.get("warnings", ()):
        text = warning[len("warning: "):] if warning.startswith("warning: ") else warning
        warnings.warn(text, RuntimeWarning, stacklevel=3)


def _finish_bar(bar: Bar, summary: Mapping[str, Any]) -> None:
    """The sweep's bar at the runs this call finished, of those it had to do."""
    done = summary["complete"] + summary["interrupted"] + summary["failed"]
    if summary["signal"] is None:
        bar.finish(done, done)


def _finish_sweep(who: str, summary: Mapping[str, Any], dataset):
    if summary["failed"]:
        warnings.warn(
            f"{who}: {summary['failed']} of {summary['runs']} runs failed (status 3); "
            f"the first: {summary['first_failure']}",
            RuntimeWarning,
            stacklevel=3,
        )
    if summary["signal"] is not None:
        interrupt = summary["signal"]
        interrupt.dataset = dataset
        raise interrupt
    return dataset


def resume_sweep(path: str | os.PathLike, jobs: int = 0, progress: bool | None = None):
    """Runs what is missing of an interrupted sweep file (`nadyn sweep --resume`) and returns
    its xarray Dataset, loaded. The finished file equals an uninterrupted sweep's, bitwise.

    path  a sweep file written by nadyn.sweep or `nadyn sweep` (its experiment is recorded)
    jobs  runs side by side (0: chosen from the runs' size and the cores)
    progress  a progress bar of the runs done (as nadyn.sweep's)

    Ctrl-C stops it again, keeping the finished runs (KeyboardInterrupt with `dataset`).
    """
    from .io import open as open_file

    with Bar(progress, "nadyn.resume_sweep", "run") as bar:
        summary = _core._resume_sweep(os.fspath(path), int(jobs), progress=bar.callback)
        _finish_bar(bar, summary)
    return _finish_sweep("nadyn.resume_sweep", summary, open_file(path))


# ---- the scalar ODE and the paper's tables -------------------------------------------------

def reduced(
    scheme: str = "peri-ln",
    n: float = 256,
    beta: float = 5.0,
    *,
    r0: float = 1.0,
    alpha: float = 1.0,
    t_switch: float | None = None,
    T: float = 30.0,
    samples: int = 100,
    spacing: str = "linear",
    rtol: float = 1e-13,
    times: Iterable[float] | None = None,
) -> dict[str, np.ndarray]:
    """The scalar ODE of the symmetric orthogonal start (`nadyn reduced`, docs/model.md §3):
    n tokens at theta_k = e_k, Q = K = V = I; every pairwise cosine is gamma(t).

    Returns arrays t, gamma, gap (1 - gamma, accurate down to 1e-300), velocity (gamma')
    and r. The samples are those of `nadyn reduced` (t = 0, then `samples` times up to T,
    linear or log spaced from 1e-3 T), or `times` when given (sorted, >= 0).
    t_switch: mix-ln's switch time (default 0.25 T).
    """
    if times is None:
        if not (isinstance(samples, numbers.Integral) and 1 <= samples <= 10_000_000):
            raise ValueError("samples must be in 1 .. 10^7")
        if spacing not in ("linear", "log"):
            raise ValueError(f"unknown spacing '{spacing}'; valid choices: linear, log")
        if not (math.isfinite(T) and T > 0.0):
            raise ValueError("T must be a finite number > 0")
        fractions = [i / samples for i in range(1, samples + 1)]
        if spacing == "linear":
            times = [0.0] + [f * T for f in fractions]
        else:
            times = [0.0] + [T * math.pow(1e-3, 1.0 - f) for f in fractions]
    switch = 0.25 * T if t_switch is None else float(t_switch)
    return _core._reduced(scheme, float(n), float(beta), float(r0), float(alpha), switch,
                          [float(t) for t in times], float(rtol))


def table(name: str, **settings: Any) -> list[dict[str, Any]]:
    """One of the paper's tables, recomputed (`nadyn table`), as a list of rows (dicts).

    "initial"       gamma'(0): closed form, scalar ODE and particles (n, beta, r0, alpha)
    "initial-beta"  gamma'(0) against beta (betas=[...], default 0, 0.5, .., 10; n, r0, alpha)
    "terminal"      fitted terminal laws (the particle runs' n, d, beta, cap, seed, r0,
                    alpha, t_switch)
    "random"        random per-layer weights on the discrete transformer (n, d, layers,
                    beta (default sqrt d), h, r0, alpha, seeds); minutes at the defaults
    Settings default to `nadyn table`'s. Each runs its study (studies/initial/,
    studies/terminal/, studies/random_weights/; nadyn.study) with the settings as overrides
    of its experiment.
    """
    if name in ("initial", "initial-beta"):
        return _initial_study_rows(name, settings)
    if name == "terminal":
        return _terminal_study_rows(settings)
    if name == "random":
        return _random_study_rows(settings)
    raise ValueError(f"unknown table '{name}'; valid tables: initial, initial-beta, terminal, "
                     "random")


def _study_table_keywords(name: str, settings: Mapping[str, Any], valid) -> None:
    """TypeError naming the first keyword a study-backed nadyn.table(name) does not take."""
    unknown = sorted(set(settings) - set(valid))
    if unknown:
        raise TypeError(f"nadyn.table('{name}'): unknown keyword '{unknown[0]}'; "
                        f"valid keywords: {', '.join(sorted(valid))}")


def _run_study(name: str, sets: list[str]):
    """The study `name` run into a scratch folder (removed after), no figure: its Result."""
    import tempfile

    from . import study

    with tempfile.TemporaryDirectory(prefix="nadyn-study-") as out:
        return study.run(name, out, sets, figures=False)


def _terminal_study_rows(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The terminal-velocity study's table with the particle runs' settings as --set."""
    keys = {"n": "run.n={}", "d": "run.d={}", "beta": "run.beta={!r}", "seed": "run.seed={}",
            "r0": "run.r0={!r}", "alpha": "run.alpha={!r}", "t_switch": "run.t_switch={!r}",
            "cap": 'run.init="cap:{!r}"'}
    _study_table_keywords("terminal", settings, keys)
    sets = [keys[k].format(int(v) if k in ("n", "d", "seed") else float(v))
            for k, v in settings.items()]
    return _run_study("terminal", sets).table.to_dict("records")


def _magnitude_sets(settings: Mapping[str, Any]) -> list[str]:
    """--set of the run's r0 and alpha (nGPT's step) when given, as exact doubles."""
    return [f"run.{key}={float(settings[key])!r}" for key in ("r0", "alpha") if key in settings]


def _random_study_rows(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The random-weights study's table with the settings as --set: `layers` layers of step
    `h` are T = layers * h, and beta follows d (sqrt d) unless given."""
    _study_table_keywords("random", settings,
                          {"n", "d", "layers", "beta", "h", "r0", "alpha", "seeds"})
    sets = [f"run.{key}={int(settings[key])}" for key in ("n", "d") if key in settings]
    sets += _magnitude_sets(settings)
    if "beta" in settings:
        sets.append(f"run.beta={float(settings['beta'])!r}")
    elif "d" in settings:
        sets.append(f"run.beta={math.sqrt(int(settings['d']))!r}")
    if "h" in settings or "layers" in settings:
        h = float(settings.get("h", 1.0))
        layers = int(settings.get("layers", 200))
        sets += [f"run.dt={h!r}", f"run.T={layers * h!r}"]
    if "seeds" in settings:
        sets.append("sweep.seed=[" + ",".join(str(int(s)) for s in settings["seeds"]) + "]")
    return _run_study("random_weights", sets).table.to_dict("records")


def _initial_study_rows(name: str, settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The initial-velocity study's table (or its beta points) with settings as --set."""
    _study_table_keywords(name, settings,
                          {"n", "r0", "alpha"} | ({"beta"} if name == "initial" else {"betas"}))
    sets = []
    if "n" in settings:
        sets += [f"run.n={int(settings['n'])}", f"run.d={int(settings['n'])}"]
    sets += _magnitude_sets(settings)
    if "beta" in settings:
        sets.append(f"sweep.beta=[{float(settings['beta'])!r}]")
    if "betas" in settings:
        # The study's table is at beta = 5: swept too, and left out of the points returned.
        betas = [float(b) for b in settings["betas"]]
        sets.append("sweep.beta=[" + ",".join(repr(b) for b in sorted(set(betas) | {5.0})) + "]")
    result = _run_study("initial", sets)
    if name == "initial":
        return result.table.to_dict("records")
    points = result.extra_tables["initial_velocity_beta"]
    if "betas" in settings:
        points = points[points.beta.isin(betas)]
    return points.to_dict("records")
