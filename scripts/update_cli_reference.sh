#!/usr/bin/env bash
# Rewrite the flag reference at the end of docs/cli.md from the program's own flags (every
# subcommand, flag, value type, default and --help text), and the tables of observables in
# docs/file-format.md from the library's table of observables. ctest's docs/cli_reference and
# docs/observable_reference fail until this is run after a flag or an observable changes.
#
#   bash scripts/update_cli_reference.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" -j2 --target nadyn_cli_reference nadyn_observable_reference
"$build/tests/nadyn_cli_reference" --write "$root/docs/cli.md"
echo "docs/cli.md: flag reference rewritten" >&2
"$build/tests/nadyn_observable_reference" --write "$root/docs/file-format.md"
echo "docs/file-format.md: tables of observables rewritten" >&2
