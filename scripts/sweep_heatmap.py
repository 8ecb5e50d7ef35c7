"""The picture researchers look at for a beta sweep: how far tokens are from one cluster,
over time x beta, one panel per scheme (mean over seeds), and beside it the time to reach
mean_cos >= THRESHOLD against beta (median and the seeds' range).

    /usr/bin/python3 scripts/sweep_heatmap.py beta_sweep.h5 --out docs/beta_sweep_heatmap.png

Reads any sweep file that has `time` and `beta` dimensions (nadyn sweep
examples/beta_sweep.toml makes one); other dimensions but scheme are reduced over.
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import nadyn  # noqa: E402
import nadyn.plot  # noqa: E402


def time_to_reach(mean_cos, times, threshold):
    """First frame time at which mean_cos >= threshold (NaN if never), over the last axis."""
    reached = mean_cos >= threshold
    first = np.argmax(reached, axis=-1)
    out = np.where(reached.any(axis=-1), times[first], np.nan)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep")
    parser.add_argument("--out", required=True)
    parser.add_argument("--threshold", type=float, default=0.99)
    args = parser.parse_args()
    ds = nadyn.open(args.sweep)
    for dim in ("time", "beta"):
        if dim not in ds.mean_cos.dims:
            sys.exit(f"{args.sweep}: mean_cos has dims {ds.mean_cos.dims}; need time and beta")
    distance = np.log10(np.clip(1.0 - ds.mean_cos, 1e-16, None))
    distance.name = "log10(1 - mean_cos)"
    figure = nadyn.plot.heatmap(distance, x="time", y="beta", col="scheme", reduce="mean",
                                cmap="magma")
    figure.suptitle(f"{os.path.basename(args.sweep)}: distance to one cluster, mean over seeds")
    figure.savefig(args.out, dpi=120, bbox_inches="tight")

    # The clustering time against beta, one line per scheme.
    stem, ext = os.path.splitext(args.out)
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    schemes = list(ds.scheme.values) if "scheme" in ds.mean_cos.dims else [None]
    for scheme in schemes:
        m = ds.mean_cos.sel(scheme=scheme) if scheme is not None else ds.mean_cos
        others = [d for d in m.dims if d not in ("beta", "time")]
        values = m.transpose("beta", *others, "time").values
        reach = time_to_reach(values, ds.time.values, args.threshold)
        flat = reach.reshape(reach.shape[0], -1)
        median = np.nanmedian(flat, axis=1)
        line, = ax.plot(ds.beta.values, median, marker="o", ms=3, label=str(scheme or "runs"))
        ax.fill_between(ds.beta.values, np.nanmin(flat, axis=1), np.nanmax(flat, axis=1),
                        color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("beta")
    ax.set_ylabel(f"time to mean_cos >= {args.threshold:g}")
    ax.legend(frameon=False)
    ax.set_title("median over seeds, band: min to max (runs that never reach it left out)",
                 fontsize=8)
    fig.savefig(stem + "_time" + ext, dpi=120, bbox_inches="tight")
    print(f"wrote {args.out} and {stem}_time{ext}")


if __name__ == "__main__":
    main()
