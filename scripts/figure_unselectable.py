#!/usr/bin/python3
"""Figure of `nadyn table unselectable`: the fraction of unselectable keys against d.

Usage: /usr/bin/python3 scripts/figure_unselectable.py RESULTS_DIR
Reads RESULTS_DIR/unselectable.csv, writes RESULTS_DIR/fig_unselectable.png.
"""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = Path(sys.argv[1])
    with open(results / "unselectable.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    figure, axis = plt.subplots(figsize=(6.0, 4.0))
    for n in sorted({int(r["n"]) for r in rows}):
        mine = sorted((r for r in rows if int(r["n"]) == n), key=lambda r: int(r["d"]))
        d = [int(r["d"]) for r in mine]
        axis.errorbar(d, [float(r["raw_mean"]) for r in mine],
                      yerr=[float(r["raw_spread"]) for r in mine], marker="o", capsize=3,
                      label=f"raw, n = {n}")
        axis.plot(d, [float(r["sphere_mean"]) for r in mine], linestyle="--", marker="x",
                  color=axis.lines[-1].get_color(), label=f"LayerNorm scaling, n = {n}")
    axis.set_xscale("log", base=2)
    axis.set_xlabel("dimension d")
    axis.set_ylabel("fraction of unselectable keys")
    axis.set_title("Gaussian keys: raw versus scaled to the sphere")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(results / "fig_unselectable.png", dpi=150)
    return 0


if __name__ == "__main__":
    sys.exit(main())
