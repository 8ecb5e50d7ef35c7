#!/usr/bin/env bash
# Installs what is missing (Debian packages), configures and builds nadyn (Release, -j2).
# Run by quickstart.sh, test.sh and reproduce.sh; safe to run again (only missing packages install).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/install_missing.sh"
install_missing "${nadyn_packages[@]}"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j2
