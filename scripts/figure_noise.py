#!/usr/bin/python3
"""Figure of `nadyn table noise`: argmax flips against the norm-noise level sigma.

Usage: /usr/bin/python3 scripts/figure_noise.py RESULTS_DIR
Reads RESULTS_DIR/noise.csv, writes RESULTS_DIR/fig_noise.png: argmax_flips against sigma
(log axis; sigma = 0, where the flips are exactly 0, is left out) for each norm and beta,
with the mean attention_entropy of each curve in its legend.
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
    with open(results / "noise.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    figure, axis = plt.subplots(figsize=(6.0, 4.0))
    curves = sorted({(r["norm"], float(r["beta"])) for r in rows})
    for norm, beta in curves:
        mine = sorted((r for r in rows if r["norm"] == norm and float(r["beta"]) == beta
                       and float(r["sigma"]) > 0), key=lambda r: float(r["sigma"]))
        if not mine:
            continue
        sigma = [float(r["sigma"]) for r in mine]
        entropy = sum(float(r["entropy_mean"]) for r in mine) / len(mine)
        axis.errorbar(sigma, [float(r["flips_mean"]) for r in mine],
                      yerr=[float(r["flips_spread"]) for r in mine], capsize=3,
                      marker="o" if norm == "pre-ln" else "s",
                      linestyle="-" if norm == "pre-ln" else "--",
                      label=f"{norm}, beta = {beta:g} (entropy {entropy:.2f})")
    axis.set_xscale("log")
    axis.set_xlabel("norm noise sigma")
    axis.set_ylabel("argmax_flips (fraction of tokens)")
    axis.set_title("Top key moved by noise on the norms of q, k, v")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(results / "fig_noise.png", dpi=150)
    return 0


if __name__ == "__main__":
    sys.exit(main())
