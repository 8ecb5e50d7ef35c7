#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan, in build-fuzz/) and runs each for
# SECONDS (default 60) from its committed seeds (fuzz/seeds/<target>/; resume_files reads
# whole_files') and the corpus grown so far (fuzz/corpus/<target>/, not committed), then
# nadyn.open on damaged files for SECONDS (fuzz/open_files.py, the package of python/).
# Inputs that found something go to fuzz/crashes/; the script fails if any of them is a bug
# of nadyn's (see fuzz/README.md).
#
#   bash scripts/fuzz.sh [SECONDS]
#   build-fuzz/fuzz/fuzz_input_files fuzz/crashes/input_files-crash-...   # replay one input
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
    echo "usage: scripts/fuzz.sh [SECONDS]   (whole seconds per target, default 60)" >&2
    exit 2
fi

# The packages of scripts/setup.sh that the build needs, clang with its sanitizer runtimes
# (libFuzzer) and the OpenMP runtime clang links against; only the missing ones install.
packages=(build-essential cmake libboost-dev libeigen3-dev libhdf5-dev libcli11-dev libtomlplusplus-dev libfftw3-dev libsharp-dev
          clang libclang-rt-14-dev libomp-dev)
source "$root/scripts/lib/install_missing.sh"
install_missing "${packages[@]}"

build="$root/build-fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNADYN_FUZZ=ON -DNADYN_BUILD_TESTS=OFF -DNADYN_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target fuzz_input_files fuzz_cli_parse fuzz_whole_files \
    fuzz_resume_files fuzz_hdf5_alone

# Leaks are bugs too (libFuzzer checks after each input; HDF5's own are suppressed, see
# fuzz/lsan.supp); UBSan stops at the first report. HDF5 mallocs sizes read from a malformed
# file (up to 2^64 - 1 bytes) before it finds that the file is too short for them, and handles
# a null result: an allocation over 2 GiB fails here as on a small machine (ASan would
# otherwise report it, or spend seconds poisoning shadow memory for a block never touched).
# Our own code meeting such a failure as std::bad_alloc is still reported as a bug.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1:max_allocation_size_mb=2048}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/fuzz/lsan.supp:print_suppressions=0}"
# The input_files target writes its input to a scratch directory under TMPDIR.
export TMPDIR="${TMPDIR:-/tmp}"

# Whether HDF5 alone fails on an input_files input: fuzz_hdf5_alone (fuzz/hdf5_alone.cpp)
# makes the same HDF5 calls as nadyn's readers, correctly and with no nadyn code, under ASan.
# libhdf5 1.10 crashes or overflows buffers on some malformed files (fuzz/README.md); those
# inputs are reported, kept in fuzz/crashes/hdf5/ and not counted as nadyn's bugs.
hdf5_alone_fails() {
    local status mode=()
    [[ "${2:-}" == whole_files || "${2:-}" == resume_files ]] && mode=(--whole)
    # In a group with stderr closed: bash's own "Aborted" line for the child is noise here.
    status=$( { timeout 20 "$build/fuzz/fuzz_hdf5_alone" "${mode[@]}" "$1" >/dev/null 2>&1; echo $?; } \
              2>/dev/null)
    ((status != 0 && status != 2))
}

# fuzz_hdf5_alone walks the file as HDF5 lets it (H5Ovisit), while nadyn's readers also open
# objects by name, so some of HDF5's crashes are reached only through nadyn; and a crash in a
# fuzzing process can depend on the heap state that earlier inputs left in libhdf5 (its free
# lists). So an input HDF5 alone survives is replayed alone in its target, with full stacks,
# and scripts/lib/fuzz_crash_owner.py reads the report: "hdf5" when the fault and the memory
# it touched are both libhdf5's, "none" when the replay does not crash, "nadyn" otherwise
# (a hang or an out-of-memory in the replay counts as nadyn's).
replay_owner() {
    local report status=0
    report=$( { ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
                timeout 60 "$build/fuzz/fuzz_$2" -timeout=10 -rss_limit_mb=2048 "$1" 2>&1; } \
              2>/dev/null) || status=$?
    if ((status == 124)) || grep -qE 'ERROR: libFuzzer: (timeout|out-of-memory)' <<<"$report"; then
        echo nadyn
    else
        /usr/bin/python3 "$root/scripts/lib/fuzz_crash_owner.py" <<<"$report"
    fi
}

mkdir -p "$root/fuzz/crashes/hdf5" "$root/fuzz/crashes/unreproduced"

# One fuzzer for SECONDS; its output to build-fuzz/fuzz_<target>.log, its status to .status.
run_target() {
    local target="$1" corpus="$root/fuzz/corpus/$1" seeds="$root/fuzz/seeds/$1" status=0
    mkdir -p "$corpus"
    [[ "$target" == resume_files ]] && seeds="$root/fuzz/seeds/whole_files"
    # Fork mode: a crash ends one child, not the run, so one HDF5 bug cannot hide the rest
    # of the time budget; every input that found something is kept and classified below.
    local options=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1
                   -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
                   -artifact_prefix="$root/fuzz/crashes/$target-")
    case "$target" in
    input_files) options+=(-max_len=20000) ;;
    cli_parse) options+=(-max_len=512 -dict="$root/fuzz/cli_parse.dict") ;;
    whole_files | resume_files) options+=(-max_len=400000) ;;
    esac
    # New inputs go to the first directory (the grown corpus); the seeds are only read.
    "$build/fuzz/fuzz_$target" "${options[@]}" "$corpus" "$seeds" \
        >"$build/fuzz_$target.log" 2>&1 || status=$?
    echo "$status" >"$build/fuzz_$target.status"
}

# The fuzzers and nadyn.open's run two at a time, one a core: each still gets its SECONDS
# (a fuzzer is one process: -fork=1's parent only waits), and the stage takes 3 SECONDS, not
# 5 (CI's 45 minutes). Each target's inputs carry its name, so the runs share nothing.
targets=(input_files cli_parse whole_files resume_files)
for target in "${targets[@]}"; do
    touch "$build/fuzz_$target.start"
done
open_files_status=0
echo "== fuzz_input_files and fuzz_cli_parse for ${seconds} s" >&2
run_target input_files &
run_target cli_parse &
wait
echo "== fuzz_whole_files and fuzz_resume_files for ${seconds} s" >&2
run_target whole_files &
run_target resume_files &
wait
# nadyn.open in a forked interpreter on damaged copies of the same seeds: the interpreter must
# survive every input (nadyn.open reads a file's structure in a child process first, so that a
# crash inside libhdf5 becomes an OSError). Uninstrumented: Debian's python3 and h5py, and the
# compiled module of the main build when there is one (python/nadyn/_core*.so).
echo "== nadyn.open (fuzz/open_files.py) for ${seconds} s" >&2
/usr/bin/python3 "$root/fuzz/open_files.py" --seconds "$seconds" \
    --crashes "$root/fuzz/crashes" || open_files_status=$?

failed=()
for target in "${targets[@]}"; do
    log="$build/fuzz_$target.log"
    status="$(cat "$build/fuzz_$target.status")"
    # The last progress line: executions so far, executions per second, crashes.
    grep -E '^#[0-9]+:' "$log" | tail -n 1 | sed "s/^/fuzz_$target /" >&2 || true
    ours=()
    theirs=0 # inputs put down to libhdf5 (or not reproducible alone)
    while IFS= read -r -d '' artifact; do
        if [[ "$target" == cli_parse ]]; then
            ours+=("$artifact")
        elif hdf5_alone_fails "$artifact" "$target"; then
            echo "fuzz_$target: HDF5 alone fails on $(basename "$artifact") too" \
                 "(fuzz_hdf5_alone); kept in fuzz/crashes/hdf5/" >&2
            mv "$artifact" "$root/fuzz/crashes/hdf5/"
            theirs=$((theirs + 1))
        else
            case "$(replay_owner "$artifact" "$target")" in
            hdf5)
                echo "fuzz_$target: $(basename "$artifact") crashes inside libhdf5 on HDF5's" \
                     "own memory (the replay's report); kept in fuzz/crashes/hdf5/" >&2
                mv "$artifact" "$root/fuzz/crashes/hdf5/"
                theirs=$((theirs + 1)) ;;
            none)
                echo "fuzz_$target: $(basename "$artifact") does not crash when replayed" \
                     "alone (it needed the heap state of earlier inputs); kept in" \
                     "fuzz/crashes/unreproduced/" >&2
                mv "$artifact" "$root/fuzz/crashes/unreproduced/"
                theirs=$((theirs + 1)) ;;
            *) ours+=("$artifact") ;;
            esac
        fi
    done < <(find "$root/fuzz/crashes" -maxdepth 1 -type f -name "$target-*" \
             -newer "$build/fuzz_$target.start" -print0)
    # In fork mode libFuzzer exits with the status of a job that crashed as the time budget
    # ran out (134 for an HDF5 abort): that is no bug of ours when every input that crashed
    # was accounted for above. A failing status with no such input is.
    if ((${#ours[@]} || (status != 0 && theirs == 0))); then
        tail -n 60 "$log" >&2
        for artifact in "${ours[@]}"; do echo "bug input: $artifact" >&2; done
        failed+=("$target")
    fi
done
((open_files_status == 0)) || failed+=(open_files)

if ((${#failed[@]})); then
    echo "fuzzing found a bug in: ${failed[*]}; replay an input with" >&2
    echo "  $build/fuzz/fuzz_<target> <input>" >&2
    echo "  /usr/bin/python3 fuzz/open_files.py --replay <input>    (open_files)" >&2
    exit 1
fi
echo "fuzzing: nothing found in nadyn in ${seconds} s per target" >&2
