#!/usr/bin/env bash
# Rewrite the flag reference at the end of docs/cli.md from the program's own flags (every
# subcommand, flag, value type, default and --help text). ctest's docs/cli_reference fails
# until this is run after a flag changes.
#
#   bash scripts/update_cli_reference.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" -j2 --target nadyn_cli_reference
"$build/tests/nadyn_cli_reference" --write "$root/docs/cli.md"
echo "docs/cli.md: flag reference rewritten" >&2
