#!/usr/bin/env bash
# CI: nadyn still builds and runs without MPI (-DNADYN_MPI=OFF, in build-nompi/): the CLI and
# its sweep tests; under mpirun, that build refuses to run P copies of a command (one message,
# status 2) instead of letting every rank write the same file.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-nompi"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DNADYN_MPI=OFF -DNADYN_BUILD_BENCH=OFF >/dev/null
grep -q '^NADYN_WITH_MPI:.*=OFF$\|^NADYN_MPI:STRING=OFF$' "$build/CMakeCache.txt"
cmake --build "$build" -j2 --target nadyn_cli test_cli_sweep test_cli_bad_input
if nm -C "$build/bin/nadyn" | grep -q ' U MPI_'; then
    echo "test-no-mpi: $build/bin/nadyn links MPI" >&2
    exit 1
fi
(cd "$build" && ctest --output-on-failure -R '^cli/(sweep|bad_input)$')
if command -v mpirun >/dev/null; then
    dir="$(mktemp -d)"
    trap 'rm -rf "$dir"' EXIT
    printf '[run]\nn = 8\nT = 1\n[sweep]\nseed = [1, 2]\n' >"$dir/ok.toml"
    status=0
    (cd "$dir" && mpirun --allow-run-as-root --oversubscribe -np 2 "$build/bin/nadyn" sweep ok.toml \
        >out.txt 2>err.txt) || status=$?
    if [[ $status -eq 0 || $(grep -c '^nadyn:' "$dir/err.txt") -ne 1 || -e "$dir/ok.h5" ]] ||
        ! grep -q 'built without MPI' "$dir/err.txt"; then
        echo "test-no-mpi: under mpirun the build without MPI must refuse once (status $status):" >&2
        cat "$dir/err.txt" >&2
        exit 1
    fi
fi
echo "test-no-mpi: the build without MPI works"
