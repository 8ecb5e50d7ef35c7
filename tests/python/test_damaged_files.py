"""nadyn.open and nadyn.frame_count on files whose damaged metadata crashes libhdf5.

tests/regression/data/inspect_crashes.h5 (one damaged byte of a group's link metadata) made
the interpreter die with SIGSEGV (or glibc's "free(): invalid pointer" abort) inside libhdf5,
which h5py calls before anything can check the file. nadyn.open now walks the file's structure
in a child process first: a crash there becomes an OSError naming the file. Each call runs in
its own interpreter here, so that a crash fails the test instead of ending pytest."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CRASHING = REPO / "tests" / "regression" / "data" / "inspect_crashes.h5"
HANGING = REPO / "tests" / "regression" / "data" / "resume_hangs.h5"
# Found by fuzz/open_files.py: a checksum HDF5 verifies fails while the objects are listed, and
# reading on past it by name crashed the interpreter (SIGSEGV, or glibc's abort) even after a
# walk in a child process had met the failure as an error.
PAST_DAMAGE = REPO / "tests" / "regression" / "data" / "open_past_damage.h5"
# Found by fuzz/open_files.py: a sweep file whose global heap (the axis labels, variable-length
# strings) is damaged. The walk read numbers only; xarray then decoded the labels in the
# interpreter itself, and libhdf5 crashed reading the heap (SIGSEGV in H5HG_read).
STRING_HEAP = REPO / "tests" / "regression" / "data" / "open_string_heap.h5"

# Prints the OSError and exits 3; a crash ends the interpreter on its signal. With `threads`,
# a second thread runs meanwhile (as OpenMP's do after nadyn.simulate): fork would copy only
# the calling one, so nadyn.open walks the file in a new interpreter instead.
SCRIPT = """
import sys, threading, time
import nadyn
if sys.argv[3] == "threads":
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
try:
    getattr(nadyn, sys.argv[1])(sys.argv[2])
except OSError as error:
    print(error)
    sys.exit(3)
"""


def _call(function: str, path: pathlib.Path, threads: str = "one") -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", SCRIPT, function, str(path), threads],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("threads", ["one", "threads"])
@pytest.mark.parametrize("function", ["open", "frame_count"])
def test_a_crash_inside_libhdf5_is_an_oserror(tmp_path, function, threads):
    path = tmp_path / "crashes.h5"
    path.write_bytes(CRASHING.read_bytes())
    result = _call(function, path, threads)
    assert result.returncode == 3, (result.returncode, result.stderr)
    # The walk in the child crashes (SIGSEGV or SIGBUS as a wild pointer lands in unmapped or
    # invalid memory, SIGABRT when glibc's heap checks see the damage first: it depends on the
    # heap), or meets the damage as HDF5's own error first (a checksum
    # it verifies, depending on the order the objects are visited in): either way one OSError
    # naming the file.
    assert re.fullmatch(re.escape(f"'{path}': damaged HDF5 metadata (")
                        + r"(the reader crashed: SIG(SEGV|BUS|ABRT)|[^\n]*checksum[^\n]*)\)",
                        result.stdout.strip()), result.stdout
    assert result.stderr == ""  # glibc's own words on the crash stay in the child


@pytest.mark.parametrize("function", ["open", "frame_count"])
@pytest.mark.parametrize("source", [HANGING, PAST_DAMAGE], ids=["resume_hangs", "past_damage"])
def test_damage_met_as_an_error_is_an_oserror_at_once(tmp_path, source, function):
    # A checksum HDF5 verifies fails: an OSError naming the file and the failure; the
    # interpreter reads nothing past it.
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    result = _call(function, path)
    assert result.returncode == 3, (result.returncode, result.stderr)
    assert result.stdout.startswith(f"'{path}': damaged HDF5 metadata ("), result.stdout
    assert "incorrect metadata checksum" in result.stdout


def test_a_healthy_file_opens_as_before(simulate):
    import nadyn

    path = simulate("ok.h5", "--n", "8", "--d", "3", "--T", "0.5")
    ds = nadyn.open(path)
    assert ds.attrs["status"] == "complete"
    assert nadyn.frame_count(path) == ds.sizes["time"]
    # The walk in a child costs milliseconds (fork) next to the reading itself.
    started = time.perf_counter()
    for _ in range(5):
        nadyn.io._survive_in_child(path)
    assert (time.perf_counter() - started) / 5 < 2.0


def test_a_damaged_string_heap_is_an_oserror_not_a_crash(tmp_path):
    path = tmp_path / STRING_HEAP.name
    path.write_bytes(STRING_HEAP.read_bytes())
    result = _call("open", path)
    assert result.returncode == 3, (result.returncode, result.stderr)
    assert result.stdout.startswith(f"'{path}': damaged HDF5 metadata ("), result.stdout
    assert result.stderr == ""
