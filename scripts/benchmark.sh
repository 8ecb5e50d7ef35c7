#!/usr/bin/env bash
# Builds the benchmark configuration and runs every benchmark: results/performance.md.
#
#   bash scripts/benchmark.sh            # the full run (about 10-15 minutes on 2 cores)
#   bash scripts/benchmark.sh --quick    # fewer repetitions, n <= 4096 (a few minutes)
#
# The build goes to build-bench/ with NADYN_SIMD=native (-march=native): the numbers are for
# this machine's CPU. The default build (build/) stays portable and is not touched.
# The NumPy peer also runs with OpenBLAS (2 threads) when `apt-get download
# libopenblas0-pthread` works: the package is unpacked into build-bench/, not installed.
# PyTorch is used when Debian's python3-torch is installed (tried once with apt-get here).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-bench"
source "$root/scripts/lib/install_missing.sh"
install_missing "${nadyn_packages[@]}" time
sudo=""
[[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null && sudo="sudo"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
    echo "python3-torch is missing: trying apt-get install -y python3-torch" >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q python3-torch >&2 ||
        echo "python3-torch did not install: no PyTorch peer" >&2
fi

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DNADYN_SIMD=native \
      -DNADYN_BUILD_TESTS=OFF >/dev/null
# GCC 12 prints false -Wmaybe-uninitialized warnings from Eigen's AVX-512 code: the build
# log goes to a file, shown only when the build fails.
if ! cmake --build "$build" -j2 --target nadyn_cli nadyn_bench >"$build/build.log" 2>&1; then
    grep -E "error|Error" "$build/build.log" | head -40 >&2
    echo "build failed; full log: $build/build.log" >&2
    exit 1
fi

openblas="$build/openblas/usr/lib/x86_64-linux-gnu/openblas-pthread"
if [[ ! -e "$openblas/libblas.so.3" ]]; then
    (cd "$build" && apt-get download libopenblas0-pthread >/dev/null 2>&1 &&
        dpkg -x libopenblas0-pthread_*.deb "$build/openblas") ||
        echo "libopenblas0-pthread could not be downloaded: NumPy runs with the system BLAS only" >&2
fi
[[ -e "$openblas/libblas.so.3" ]] || openblas=""

/usr/bin/python3 "$root/bench/benchmark.py" --build "$build" --out "$root/results/performance.md" \
    --openblas "$openblas" "$@"
