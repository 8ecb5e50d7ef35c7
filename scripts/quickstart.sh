#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the default simulation
# (peri-ln, n = 64, d = 3, beta = 4, T = 20) into a new file in the current directory.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
"$root/build/bin/nadyn" simulate "$@"
