#!/usr/bin/python3
"""Whose bug a sanitizer report shows: libhdf5's own, or nadyn's.

Reads one AddressSanitizer/UBSan report (the output of replaying one fuzz input) on stdin
and prints one word:

  hdf5        the faulting access is inside libhdf5, and so is the allocation of the memory it
              touched (when the report names one): HDF5 corrupted or misread its own memory
              while parsing the damaged file; nadyn's arguments played no part.
  nadyn       anything else with a report: a frame of nadyn's (a source location) comes first,
              or HDF5 wrote into memory nadyn allocated (a buffer too small for a read).
  none        no sanitizer report at all (the input did not crash when replayed alone).

scripts/fuzz.sh uses it after `fuzz_hdf5_alone`, which cannot reach every object nadyn's
readers open by name, and whose crashes (like those of a fuzzing process) can depend on the
heap state earlier inputs left behind.
"""
import re
import sys

FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ ")
BUILD_ID = re.compile(r"\s*\(BuildId: [0-9a-f]+\)\s*$")
SOURCE_LOCATION = re.compile(r"\S+:\d+(?::\d+)?$")
SECTION = re.compile(r"^(?:\S+ )?(?:allocated|freed) by thread ")


def frame_owner(line):
    """'hdf5', 'nadyn' or None (the sanitizer runtime, libc, the fuzzer driver)."""
    if not FRAME.match(line):
        return None
    line = BUILD_ID.sub("", line.rstrip())
    if "libhdf5" in line:
        return "hdf5"
    # A source location (path:line[:column]): a compiled file of ours or a header it
    # instantiates. The runtime, libc and libFuzzer frames of this build carry only
    # (module+offset), as Debian ships them without debug information.
    if SOURCE_LOCATION.search(line) and "compiler-rt" not in line:
        return "nadyn"
    return None


def stacks(lines):
    """The report's stacks in order: the faulting one first, then allocated/freed-by ones."""
    result, current, started = [], None, False
    for line in lines:
        if "ERROR: AddressSanitizer" in line or "runtime error:" in line or (
            "ERROR: LeakSanitizer" in line
        ):
            started = True
            current = []
            result.append(current)
            continue
        if not started:
            continue
        if SECTION.match(line.strip()):
            current = []
            result.append(current)
            continue
        if FRAME.match(line) and current is not None:
            current.append(line)
    return result


def owner(report):
    lines = report.splitlines()
    found = stacks(lines)
    if not found:
        return "none"
    owners = []
    for stack in found:
        first = next((o for o in map(frame_owner, stack) if o), None)
        if first is not None:
            owners.append(first)
    if owners and all(o == "hdf5" for o in owners):
        return "hdf5"
    return "nadyn"


if __name__ == "__main__":
    print(owner(sys.stdin.read()))
