#!/usr/bin/env bash
# The suites that check the numbers on a portable build (NADYN_SIMD=portable: the x86-64
# baseline, SSE2, no FMA) in build-portable/, so that the kernel's portable exp and 2-wide
# paths are compiled and checked as well as the default build's (scripts/test.sh,
# NADYN_SIMD=auto): unit/, numeric/, invariants/, meanfield/ and the CLI suites that compute
# (simulate, layernorm, unnormalized attention, QKV noise, plateaus). The suites of files,
# errors, signals, Python and mpirun exercise no instruction-set-dependent code of their own:
# they run in the default and sanitizer builds (CI's time; building them here took minutes).
#
#   bash scripts/test-portable.sh [CTEST ARGS...]     e.g. -R 'unit/'
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/install_missing.sh"
source "$root/scripts/lib/configure.sh"
install_missing "${nadyn_packages[@]}"
configure_portable -DNADYN_BUILD_BENCH=OFF -DNADYN_PYTHON=OFF
selection='^(unit|numeric|invariants|meanfield)/|^cli/(simulate_inspect|layernorm|unnormalized_attention|qkv_noise_flags|plateaus)$'
cd "$root/build-portable"
# Each ctest entry suite/name is the executable test_suite_name (tests/CMakeLists.txt).
mapfile -t targets < <(ctest -N -R "$selection" | sed -n 's|^ *Test *#[0-9]*: \([a-z]*\)/\([a-z0-9_]*\)$|test_\1_\2|p')
if ((${#targets[@]} < 40)); then
    echo "test-portable: found only ${#targets[@]} suites matching $selection" >&2
    exit 1
fi
cmake --build "$root/build-portable" -j2 --target nadyn_cli "${targets[@]}"
ctest --output-on-failure -j2 -R "$selection" "$@"
