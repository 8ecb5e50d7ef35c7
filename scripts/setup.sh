#!/usr/bin/env bash
# Installs what is missing (Debian packages), configures and builds nadyn (Release, -j2).
# Run by quickstart.sh, test.sh and reproduce.sh; safe to run again (only missing packages install).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
packages=(build-essential cmake git libboost-dev libeigen3-dev libhdf5-dev hdf5-tools
          doctest-dev libcli11-dev python3-numpy python3-scipy python3-h5py python3-matplotlib)
source "$root/scripts/lib/install_missing.sh"
install_missing "${packages[@]}"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j2
