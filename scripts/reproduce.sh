#!/usr/bin/env bash
# Regenerate everything in results/: install what is missing, build, then recompute the
# paper's tables, the figure data and the figures (about 5 minutes on 2 cores).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
build/bin/nadyn table all --out-dir results --force "$@"
# Every other study (studies/<name>/, docs/studies.md) into results/ beside the paper's tables
# (those of studies/paper.toml ran above).
for study in $(/usr/bin/python3 -c 'import sys; sys.path.insert(0, "python"); import nadyn.study as s, nadyn.paper as p; done = {e.name for e in p.load_manifest().studies}; print(*[n for n in s.available() if n not in done])'); do
    build/bin/nadyn table "$study" --out-dir results --force >/dev/null
done
