#!/usr/bin/env bash
# Builds nadyn as users get it and as the portable build makes it, and runs every benchmark
# on both in one run: results/performance.md (and results/performance.json), after
# bench/ensemble.py's ensembles of small runs (results/ensemble.md, quoted in performance.md)
# and bench/meanfield.py's density-solver costs (results/meanfield.md).
#
#   bash scripts/benchmark.sh            # the full run (both builds; the report gives its duration)
#   bash scripts/benchmark.sh --quick    # fewer repetitions, n <= 4096 (several minutes)
#   bash scripts/benchmark.sh --smoke    # n = 32, d = 3 only, one repetition: checks that the
#                                        # pipeline runs; its report goes to build/, not results/
#   bash scripts/benchmark.sh --peer-simuformer PATH   # also simuformer's experiment, by the
#                                        # peer (a checkout at PATH) and by nadyn (issue 25)
#   bash scripts/benchmark.sh --peer-simuformer PATH --simuformer-only
#                                        # simuformer's experiment alone (about 10 minutes):
#                                        # results/simuformer.md, then performance.md's quote of
#                                        # it rewritten from performance.json (nothing else is
#                                        # timed: bench/benchmark.py --requote)
#
# The builds: build/ configured exactly as scripts/setup.sh does (the README's quick start:
# Release, NADYN_SIMD=auto, which picks avx512 on an AVX-512 machine), the headline; and
# build-portable/ configured as scripts/test-portable.sh does (NADYN_SIMD=portable, the x86-64
# baseline). Both configure steps come from scripts/lib/configure.sh; only the benchmark
# targets (nadyn_cli, nadyn_bench) are built here.
# The NumPy peer runs with the reference BLAS (libblas3, loaded by path) and with OpenBLAS
# (2 threads) when `apt-get download libopenblas0-pthread` works: the package is
# unpacked into build/bench-openblas/, not installed. Every PyTorch peer (benchmark.py's,
# ensemble.py's, simuformer.py's) runs with that OpenBLAS too, through bench/blas.py, which
# also reports the library each peer really mapped. PyTorch is used when Debian's
# python3-torch is installed (tried once with apt-get here).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# simuformer's experiment by the peer and by nadyn (bench/simuformer.py, results/simuformer.md,
# quoted in performance.md) runs only given a checkout of the peer: --peer-simuformer PATH or
# NADYN_PEER_SIMUFORMER=PATH. Samples per beta: --simuformer-samples K (default 40, which
# keeps the whole benchmark under an hour: the peer takes about 1.7 s a sample on 2 cores with
# OpenBLAS, 6 s with the reference BLAS; --quick: 8). The options are taken out of the arguments
# bench/benchmark.py gets.
simuformer="${NADYN_PEER_SIMUFORMER:-}"
samples=""
only_simuformer=""
rest=()
while (($#)); do
    case "$1" in
        --simuformer-only) only_simuformer=1; shift ;;
        --peer-simuformer) simuformer="${2:?--peer-simuformer needs a path}"; shift 2 ;;
        --peer-simuformer=*) simuformer="${1#*=}"; shift ;;
        --simuformer-samples) samples="${2:?--simuformer-samples needs a count}"; shift 2 ;;
        --simuformer-samples=*) samples="${1#*=}"; shift ;;
        *) rest+=("$1"); shift ;;
    esac
done
set -- ${rest[@]+"${rest[@]}"}
source "$root/scripts/lib/install_missing.sh"
source "$root/scripts/lib/configure.sh"
install_missing "${nadyn_packages[@]}" time
sudo=""
[[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null && sudo="sudo"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
    echo "python3-torch is missing: trying apt-get install -y python3-torch" >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q python3-torch >&2 ||
        echo "python3-torch did not install: no PyTorch peer" >&2
fi

# GCC 12 prints false -Wmaybe-uninitialized warnings from Eigen's AVX-512 code: the build
# log goes to a file, shown only when the build fails.
build_targets() {
    local build="$1"
    if ! cmake --build "$build" -j2 --target nadyn_cli nadyn_bench >"$build/bench-build.log" 2>&1; then
        grep -E "error|Error" "$build/bench-build.log" | head -40 >&2
        echo "build failed; full log: $build/bench-build.log" >&2
        exit 1
    fi
}
if [[ -n "$only_simuformer" && -z "$simuformer" ]]; then
    echo "benchmark.sh: --simuformer-only needs --peer-simuformer PATH (or NADYN_PEER_SIMUFORMER)" >&2
    exit 2
fi
# The benchmark driver is a target of both builds (test-portable.sh leaves it out of its own).
configure_default -DNADYN_BUILD_BENCH=ON
build_targets "$root/build"
if [[ -z "$only_simuformer" ]]; then
    configure_portable -DNADYN_BUILD_BENCH=ON
    build_targets "$root/build-portable"
fi

fetched="$root/build/bench-openblas"
openblas="$fetched/usr/lib/x86_64-linux-gnu/openblas-pthread"
if [[ ! -e "$openblas/libblas.so.3" ]]; then
    mkdir -p "$fetched"
    (cd "$fetched" && apt-get download libopenblas0-pthread >/dev/null 2>&1 &&
        dpkg -x libopenblas0-pthread_*.deb "$fetched") ||
        echo "libopenblas0-pthread could not be downloaded: NumPy runs with the system BLAS only" >&2
fi
[[ -e "$openblas/libblas.so.3" ]] || openblas=""
# The reference BLAS by path (Debian's libblas3, which python3-numpy depends on): the
# system's libblas.so.3 alternative may point to OpenBLAS.
refblas=/usr/lib/x86_64-linux-gnu/blas
[[ -e "$refblas/libblas.so.3" ]] || refblas=""

# simuformer's experiment (bench/simuformer.py) into results/simuformer.md, with $samples
# samples a beta (default 40, or 8 with --quick among the arguments).
run_simuformer() {
    if [[ -z "$samples" ]]; then
        samples=40
        [[ " $* " == *" --quick "* ]] && samples=8
    fi
    [[ "$samples" =~ ^[1-9][0-9]*$ ]] || {
        echo "benchmark.sh: --simuformer-samples must be a positive count, got '$samples'" >&2
        exit 2
    }
    /usr/bin/python3 "$root/bench/simuformer.py" --peer "$simuformer" --build "$root/build" \
        --openblas "$openblas" --samples "$samples" --out "$root/results/simuformer.md" \
        --figure "$root/results/simuformer_heatmap.png"
}

# simuformer's experiment alone: its report, then performance.md's quote of it anew.
if [[ -n "$only_simuformer" ]]; then
    run_simuformer "$@"
    exec /usr/bin/python3 "$root/bench/benchmark.py" --requote \
        --out "$root/results/performance.md" --simuformer "$root/results/simuformer.md"
fi

# The ensembles of small runs (the sweep issue's targets) first, into results/ensemble.md,
# which performance.md then quotes; --smoke leaves them out.
ensemble=()
if [[ " $* " != *" --smoke "* ]]; then
    quick=()
    [[ " $* " == *" --quick "* ]] && quick=(--quick)
    /usr/bin/python3 "$root/bench/ensemble.py" --build "$root/build" --openblas "$openblas" \
        --out "$root/results/ensemble.md" "${quick[@]}"
    ensemble=(--ensemble "$root/results/ensemble.md")
    # What the observables cost at frames (results/observables.md), quoted likewise.
    /usr/bin/python3 "$root/bench/observables.py" --build "$root/build" \
        --out "$root/results/observables.md" "${quick[@]}"
    ensemble+=(--observables "$root/results/observables.md")
    # What a command costs before it works (results/startup.md).
    /usr/bin/python3 "$root/bench/startup.py" --build "$root/build" --out "$root/results/startup.md"
    # What the density solver costs, against the grid and against particles of the same
    # accuracy, and the mean-field issue's two speed targets (results/meanfield.md); it reads
    # c of W1 = c n^-1/2 from the study mean_field_limit's table (results/mean_field_limit.csv).
    /usr/bin/python3 "$root/bench/meanfield.py" --build "$root/build" \
        --out "$root/results/meanfield.md" "${quick[@]}"
    if [[ -n "$simuformer" ]]; then
        run_simuformer "$@"
        ensemble+=(--simuformer "$root/results/simuformer.md")
    fi
    # Its two busy cores linger in the load average, which benchmark.py reads between its
    # steps to flag a loaded machine: wait (at most 3 minutes) until the 1-minute average is
    # back below 0.5. (Each timed run's own load is measured, bench/timing.py.)
    for _ in $(seq 36); do
        awk '{ exit !($1 < 0.5) }' /proc/loadavg && break
        sleep 5
    done
fi
/usr/bin/python3 "$root/bench/benchmark.py" --build "$root/build" \
    --portable "$root/build-portable" --out "$root/results/performance.md" \
    --openblas "$openblas" --refblas "$refblas" "${ensemble[@]}" "$@"
