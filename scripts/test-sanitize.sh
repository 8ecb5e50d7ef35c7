#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (the `sanitize`
# preset: RelWithDebInfo, build-sanitize/). The nadyn binary that the cli/ tests
# spawn is built sanitized too, and inherits the options below.
#
#   bash scripts/test-sanitize.sh [CTEST ARGS...]     e.g. -R cli/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The packages of scripts/setup.sh (the sanitizer runtimes come with gcc); only the missing
# ones install. Installing here, not via setup.sh, spares a Release build nobody asked for.
source "$root/scripts/lib/install_missing.sh"
install_missing "${nadyn_packages[@]}"

cd "$root"
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j2

# Stop at the first report of either sanitizer, leaks included. exitcode=86: a report must
# not pass for the exit status 1 (I/O error) or 2 (bad input) that cli/ tests expect.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:exitcode=86:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:exitcode=86}"
# HDF5 1.10 leaks a few bytes of its own when it meets damaged metadata (a failing checksum,
# tests/cli/output_faults.cpp reads such files on purpose): suppressed as the fuzz targets do
# (fuzz/lsan.supp). A leak of nadyn's own allocations still fails.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/fuzz/lsan.supp:print_suppressions=0}"
cd "$root/build-sanitize"
# The Python suites run Debian's unsanitized python3 (a sanitized extension module cannot load
# into it) and the MPI suites run Open MPI, whose own allocations LeakSanitizer would report:
# both run in the Release suite (scripts/test.sh), not here. The MPI suites are therefore not
# built under the sanitizers (tests/CMakeLists.txt); the Python module is, as the CLI suites'
# `nadyn table` runs studies that load it.
ctest --output-on-failure -j2 -LE "python|mpi" "$@"
