# shellcheck shell=bash
# Sourced by the scripts: the configure steps of nadyn's two standard builds, kept in one
# place so that the benchmark (benchmark.sh) measures exactly what users and the tests build.
#
#   configure_default [CMAKE ARGS...]    build/: Release, NADYN_SIMD=auto (setup.sh, the
#                                        README's quick start; avx512 on an AVX-512 machine)
#   configure_portable [CMAKE ARGS...]   build-portable/: Release, NADYN_SIMD=portable (the
#                                        x86-64 baseline, SSE2, no FMA; test-portable.sh)
#
# Both need `root` (the checkout) set by the sourcing script; extra arguments are passed to
# cmake (e.g. -DNADYN_BUILD_BENCH=OFF).

configure_default() {
    cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
}

configure_portable() {
    cmake -S "$root" -B "$root/build-portable" -DCMAKE_BUILD_TYPE=Release \
        -DNADYN_SIMD=portable "$@" >/dev/null
}
