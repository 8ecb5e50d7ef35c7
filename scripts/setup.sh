#!/usr/bin/env bash
# Installs what is missing (Debian packages), configures and builds nadyn (Release, -j2), and
# makes `import nadyn` work for /usr/bin/python3.
# Run by quickstart.sh, test.sh and reproduce.sh; safe to run again (only missing packages install).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/install_missing.sh"
source "$root/scripts/lib/configure.sh"
install_missing "${nadyn_packages[@]}"
configure_default
cmake --build "$root/build" -j2
# `import nadyn` for Debian's /usr/bin/python3: a .pth file in its site directory for local
# packages (/usr/local/lib/python3.X/dist-packages) naming this checkout's python/. A path
# rather than a copy, so the package follows the checkout and finds the compiled module that
# the build places in python/nadyn/; without root (and no sudo), the user's site directory.
python_pth="$root/python"
python_site="$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')"
if [[ "$(cat "$python_site/nadyn.pth" 2>/dev/null)" != "$python_pth" ]]; then
    if [[ $(id -u) -eq 0 ]]; then
        mkdir -p "$python_site" && echo "$python_pth" >"$python_site/nadyn.pth"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo mkdir -p "$python_site" && echo "$python_pth" | sudo tee "$python_site/nadyn.pth" >/dev/null
    else
        python_site="$(/usr/bin/python3 -m site --user-site)"
        mkdir -p "$python_site" && echo "$python_pth" >"$python_site/nadyn.pth"
    fi
    echo "import nadyn: $python_site/nadyn.pth -> $python_pth" >&2
fi
