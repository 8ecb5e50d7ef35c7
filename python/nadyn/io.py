"""Reading nadyn's HDF5 files into xarray Datasets, in pure Python (h5py, numpy, xarray).

A single-run file is an H5MD 1.1 trajectory (docs/file-format.md):

    /particles/tokens/position/{step,time,value}   value (frames, n, d), optional
    /particles/tokens/magnitude/{step,time,value}  value (frames, n)
    /observables/<name>/{step,time,value}          value (frames), or (frames, K) for modes
    /particles/tokens/cluster_label/{step,time,value}  value (frames, n) int64, with positions
    /cluster_history/merges/{step,time,value}      value (events, 6) int64: the merge events
    /cluster_history/{k,clustering_time}           t_k for k = 1, 2, 4, ...
    /parameters                                    attributes: every input and statistic;
                                                   datasets theta0, r_initial, Q, K, V
    / attribute status                             running, complete, interrupted, failed

`open` turns it into a Dataset with dimensions ``time`` (one entry per frame), ``token``
and ``dim``. A sweep file (root attribute ``nadyn_kind = "sweep"``) is already laid out
for netCDF readers and is opened with xarray's h5netcdf engine.
"""

from __future__ import annotations

import builtins
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from typing import Any

import h5py
import numpy as np
import xarray as xr
from xarray.backends import BackendArray, CachingFileManager
from xarray.core import indexing

__all__ = ["open", "frame_count", "is_sweep", "is_density", "sweep_run", "sweep_axes", "not_recorded"]

POSITION = "particles/tokens/position"
MAGNITUDE = "particles/tokens/magnitude"
LABEL = "particles/tokens/cluster_label"
MERGES = "cluster_history/merges"
CLUSTERING_TIME = "cluster_history/clustering_time"
# The fields of a merge event, as the `merge_field` coordinate of `merges` (a sweep file
# names them the same way).
MERGE_FIELDS = ("time", "frame", "label", "absorbed", "size", "absorbed_size", "clusters_after")
OBSERVABLES = "observables"
# A density file's series (nadyn meanfield; include/nadyn/meanfield/density_file.hpp):
# /density/{value,time,step} with the nodes /density/points and their weights.
DENSITY = "density"
PARAMETERS = "parameters"
PLATEAUS = "plateaus"
# Datasets under /parameters and the dimensions they are labelled with.
_PARAMETER_DATASET_DIMS = {
    "theta0": ("token", "dim"),
    "r_initial": ("token",),
    # Q, K, V act on column vectors: Q theta is row "dim_out" of Q times column "dim_in".
    "Q": ("dim_out", "dim_in"),
    "K": ("dim_out", "dim_in"),
    "V": ("dim_out", "dim_in"),
}


# Subgroups of /parameters holding one attribute per parameter, and the suffix its entries get.
_METADATA_SUFFIX = {"descriptions": "description", "units": "unit"}


def _plain(value: Any) -> Any:
    """An HDF5 attribute value as a plain Python/NumPy value (bytes decoded, 0-d unwrapped)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "SO":
            items = [_plain(v) for v in value.ravel().tolist()]
            return items[0] if value.ndim == 0 else items
        # A one-element array is a scalar, as netCDF writes it back (so that a Dataset saved
        # with to_netcdf and reopened is identical).
        if value.size == 1:
            return value.reshape(()).item()
        return value
    if isinstance(value, np.generic):
        return value.item()
    return value


def _attributes(obj: h5py.HLObject) -> dict[str, Any]:
    return {name: _plain(obj.attrs[name]) for name in obj.attrs}


def _open_h5(path: str | os.PathLike) -> h5py.File:
    """Opens for reading; in SWMR-read mode when the file allows it, so a file that a running
    nadyn is still writing (SWMR-write mode) can be read. Files in the older format, or ones
    whose writer has ended SWMR mode, open normally. Without HDF5's file locks (locking=False),
    because a writer holds them for the whole run: a reader would be refused in the moments the
    writer is outside SWMR mode (creating the layout, writing the final attributes) and on any
    --no-swmr run, whose flushed frames are readable all the same."""
    # A FIFO (or a device) blocks HDF5's open forever, beyond the reach of Ctrl-C: refused.
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError(f"cannot open '{os.fspath(path)}': it is not a regular file (a FIFO, "
                         "a socket or a device); give an HDF5 file")
    first_error: Exception | None = None
    # Without SWMR first: a file no writer holds opens so whenever it is not marked open for
    # writing. A SWMR reader retries a metadata read whose checksum fails up to 100 times with
    # a growing sleep (minutes on a damaged file, signals unanswered), and h5py cannot bound
    # that; so before a SWMR open, the compiled module (when present) reads every object
    # header and attribute with bounded retries and raises OSError at the first damage.
    # The last two match a handle that this process already holds with h5py's default locking
    # (HDF5 refuses a second open with different locking flags).
    verified = False
    for options in ({"locking": False}, {"swmr": True, "locking": False}, {}, {"swmr": True}):
        if options.get("swmr") and not verified:
            _verify_readable(path)
            verified = True
        try:
            return h5py.File(path, "r", **options)
        except (OSError, ValueError) as error:
            first_error = first_error or error
    # A writer killed outside SWMR mode (a resume in its first milliseconds) leaves the file
    # marked open for writing, which h5py refuses in every mode; the compiled module clears a
    # dead writer's mark (h5clear -s) and never a live one's.
    if _clear_dead_writer_mark(path):
        return h5py.File(path, "r", locking=False)
    raise OSError(f"cannot open '{os.fspath(path)}' as an HDF5 file: {first_error}") from None


def _clear_dead_writer_mark(path: str | os.PathLike) -> bool:
    from . import _core  # noqa: PLC0415 (optional: without it such a file needs h5clear -s)

    if _core is None or not hasattr(_core, "clear_dead_writer_mark"):
        return False
    try:
        return bool(_core.clear_dead_writer_mark(os.fspath(path)))
    except (OSError, ValueError):
        return False


def _verify_readable(path: str | os.PathLike) -> None:
    from . import _core  # noqa: PLC0415 (optional: files are readable without it)

    if _core is not None and hasattr(_core, "verify_readable"):
        try:
            _core.verify_readable(os.fspath(path))
        except ValueError as error:  # not an HDF5 file, no such file: an OSError here
            raise OSError(str(error)) from None


# Seconds a reader process may take to walk a file's structure before the file counts as
# unreadable (a healthy file takes milliseconds: object headers, attributes, two values per
# numeric dataset and the strings; without the compiled module, h5py's SWMR reader retries a
# damaged read for minutes).
_PROBE_SECONDS = 30.0
# How a walk in a child process ended: the file could not be opened (the parent's own open
# says why), or the walk met damage in the opened file (its message follows).
_UNOPENED, _DAMAGED = 3, 4


# String datasets up to this many values are read whole by the walk: a variable-length
# string's value lives in the file's global heap, which a damaged one makes libhdf5 crash on
# (a sweep's axis labels, which xarray decodes as the file opens; fuzz/open_files.py).
_WALK_STRINGS = 1 << 16


def _walk(f: h5py.File) -> None:
    """Reads the file's structure as `open` meets it: every object header and attribute, the
    first and last value of every numeric dataset (they reach the ends of its chunk index),
    and the values of every string dataset (the heap objects they point to)."""
    _attributes(f)

    def visit(_name: str, obj: h5py.HLObject) -> None:
        _attributes(obj)
        if not isinstance(obj, h5py.Dataset) or not obj.shape or not obj.size:
            return
        kind = obj.dtype.kind
        if kind in "OSU" and obj.size <= _WALK_STRINGS:
            obj[()]
        elif kind in "iufOSU":
            obj[(0,) * obj.ndim]
            obj[tuple(n - 1 for n in obj.shape)]

    f.visititems(visit)


def _walk_and_exit(name: str, report: int) -> None:
    """A child's whole life: open the file, walk it, write what went wrong to the file
    descriptor `report`, and leave without running any exit handler."""
    code = _UNOPENED
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _die_with_parent()
        # A crash's own words (glibc's "free(): invalid pointer") would only repeat the
        # OSError's: glibc writes them to the terminal unless told stderr, here /dev/null.
        os.environ["LIBC_FATAL_STDERR_"] = "1"
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        f = _open_h5(name)
        code = _DAMAGED
        with f:
            _walk(f)
        code = 0
    except BaseException as error:  # noqa: BLE001 (reported to the parent)
        if code == _DAMAGED:
            os.write(report, str(error).encode("utf-8", "replace")[:4000])
    os._exit(code)


def _die_with_parent() -> None:
    """Linux: this process gets SIGKILL when its parent ends, so that an interpreter killed
    while it waits leaves no reader behind."""
    try:
        import ctypes  # noqa: PLC0415

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _single_threaded() -> bool:
    try:
        with builtins.open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Threads:"):
                    return int(line.split()[1]) == 1
    except (OSError, ValueError):
        pass
    return False


def _reap(pid: int, deadline: float) -> int | None:
    """The wait status of child `pid`, or None when it is still running at `deadline`."""
    pause = 0.0005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def _walk_in_fork(name: str) -> tuple[int | None, int, str]:
    """(signal that ended the child or 0, its exit status, its report) of a fork()ed child
    walking the file; signal None: still running after _PROBE_SECONDS, then killed."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _walk_and_exit(name, write_end)
    os.close(write_end)
    try:
        status = _reap(pid, time.monotonic() + _PROBE_SECONDS)
        if status is None:
            os.kill(pid, signal.SIGKILL)  # our own child, by its pid
            os.waitpid(pid, 0)
            return None, 0, ""
        report = b""
        while chunk := os.read(read_end, 4096):
            report += chunk
    except BaseException:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        raise
    finally:
        os.close(read_end)
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status), 0, ""
    return 0, os.WEXITSTATUS(status), report.decode("utf-8", "replace")


def _walk_in_interpreter(name: str) -> tuple[int | None, int, str]:
    """The same in a new interpreter (this package's copy of nadyn)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = package + os.pathsep + env.get("PYTHONPATH", "")
    try:
        done = subprocess.run(
            [sys.executable, "-c",
             "import sys; from nadyn.io import _walk_and_exit; _walk_and_exit(sys.argv[1], 1)",
             name], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, timeout=_PROBE_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return None, 0, ""
    if done.returncode < 0:
        return -done.returncode, 0, ""
    return 0, done.returncode, done.stdout.decode("utf-8", "replace")


def _survive_in_child(path: str | os.PathLike) -> None:
    """Walks the file's structure (`_walk`) in a child process first. libhdf5 1.10 crashes on
    some damaged metadata (a segmentation fault while iterating a damaged group's links, glibc's
    "free(): invalid pointer" abort) in calls nothing can check beforehand; in a child, the crash
    becomes an OSError naming the file instead of ending this interpreter. Damage the walk meets
    as an error is an OSError too: reading on past it by name is where HDF5 crashes. A file
    the child cannot open is left to this process's own open, which says why. A process with
    one thread forks (milliseconds); with more (OpenMP's, after nadyn.simulate), fork would copy
    this thread alone with the locks the others hold, so a new interpreter walks the file (a
    few tenths of a second)."""
    name = os.fspath(path)
    killed, status, report = (_walk_in_fork(name) if _single_threaded()
                              else _walk_in_interpreter(name))
    if killed is None:
        raise OSError(f"cannot open '{name}': its structure could not be read within "
                      f"{_PROBE_SECONDS:.0f} s (damaged HDF5 metadata?)")
    if killed:
        try:
            what = signal.Signals(killed).name
        except ValueError:
            what = f"signal {killed}"
        raise OSError(f"'{name}': damaged HDF5 metadata (the reader crashed: {what})")
    if status == _DAMAGED:
        raise OSError(f"'{name}': damaged HDF5 metadata ({report or 'unreadable'})")


def is_sweep(root_attributes: dict[str, Any]) -> bool:
    return root_attributes.get("nadyn_kind") == "sweep"


def is_density(root_attributes: dict[str, Any]) -> bool:
    return root_attributes.get("nadyn_kind") == "density"


def _series_groups(f: h5py.File) -> dict[str, h5py.Group]:
    """Every H5MD time series of a trajectory or density file, keyed by its path."""
    groups: dict[str, h5py.Group] = {}
    for path in (POSITION, LABEL, MAGNITUDE, DENSITY):
        if path in f:
            groups[path] = f[path]
    if OBSERVABLES in f:
        for name, group in f[OBSERVABLES].items():
            if isinstance(group, h5py.Group) and "value" in group:
                groups[f"{OBSERVABLES}/{name}"] = group
    return groups


def _consistent_frames(groups: dict[str, h5py.Group]) -> int:
    # The writer appends value first, then time, then step, flushing after each frame, so a
    # run stopped (or read) between two writes has series of different lengths. A frame is
    # complete once it is present in every value, time and step dataset.
    lengths = []
    for group in groups.values():
        for member in ("value", "time", "step"):
            if member not in group:
                raise ValueError(f"'{group.file.filename}': /{group.name} has no '{member}'")
            dataset = group[member]
            if dataset.ndim == 0:
                raise ValueError(f"'{group.file.filename}': {dataset.name} is a scalar")
            lengths.append(dataset.shape[0])
    return min(lengths) if lengths else 0


def frame_count(path: str | os.PathLike) -> int:
    """Frames present in every series of a single-run or density file (what `open` reads)."""
    _survive_in_child(path)
    with _open_h5(path) as f:
        return _consistent_frames(_series_groups(f))


def open(
    path: str | os.PathLike,
    *,
    positions: bool = True,
    frames: slice | None = None,
    lazy: bool = False,
) -> xr.Dataset:
    """A nadyn file as an xarray Dataset, read into memory.

    Single-run file: dimensions ``time`` (frames), ``token`` (n), ``dim`` (d); coordinates
    ``time`` (t of each frame), ``step`` (on ``time``), ``token``, ``dim``; data variables
    ``theta`` (time, token, dim; absent for ``--positions none`` or ``positions=False``),
    ``r`` (time, token), one variable per observable (time; ``modes``: time, mode with the
    coordinate ``mode`` = 1..K, as in a sweep file), and the initial state and
    weights from /parameters (``theta0``, ``r_initial``, ``Q``, ``K``, ``V`` when stored),
    and, once the run has ended, its plateau table (/plateaus: ``plateaus_start``,
    ``plateaus_end``, ``plateaus_clusters``, ``plateaus_censored`` on the dimension
    ``plateau``) with the longest plateau's ``plateau_length`` and ``plateau_clusters`` (0-d,
    the variables a sweep file holds per run).
    ``ds.attrs`` holds every /parameters attribute, ``status`` and the file's provenance;
    each variable carries the attributes of its HDF5 group and dataset (e.g. a
    ``description``).

    Growing files (a run still writing, SWMR) and stopped ones (status ``interrupted``,
    ``failed``, or ``running`` after a crash) give the frames present in every series.
    ``frames`` selects frames (e.g. ``slice(None, None, 10)``) before reading.

    Everything is read into memory and the file is closed, unless ``lazy=True``: then
    ``theta`` and ``r`` are read on demand (for files larger than memory; select with
    ``ds.isel``/``ds.sel`` before ``.values``), the file stays open until ``ds.close()`` (or
    the end of a ``with nadyn.open(...) as ds:`` block), and a growing file still shows the
    frames present when it was opened.

    Density file (root attribute ``nadyn_kind = "density"``, written by ``nadyn meanfield``
    or nadyn.meanfield): dimensions ``time``, ``point`` (the grid's nodes), ``dim`` (d) and
    ``mode``; coordinates ``time``, ``step`` (on ``time``), ``point``, ``dim``, ``mode`` =
    1..K, and on ``point`` the node's ``angle`` = atan2(x_1, x_0) in [0, 2 pi) (circle) or
    ``cos`` = x_{d-1} (zonal: one node per ring, the density a function of x_{d-1}); data
    variables ``density`` (time, point: rho relative to the uniform probability measure;
    absent with ``positions=False``), ``points`` (point, dim: the nodes), ``weights``
    (point: quadrature weights, sum_i w_i rho_i is the mass) and every observable (time; modes:
    time, mode). ``ds.attrs``: every /parameters attribute (model = "meanfield", geometry
    circle, sphere or zonal), ``status`` and, for an unresolved run, ``unresolved_time``.
    Growing and stopped files give the frames whose time and step are written in every
    series; ``frames`` and ``lazy`` act on ``density`` as on ``theta``.

    Sweep file (root attribute ``nadyn_kind = "sweep"``): ``xarray.open_dataset(path,
    engine="h5netcdf")`` (loaded unless ``lazy``; ``frames`` selects along ``time``), with the
    root and /parameters attributes added.

    A file whose damaged metadata crashes libhdf5 raises OSError naming the file: its
    structure is read first in a child process.
    """
    _survive_in_child(path)
    with _open_h5(path) as f:
        root = _attributes(f)
        if is_sweep(root):
            sweep = True
        elif is_density(root):
            sweep = False
            dataset = _read_density(f, root, values=positions, frames=frames, lazy=lazy)
        else:
            sweep = False
            dataset = _read_trajectory(f, root, positions=positions, frames=frames, lazy=lazy)
    if sweep:
        return _open_sweep(path, root, frames=frames, lazy=lazy)
    return dataset


def _open_sweep(path: str | os.PathLike, root: dict[str, Any], *, frames: slice | None,
                lazy: bool) -> xr.Dataset:
    attributes = dict(root)
    # Read before xarray opens the file: HDF5 refuses a second handle on a file that is
    # already open in this process with other file-locking settings.
    with _open_h5(path) as f:
        if PARAMETERS in f and isinstance(f[PARAMETERS], h5py.Group):
            for name, value in _attributes(f[PARAMETERS]).items():
                attributes.setdefault(name, value)
    # phony_dims: a dataset without dimension scales still opens (dimensions phony_dim_N).
    opened = xr.open_dataset(path, engine="h5netcdf", phony_dims="access")
    if frames is not None and "time" in opened.dims:
        opened = opened.isel(time=frames)
    if lazy:
        dataset = opened
    else:
        with opened:
            dataset = opened.load()
    attributes.update(dataset.attrs)
    dataset.attrs = attributes
    dataset.attrs["file"] = os.fspath(path)
    return _without_unrecorded(_with_energy(_with_run_parameters(dataset)))


# Record entries that describe the build or the process, not the run, and `positions`, the
# name of the sweep's data variable (absent with positions = "none"; the root attribute
# `positions` says what the sweep keeps): left as attributes.
_NOT_RUN_PARAMETERS = ("threads", "nadyn_version", "git_commit", "compiler", "compiler_flags",
                       "simd", "build_type", "positions")


def _parameter_types() -> dict[str, str]:
    """The registry's type of each parameter (integer, number, switch, name), when the
    compiled module is built; {} otherwise."""
    from . import _core  # noqa: PLC0415 (optional: the types are then read off the values)

    if _core is None or not hasattr(_core, "parameters"):
        return {}
    return {str(row["name"]): str(row["type"]) for row in _core.parameters()}


def _typed(texts: list[str], kind: str | None) -> np.ndarray:
    """A parameter's texts (shortest exact numbers) as an array of its type: the registry's
    when known (integer and switch: int64, number: float64, name: str), else int64 when every
    value is an integer, float64 when a number, str otherwise."""
    def parses(convert) -> bool:
        try:
            for text in texts:
                convert(text)
        except ValueError:
            return False
        return True

    if kind in ("integer", "switch") or (kind is None and parses(int)):
        if parses(int):
            return np.array([int(t) for t in texts], dtype=np.int64)
    if kind == "number" or (kind is None and parses(float)):
        if parses(float):
            return np.array([float(t) for t in texts], dtype=np.float64)
    return np.array(texts, dtype=object)


def _with_run_parameters(dataset: xr.Dataset) -> xr.Dataset:
    """Every run parameter of a sweep as a variable over the axes it varies along (a scalar
    when it does not vary), read from each run's record in ``parameters`` (numbers exact); a
    swept parameter stays its axis's coordinate, and a name taken by a data variable
    (``positions``) stays an attribute. With ``integrator = layers``: the coordinate ``layer``
    = t / dt of each frame, over ``time`` or, where dt or the frame times vary, over (axes...,
    time or frame)."""
    if "parameters" not in dataset.variables:
        return dataset
    axes = [a for a in sweep_axes(dataset) if a in dataset["parameters"].dims]
    records = dataset["parameters"].transpose(*axes).values if axes else \
        np.asarray(dataset["parameters"].values)
    shape = records.shape
    flat = [str(r) if r is not None else "" for r in np.asarray(records, dtype=object).ravel()]
    parsed: list[dict[str, str] | None] = []
    order: dict[str, None] = {}  # the names in record order
    for record in flat:
        if not record.strip():
            parsed.append(None)  # a run not run: its parameters come from its neighbours
            continue
        entries = dict(item.partition("=")[::2] for item in record.split("; "))
        order.update(dict.fromkeys(entries))
        parsed.append(entries)
    if not order:
        return dataset
    types = _parameter_types()
    variables: dict[str, xr.DataArray] = {}
    for name in order:
        if name in _NOT_RUN_PARAMETERS or name in axes or name in dataset.variables \
                or name in dataset.dims:
            continue
        texts = [p.get(name) if p is not None else None for p in parsed]
        known = [t for t in texts if t is not None]
        values = np.full(len(texts), None, dtype=object)
        typed = _typed(known, types.get(name))
        values[[i for i, t in enumerate(texts) if t is not None]] = typed
        grid = values.reshape(shape)
        # Along each axis where every run's value agrees with the others' (runs not run
        # agreeing with any), the parameter does not vary: that dimension goes.
        dims = list(axes)
        for axis in list(axes):
            position = dims.index(axis)
            moved = np.moveaxis(grid, position, 0)
            if all(v is not None for v in moved.ravel()):  # every run run: compare at once
                if bool((moved == moved[:1]).all()):
                    grid = np.asarray(moved[0], dtype=object)
                    dims.pop(position)
                continue
            first = np.full(moved.shape[1:], None, dtype=object)
            varies = False
            for k in range(moved.shape[0]):
                for index in np.ndindex(moved.shape[1:]):
                    value = moved[(k,) + index]
                    if value is None:
                        continue
                    if first[index] is None:
                        first[index] = value
                    elif first[index] != value:
                        varies = True
                        break
                if varies:
                    break
            if not varies:
                grid = first
                dims.pop(position)
        if typed.dtype != object and not any(v is None for v in np.ravel(grid)):
            grid = np.asarray(grid.tolist() if grid.ndim else grid.item(), dtype=typed.dtype)
        elif typed.dtype == np.float64:
            grid = np.asarray([np.nan if v is None else v for v in np.ravel(grid)],
                              dtype=np.float64).reshape(np.shape(grid))
        attributes = {"description": f"the run parameter {name}, from each run's record in "
                                     "parameters" + (f" (over {', '.join(dims)})" if dims else
                                                     " (the same in every run)")}
        variables[name] = xr.DataArray(grid, dims=dims, attrs=attributes)
    dataset = dataset.assign(variables)
    return _with_layer(dataset)


def _with_layer(dataset: xr.Dataset) -> xr.Dataset:
    """The coordinate ``layer`` = t / dt of a sweep whose runs use the layers integrator:
    int64 when every run does, float64 with NaN in the runs that do not (and after a run's
    last frame)."""
    if "integrator" not in dataset.variables or "dt" not in dataset.variables:
        return dataset
    layers = dataset["integrator"] == "layers"
    if not bool(layers.any()):
        return dataset
    time = dataset["time"]
    with np.errstate(invalid="ignore"):
        layer = np.round(time / dataset["dt"])
    layer = layer.where(layers)
    dims = [d for d in layer.dims if d not in time.dims] + list(time.dims)
    layer = layer.transpose(*dims)
    if not bool(layer.isnull().any()):
        layer = layer.astype(np.int64)
    layer.attrs = {"long_name": "layer index l = t / dt of each frame (integrator = layers)"}
    return dataset.assign_coords(layer=layer)


# What a sweep file derives from the clusters series: without it (observables not asking for
# clusters), the file's placeholders hold no measurement, and zero events or NaN times would
# read as "never merged".
_FROM_CLUSTERS = ("merges", "merge_count", "clustering_time", "plateau_length",
                  "plateau_clusters")


def _masked_unrecorded(dataset: xr.Dataset) -> xr.Dataset:
    """A sweep whose runs differ in what they record (``recorded``, over (axes...,
    observable)): the entries of a run that did not record an observable are NaN whatever the
    file's fill (merge_count's -1 included), and ``recorded`` is a boolean variable."""
    if "recorded" not in dataset.variables or "observable" not in dataset["recorded"].dims:
        return dataset
    recorded = dataset["recorded"].astype(bool)
    updates: dict[str, xr.DataArray] = {"recorded": recorded}
    for name in np.asarray(recorded["observable"].values).tolist():
        mask = recorded.sel(observable=name, drop=True)
        names = [str(name)] + (list(_FROM_CLUSTERS) if name == "clusters" else [])
        for variable in names:
            if variable in dataset.data_vars and not bool(mask.all()):
                values = dataset[variable]
                masked = values.astype(np.float64).where(mask) if values.dtype.kind in "iub" \
                    else values.where(mask)
                masked.attrs = dict(values.attrs)
                masked.attrs["not_recorded"] = (f"NaN in the runs that do not record "
                                                f"{name} (recorded)")
                updates[variable] = masked.transpose(*values.dims)
    return dataset.assign(updates)


def _unrecorded_in_run(ds: xr.Dataset) -> xr.Dataset:
    """One run of a sweep without the variables that run did not record (its entries are
    fill values): ``nadyn.io.not_recorded`` then says how to record them."""
    if "recorded" not in ds.variables or ds["recorded"].dims != ("observable",):
        return ds
    missing: list[str] = []
    for name, flag in zip(np.asarray(ds["observable"].values).tolist(),
                          np.asarray(ds["recorded"].values).tolist()):
        if not flag:
            missing += [str(name)] + (list(_FROM_CLUSTERS) if name == "clusters" else [])
    present = [name for name in missing if name in ds.data_vars]
    if not present:
        return ds
    out = ds.drop_vars(present)
    unused = [name for name in ("merge", "merge_field", "k")
              if name in out.coords and not any(name in out[v].dims for v in out.data_vars)]
    out = out.drop_vars(unused)
    out.attrs["not_recorded"] = ", ".join(present)
    return out


def _without_unrecorded(dataset: xr.Dataset) -> xr.Dataset:
    dataset = _masked_unrecorded(dataset)
    if "clusters" in dataset:
        return dataset
    dropped = dataset.drop_vars([name for name in _FROM_CLUSTERS if name in dataset])
    unused = [name for name in ("merge", "merge_field", "k")
              if name in dropped.coords and not any(name in dropped[v].dims
                                                     for v in dropped.data_vars)]
    dropped = dropped.drop_vars(unused)
    dropped.attrs["not_recorded"] = ", ".join(name for name in _FROM_CLUSTERS if name in dataset)
    return dropped


def _read_series(group: h5py.Group, member: str, selection: slice) -> np.ndarray:
    return np.asarray(group[member][selection])


def _variable_attributes(group: h5py.Group) -> dict[str, Any]:
    # The group's attributes first, then the value dataset's (more specific) ones.
    attributes = _attributes(group)
    attributes.update(_attributes(group["value"]))
    return attributes


class _FrameSeries(BackendArray):
    """A (frames, ...) dataset read on demand, restricted to the frames `open` chose, so a
    later read of a growing file still sees the same consistent prefix."""

    def __init__(self, manager: CachingFileManager, lock: threading.Lock, name: str,
                 frames: range, dataset: h5py.Dataset):
        self._manager, self._lock, self._name, self._frames = manager, lock, name, frames
        self.shape = (len(frames),) + tuple(dataset.shape[1:])
        self.dtype = dataset.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        # Slices with negative steps become positive ones and a reversal here: xarray 2023.01's
        # own decomposition of them is off by one (slice(None, None, -3) of 101 reads 0, 3, ...).
        flips = []
        if isinstance(key, (indexing.BasicIndexer, indexing.OuterIndexer)):
            parts = []
            for size, part in zip(self.shape, key.tuple):
                flip = isinstance(part, slice) and (part.step or 1) < 0
                if flip:
                    chosen = range(size)[part]
                    part = slice(chosen[-1], chosen[0] + 1, -part.step) if chosen else slice(0, 0)
                parts.append(part)
                if not isinstance(part, (int, np.integer)):
                    flips.append(slice(None, None, -1) if flip else slice(None))
            key = type(key)(tuple(parts))
        result = indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read)
        return result[tuple(flips)] if flips else result

    def _read(self, key: tuple) -> np.ndarray:
        frames = self._frames[key[0]]
        first = frames if isinstance(frames, int) else slice(frames.start, frames.stop, frames.step)
        with self._lock:
            return np.asarray(self._manager.acquire()[self._name][(first,) + tuple(key[1:])])


def _merge_variables(f: h5py.File, frames: int, coords: dict[str, Any]) -> dict[str, Any]:
    """The merge events of the frames a reader sees (events are written before their frame's
    times, so a file read while it grows may hold some of a frame not yet complete) as
    ``merges`` (merge, merge_field), and t_k as ``clustering_time`` (k)."""
    group = f[MERGES]
    rows = min(group[m].shape[0] for m in ("value", "time", "step"))
    value = np.asarray(group["value"][:rows], dtype=np.int64).reshape(rows, group["value"].shape[1])
    time = np.asarray(group["time"][:rows], dtype=np.float64)
    keep = value[:, 0] < frames if rows else np.zeros(0, dtype=bool)
    table = np.column_stack([time[keep], value[keep].astype(np.float64)]) if rows else np.zeros((0, 7))
    coords["merge"] = ("merge", np.arange(table.shape[0]), {"long_name": "merge event, in order"})
    coords["merge_field"] = ("merge_field", np.array(MERGE_FIELDS, dtype=object))
    attributes = _variable_attributes(group)
    attributes["long_name"] = "merge events of the cluster history"
    out = {"merges": (("merge", "merge_field"), table.reshape(-1, len(MERGE_FIELDS)), attributes)}
    if CLUSTERING_TIME in f:
        coords["k"] = ("k", np.asarray(f["cluster_history/k"][()], dtype=np.int64),
                       {"long_name": "cluster count k of clustering_time"})
        out["clustering_time"] = ("k", np.asarray(f[CLUSTERING_TIME][()], dtype=np.float64),
                                  {key: value for key, value in _attributes(f[CLUSTERING_TIME]).items()
                                   if key in ("description", "unit")})
    return out


def _read_trajectory(
    f: h5py.File, root: dict[str, Any], *, positions: bool, frames: slice | None, lazy: bool
) -> xr.Dataset:
    if MAGNITUDE not in f or "value" not in f[MAGNITUDE]:
        raise ValueError(
            f"'{f.filename}' is not a nadyn trajectory (no /{MAGNITUDE}/value); "
            "nadyn.open reads single-run files and sweep files"
        )
    groups = _series_groups(f)
    count = _consistent_frames(groups)
    start, stop, step = (frames or slice(None)).indices(count)
    if step < 0:
        raise ValueError("nadyn.open: frames must be an increasing slice")
    selection = slice(start, stop, step)

    magnitude = f[MAGNITUDE]
    time = _read_series(magnitude, "time", selection)
    step_index = _read_series(magnitude, "step", selection)
    n = magnitude["value"].shape[1]
    d = None
    if "particles/tokens/box" in f:
        d = int(_plain(f["particles/tokens/box"].attrs.get("dimension", 0))) or None
    if POSITION in f:
        d = f[POSITION]["value"].shape[2]
    if d is None:
        d = int(_plain(f[PARAMETERS].attrs["d"]))

    # Every series carries its own time and step; they agree frame by frame (one writer
    # call writes the same t into each), which the reader checks instead of trusting.
    for path, group in groups.items():
        if path == MAGNITUDE:
            continue
        if not np.array_equal(_read_series(group, "time", selection), time) or not np.array_equal(
            _read_series(group, "step", selection), step_index
        ):
            raise ValueError(f"'{f.filename}': /{path} has times or steps that differ from /{MAGNITUDE}")

    coords = {
        "time": ("time", time, {"long_name": "continuous depth t"}),
        "step": ("time", step_index, {"long_name": "step index (layer for layers, accepted steps for dopri5)"}),
        "token": ("token", np.arange(n)),
        "dim": ("dim", np.arange(d)),
    }
    manager = CachingFileManager(_open_h5, f.filename) if lazy else None
    lock = threading.Lock()

    def values(group: h5py.Group):
        if manager is None:
            return _read_series(group, "value", selection)
        frame_range = range(count)[selection]
        return indexing.LazilyIndexedArray(
            _FrameSeries(manager, lock, group.name + "/value", frame_range, group["value"]))

    variables: dict[str, Any] = {}
    if positions and POSITION in f:
        attributes = {"long_name": "directions theta_k on the unit sphere"}
        attributes.update(_variable_attributes(f[POSITION]))
        variables["theta"] = (("time", "token", "dim"), values(f[POSITION]), attributes)
    attributes = {"long_name": "token magnitudes r_k > 0"}
    attributes.update(_variable_attributes(magnitude))
    variables["r"] = (("time", "token"), values(magnitude), attributes)
    for path, group in groups.items():
        if not path.startswith(OBSERVABLES + "/"):
            continue
        name = path[len(OBSERVABLES) + 1 :]
        value = _read_series(group, "value", selection)
        # A vector observable (modes: m_1 .. m_K per frame) has a `mode` dimension, its
        # coordinate the degree k = 1..K, as in a sweep file.
        dims = ("time", "mode") if value.ndim == 2 else ("time",)
        if value.ndim == 2:
            coords["mode"] = ("mode", np.arange(1, value.shape[1] + 1),
                              {"long_name": "degree k of the spectral mode m_k"})
        variables[name] = (dims, value, _variable_attributes(group))

    if LABEL in groups:
        attributes = {"long_name": "cluster label of each token (docs/model.md section 5.2)"}
        attributes.update(_variable_attributes(groups[LABEL]))
        variables["cluster_label"] = (("time", "token"), _read_series(groups[LABEL], "value", selection),
                                      attributes)
    if MERGES in f:
        variables.update(_merge_variables(f, count, coords))
    if PLATEAUS in f and isinstance(f[PLATEAUS], h5py.Group):
        # The plateau table, written when the run ended: dimension `plateau`, variables
        # plateaus_<column>; the longest plateau as the scalars a sweep file records per run.
        table = f[PLATEAUS]
        for column in ("start", "end", "clusters", "censored"):
            if column in table:
                values = np.asarray(table[column][()])
                if column == "censored":
                    values = values.astype(bool)
                variables[f"plateaus_{column}"] = ("plateau", values, _attributes(table[column]))
        about = _attributes(table)
        variables["plateau_length"] = ((), float(about.get("longest_length", np.nan)), {
            "description": "length of the longest plateau (0: none)", "unit": "time",
            "plateau_min": about.get("plateau_min"), "min_length": about.get("min_length")})
        variables["plateau_clusters"] = ((), int(about.get("longest_clusters", -1)), {
            "description": "cluster count of the longest plateau (-1: none)"})

    attrs: dict[str, Any] = {}
    if PARAMETERS in f:
        parameters = f[PARAMETERS]
        attrs.update(_attributes(parameters))
        for name, item in parameters.items():
            if isinstance(item, h5py.Dataset):
                values = np.asarray(item[()])
                dims = _PARAMETER_DATASET_DIMS.get(name)
                if dims is None or len(dims) != values.ndim:
                    dims = tuple(f"{name}_{axis}" for axis in range(values.ndim))
                variables[name] = (dims, values, _attributes(item))
            elif isinstance(item, h5py.Group):
                # Per-parameter metadata kept in a subgroup, since an attribute cannot carry
                # attributes: attribute <parameter> of /parameters/descriptions becomes
                # <parameter>_description (of "units": <parameter>_unit; other groups: the
                # group's name as the suffix).
                suffix = _METADATA_SUFFIX.get(name, name)
                for key, value in _attributes(item).items():
                    attrs[f"{key}_{suffix}"] = value
    attrs["status"] = root.get("status", "unknown")
    attrs["frames_read"] = int(len(time))
    attrs["file"] = os.fspath(f.filename)
    if "h5md" in f:
        attrs["h5md_version"] = _plain(f["h5md"].attrs.get("version"))
        if "h5md/creator" in f:
            attrs["creator"] = " ".join(str(v) for v in _attributes(f["h5md/creator"]).values())
        if "h5md/modules/nadyn" in f:
            # nadyn's module: its file format version and what the file holds (the model's
            # equations, what position, magnitude and time mean) as module_<key>.
            for key, value in _attributes(f["h5md/modules/nadyn"]).items():
                attrs["file_format_version" if key == "version" else f"module_{key}"] = value
    for key, value in root.items():
        attrs.setdefault(key, value)
    dataset = xr.Dataset(variables, coords=coords, attrs=attrs)
    dataset = _with_energy(dataset)
    if manager is not None:
        dataset.set_close(manager.close)
    return dataset


_ENERGY_DESCRIPTION = (
    "the interaction energy E = (1 / (2 beta n^2)) sum_{i,j} exp(beta <Q_h y_i, K_h y_j>) itself "
    "(docs/model.md section 5.1), c exp(beta log_energy) / (2 beta) with beta the logits' inverse "
    "temperature (beta log n with beta_log_n) and c = 1 for the heads' mean, H for their sum: "
    "derived by nadyn.open from the stored log_energy, inf where it overflows float64; absent "
    "at beta = 0, where E is infinite")


def _with_energy(dataset: xr.Dataset) -> xr.Dataset:
    """``log_energy`` under its name (files before the rename call it ``energy``) and E itself
    as ``energy`` beside it, wherever beta != 0 (NaN at the points of a sweep with beta = 0)."""
    if "energy" in dataset.data_vars and "log_energy" not in dataset.data_vars:
        dataset = dataset.rename_vars({"energy": "log_energy"})
    if "log_energy" not in dataset.data_vars:
        return dataset

    def parameter(name: str, default: Any) -> Any:
        # A sweep's parameters are variables (its axes coordinates); a run's are attributes.
        if name in dataset.variables and (name not in dataset.data_vars
                                          or is_sweep(dataset.attrs)):
            return dataset[name]
        return _plain(dataset.attrs.get(name, default))

    beta = parameter("beta", np.nan)
    beta_log_n = parameter("beta_log_n", 0)
    n = parameter("n", np.nan)
    heads = parameter("heads", 1)
    combine = parameter("head_combine", "mean")
    logit_beta = xr.where(xr.DataArray(beta_log_n).astype(bool), beta * np.log(n), beta) \
        if isinstance(beta_log_n, xr.DataArray) else (beta * np.log(n) if int(beta_log_n) else beta)
    scale = xr.where(combine == "sum", heads, 1) if isinstance(combine, xr.DataArray) \
        else (heads if str(combine) == "sum" else 1)
    if not isinstance(logit_beta, xr.DataArray):
        logit_beta = float(logit_beta)
        if logit_beta == 0.0 or not np.isfinite(logit_beta):
            return dataset
    stored = dataset["log_energy"]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        energy = scale * np.exp(logit_beta * stored) / (2.0 * logit_beta)
        if isinstance(logit_beta, xr.DataArray):
            energy = energy.where(logit_beta != 0)
    energy = energy.transpose(*stored.dims)
    energy.attrs = {"description": _ENERGY_DESCRIPTION, "unit": "1"}
    dataset = dataset.assign(energy=energy)
    return dataset


# ---- density files (nadyn meanfield) --------------------------------------------------------

def _read_density(
    f: h5py.File, root: dict[str, Any], *, values: bool, frames: slice | None, lazy: bool
) -> xr.Dataset:
    if DENSITY not in f or not all(m in f[DENSITY] for m in ("value", "points", "weights")):
        raise ValueError(f"'{f.filename}' says nadyn_kind = \"density\" but has no "
                         f"/{DENSITY}/value, points and weights")
    groups = _series_groups(f)
    count = _consistent_frames(groups)
    start, stop, step = (frames or slice(None)).indices(count)
    if step < 0:
        raise ValueError("nadyn.open: frames must be an increasing slice")
    selection = slice(start, stop, step)

    group = f[DENSITY]
    time = _read_series(group, "time", selection)
    step_index = _read_series(group, "step", selection)
    for path, series in groups.items():
        if path != DENSITY and not np.array_equal(_read_series(series, "time", selection), time):
            raise ValueError(f"'{f.filename}': /{path} has times that differ from /{DENSITY}/time")
    points = np.asarray(group["points"][()], dtype=np.float64)
    weights = np.asarray(group["weights"][()], dtype=np.float64)
    count_points, d = points.shape
    parameters = _attributes(f[PARAMETERS]) if PARAMETERS in f else {}
    geometry = parameters.get("geometry")

    coords: dict[str, Any] = {
        "time": ("time", time, {"long_name": "continuous depth t"}),
        "step": ("time", step_index, {"long_name": "frame index"}),
        "point": ("point", np.arange(count_points), {"long_name": "node of the grid"}),
        "dim": ("dim", np.arange(d)),
    }
    if geometry == "circle":
        angle = np.mod(np.arctan2(points[:, 1], points[:, 0]), 2.0 * np.pi)
        coords["angle"] = ("point", angle, {"long_name": "angle atan2(x_1, x_0) of the node",
                                            "unit": "radian"})
    elif geometry == "zonal":
        coords["cos"] = ("point", points[:, d - 1].copy(),
                         {"long_name": "x_{d-1} of the node's ring (the density depends on it alone)"})

    variables: dict[str, Any] = {}
    if values:
        attributes = {"long_name": "density rho w.r.t. the uniform probability on the sphere"}
        attributes.update(_variable_attributes(group))
        if lazy:
            manager = CachingFileManager(_open_h5, f.filename)
            data: Any = indexing.LazilyIndexedArray(_FrameSeries(
                manager, threading.Lock(), group.name + "/value", range(count)[selection],
                group["value"]))
        else:
            manager = None
            data = _read_series(group, "value", selection)
        variables["density"] = (("time", "point"), data, attributes)
    else:
        manager = None
    variables["points"] = (("point", "dim"), points, {"long_name": "the nodes (unit vectors)"})
    variables["weights"] = ("point", weights,
                            {"long_name": "quadrature weights: sum_i w_i rho_i is the mass"})
    for path, series in groups.items():
        if not path.startswith(OBSERVABLES + "/"):
            continue
        name = path[len(OBSERVABLES) + 1:]
        value = _read_series(series, "value", selection)
        dims = ("time", "mode") if value.ndim == 2 else ("time",)
        if value.ndim == 2:
            coords["mode"] = ("mode", np.arange(1, value.shape[1] + 1),
                              {"long_name": "degree k of the spectral mode m_k"})
        variables[name] = (dims, value, _variable_attributes(series))

    attrs: dict[str, Any] = dict(parameters)
    attrs["status"] = root.get("status", "unknown")
    attrs["frames_read"] = int(len(time))
    attrs["file"] = os.fspath(f.filename)
    for key, value in root.items():
        attrs.setdefault(key, value)
    dataset = xr.Dataset(variables, coords=coords, attrs=attrs)
    if manager is not None:
        dataset.set_close(manager.close)
    return dataset


def not_recorded(ds: xr.Dataset, name: str) -> str:
    """Why the observable `name` is not in `ds`: "NAME not recorded (add NAME to
    observables)" for a standard observable the run did not ask for (likewise observe for an
    optional one), a list of the valid names for a name nadyn does not know."""
    from . import _core  # noqa: PLC0415 (optional: the names are then guessed from the file)

    standard = list(_core.observable_names()) if _core is not None and hasattr(
        _core, "observable_names") else []
    recorded = [str(v) for v in ds.data_vars if "time" in ds[v].dims and v not in (
        "theta", "r", "positions", "magnitudes", "density")]
    if name in standard:
        return f"{name} not recorded (add {name} to observables)"
    if name in ("merges", "merge_count", "clustering_time", "plateau_length", "plateau_clusters"):
        return f"{name} not recorded (add clusters to observables)"
    described = str(ds.attrs.get("observe_description", ""))
    if name and name in described:
        return f"{name} not recorded (add {name} to observe)"
    return f"no observable {name}; valid names: {', '.join(recorded) or 'none'}"


def short_number(value: Any) -> str:
    """A value as nadyn prints an axis's values: a float in its shortest text that reads back
    exactly (0.1, not 0.10000000000000001, and 0.8842105263157894, not 0.884211), without a
    trailing .0 (4, as the library's records write it); anything else as str."""
    if isinstance(value, (float, np.floating)):
        text = repr(float(value))
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def _axis_values(ds: xr.Dataset, axis: str) -> list[str]:
    return [short_number(v) for v in np.asarray(ds[axis].values).tolist()]


def sweep_axes(ds: xr.Dataset) -> list[str]:
    """The axes of a sweep Dataset, in the row-major order of its runs (the root attribute
    ``axes``: one name, or a list)."""
    axes = ds.attrs.get("axes", [])
    names = axes.split() if isinstance(axes, str) else [str(a) for a in np.atleast_1d(axes)]
    return [a for a in names if a in ds.dims]


def _library_point(ds: xr.Dataset, point) -> dict[str, int] | None:
    """The axes' value indices of the run `point` names, from the library's own lookup
    (experiment::find_point, the one behind --point) when the compiled module is built and
    the Dataset's file is there; None otherwise (the same rules, in Python, below)."""
    from . import _core  # noqa: PLC0415 (optional)

    path = ds.attrs.get("file")
    if (_core is None or not hasattr(_core, "_sweep_point") or not path
            or not os.path.isfile(path) or isinstance(point, dict)):
        return None
    axes = sweep_axes(ds)
    _, _, at = _core._sweep_point(os.fspath(path), "" if point is None else str(point))
    # The file's axes, whole: a Dataset selected or sliced since is looked up in Python.
    if sorted(at) != sorted(axes) or any(ds.sizes[a] != size for a, (_, size) in at.items()):
        return None
    return {axis: int(value) for axis, (value, _) in at.items()}


def sweep_run(ds: xr.Dataset, point: str | int | dict[str, Any] | None = None) -> xr.Dataset:
    """One run of a sweep Dataset, as --point of nadyn rerun and nadyn inspect names it
    (experiment::find_point): "axis=value,..." (every axis with more than one value; a value
    equal as a number), the run's index in the row-major order of the axes, a dict
    {axis: value}, or None for the only run of a one-run sweep. The Dataset keeps the
    selected coordinates as scalars. ValueError naming the axes and their values otherwise."""
    axes = sweep_axes(ds)
    sizes = [ds.sizes[a] for a in axes]
    runs = int(np.prod(sizes)) if sizes else 1
    choices = "; ".join(f"{a} in {{{', '.join(_axis_values(ds, a))}}}" for a in axes) or "no axes"
    choices += f"; or a run's index, 0 to {runs - 1}"
    chosen: dict[str, int] = {}
    core_point = _library_point(ds, point)
    if core_point is not None:
        chosen = {axis: int(v) for axis, v in core_point.items() if axis in axes}
    elif point is None or (isinstance(point, str) and not point.strip()):
        if runs != 1:
            raise ValueError(f"the sweep has {runs} runs: pass --point axis=value,... to pick one; "
                             f"{choices}")
    elif isinstance(point, (int, np.integer)) or (isinstance(point, str) and point.isdigit()):
        index = int(point)
        if not 0 <= index < runs:
            raise ValueError(f"--point {point}: the sweep has {runs} runs; {choices}")
        for axis, size in zip(reversed(axes), reversed(sizes)):
            chosen[axis] = index % size
            index //= size
    else:
        items = point.items() if isinstance(point, dict) else [
            tuple(item.split("=", 1)) if "=" in item else (item, None)
            for item in str(point).split(",") if item]
        for name, value in items:
            if name not in axes or value is None:
                raise ValueError(f"--point: '{name}{'' if value is None else '=' + str(value)}' "
                                 f"is not axis=value; the axes: {choices}")
            values = np.asarray(ds[name].values).tolist()
            found = None
            for v, candidate in enumerate(values):
                if str(candidate) == str(value) or _axis_values(ds, name)[v] == str(value):
                    found = v
                else:
                    try:
                        if float(candidate) == float(value):
                            found = v
                    except (TypeError, ValueError):
                        pass
                if found is not None:
                    break
            if found is None:
                raise ValueError(f"--point: {name} = {value} is not a value of the axis; {choices}")
            chosen[name] = found
    for axis, size in zip(axes, sizes):
        if axis not in chosen:
            if size != 1:
                raise ValueError(f"--point names no value of the axis {axis}; {choices}")
            chosen[axis] = 0
    return _unrecorded_in_run(ds.isel(chosen) if chosen else ds)
