#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root/build"
ctest --output-on-failure -j2 "$@"
