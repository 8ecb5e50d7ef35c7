#!/usr/bin/env bash
# Regenerate everything in results/: install what is missing, build, then recompute the
# paper's tables, the figure data and the figures (about 5 minutes on 2 cores).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
build/bin/nadyn table all --out-dir results "$@"
# Tables outside `table all` (results/README.md sections 4 and 5 describe them).
build/bin/nadyn table unselectable --out-dir results --seeds 1 2 3 4 5 > /dev/null
build/bin/nadyn table noise --out-dir results --seeds 1 2 3 > /dev/null
