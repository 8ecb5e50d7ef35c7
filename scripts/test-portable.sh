#!/usr/bin/env bash
# The test suite on a portable build (NADYN_SIMD=portable: the x86-64 baseline, SSE2, no
# FMA) in build-portable/, so that the kernel's portable exp and 2-wide paths are compiled
# and checked as well as the default build's (scripts/test.sh, NADYN_SIMD=auto). The C++
# suites and the CLI's run here; the Python and mpirun suites, which exercise the same
# kernel through the bindings and Open MPI, run in the default build only (CI's time).
#
#   bash scripts/test-portable.sh [CTEST ARGS...]     e.g. -R 'unit/|numeric/|invariants/'
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/install_missing.sh"
source "$root/scripts/lib/configure.sh"
install_missing "${nadyn_packages[@]}"
configure_portable -DNADYN_BUILD_BENCH=OFF -DNADYN_PYTHON=OFF
cmake --build "$root/build-portable" -j2
cd "$root/build-portable"
ctest --output-on-failure -j2 -LE "python|mpi" "$@"
