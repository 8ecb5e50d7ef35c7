#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (the `sanitize`
# preset: RelWithDebInfo, build-sanitize/). The nadyn binary that the cli/ tests and
# numeric/paper_tables spawn is built sanitized too, and inherits the options below.
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
cd "$root/build-sanitize"
# Not the mpirun tests (label mpi): Open MPI's runtime keeps allocations to exit, which
# LeakSanitizer would report as nadyn's; scripts/test.sh runs them in the Release build.
ctest --output-on-failure -j2 -LE mpi "$@"
