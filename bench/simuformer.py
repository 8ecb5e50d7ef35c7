"""simuformer's default experiment, run by the peer and by nadyn side by side: results/simuformer.md.

    /usr/bin/python3 bench/simuformer.py --peer PATH/TO/simuformer --build build \
        --samples 512 --out results/simuformer.md --figure results/simuformer_heatmap.png

The experiment (docs/from-peers.md): 8 heads averaged, n = 64, d = 16, 20 betas in
[0.1, 15], post-ln layers of 0.1 up to t = 50 (500 layers), the density of pairs with cosine
above 0.999; `--samples` samples per beta (the peer's batch, nadyn's seeds; 512 is the
peer's default, reduce it only when the peer takes over 10 minutes). In one run of this
script, one after the other, each with 2 threads:

- the peer: a checkout of github.com/nikitus20/simuformer (`--peer`; none: nadyn alone),
  its `runner.py --norm postln --batch K`, its defaults otherwise (200 checkpoints), on the
  CPU with torch.set_num_threads(2), as it is: nothing of it is copied here;
- `nadyn sweep examples/simuformer.toml` with `--set 'sweep.seed.range=[1,K]'` (positions
  not kept), and the same sweep with frames at the ends only (`run.every = 500`): the
  dynamics alone, which the roofline (the attention's flops of the algorithm nadyn runs at
  the GEMM rate of its arithmetic, attention_flops()) bounds;
- both again in single precision (`--set 'run.precision="float"'`: the float small-n path,
  docs/performance.md), reported beside double with the float-over-double ratios.

Times are wall clock and CPU time (user + system of the child process, from
getrusage(RUSAGE_CHILDREN) before and after). The two heat maps (density over beta and
time) are compared at the peer's checkpoints that fall on a layer nadyn records: the peer
records checkpoint c after its first step whose time reaches c * 50 / 199, and nadyn writes
a frame every 2 layers, so half of them (100) are common times; no interpolation. The two
runs draw different weights and starts, so they agree only within sampling error: per cell,
the standard error of the difference is sqrt(s^2 / K + s_peer^2 / K), s the spread of
nadyn's per-seed densities and s_peer that of the peer's per-sample ones. The peer pools its
batch into one density per checkpoint; the wrapper that runs it keeps each sample's density
as well, from the Gram matrix the peer's check_stats computes (checked: their mean is the
peer's density). Reported: the largest |difference| / standard error and the fraction of
cells within 3 standard errors.
"""
import argparse
import math
import os
import pickle
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import blas  # noqa: E402  (bench/blas.py, beside this script: the peer's OpenBLAS)
import provenance  # noqa: E402  (bench/provenance.py: the binary is the tree's)
import timing  # noqa: E402  (bench/timing.py: best of alternating runs, spread, load)
from ensemble import gemm_rate, attention_flops as flops_per_evaluation  # noqa: E402  (bench/ensemble.py: the GEMM rates measured now, the rooflines' flops)
from ensemble import best_rates, exp_rate, softmax_exponentials, softmax_floor  # noqa: E402  (the floors)
EXPERIMENT = os.path.join(ROOT, "examples", "simuformer.toml")
N, D, HEADS, DT, T, BETAS, CHECKPOINTS = 64, 16, 8, 0.1, 50.0, 20, 200
LAYERS = int(round(T / DT))
THREADS = 2

# Runs the peer's runner.py in this interpreter with torch.set_num_threads(2). The peer
# imports tqdm only for the progress bar that --disable_tqdm turns off; where tqdm is not
# installed an empty module stands in for it. The peer pools its batch into one density per
# checkpoint; for the sampling error the wrapper also keeps each sample's density, taken
# from the Gram matrix the peer's own check_stats has just computed (one comparison of it
# per checkpoint, against the peer's 8 heads x 2 products per step).
PEER_WRAPPER = """
import json, runpy, sys, types
import numpy, torch
try:
    import tqdm  # noqa: F401
except ImportError:
    sys.modules["tqdm"] = types.ModuleType("tqdm")
torch.set_num_threads({threads})
peer = {peer!r}
sys.path.insert(0, peer)
import simuxform
original = simuxform.SimuXForm.check_stats
calls = []
def check_stats(self):
    result = original(self)
    n = self.IP.shape[-1]
    close = (self.IP > 0.999) & ~torch.eye(n, dtype=torch.bool, device=self.IP.device)
    calls.append((float(self.beta), (close.sum(dim=(1, 2)).double() / (n * (n - 1))).cpu().numpy()))
    return result
simuxform.SimuXForm.check_stats = check_stats
sys.argv = [runpy.__file__] + {args!r}
runpy.run_path(peer + "/runner.py", run_name="__main__")
numpy.savez({samples_path!r}, beta=numpy.array([c[0] for c in calls]),
            density=numpy.array([c[1] for c in calls]))
print(json.dumps({{"threads": torch.get_num_threads(), "torch": torch.__version__}}))
"""


def checkpoint_layers(times, dt=DT, maxtime=T):
    """The layer after which the peer records each checkpoint: its runner.py adds dt to a
    Python float at every step and records checkpoint c at the first step whose time reaches
    times[c]; the comparison is a float32 tensor's, so the time is rounded to float32 first
    (torch checks `0.1 >= tensor(0.1)` in float32: True). times: the peer's float32
    checkpoint times."""
    times = np.asarray(times, dtype=np.float32)
    layers, now, layer, c = [], 0.0, 0, 0
    while True:
        now += dt
        layer += 1
        while c < len(times) and np.float32(now) >= times[c]:
            layers.append(layer)
            c += 1
        if c >= len(times) or now >= maxtime:
            break
    # The peer fills checkpoints the loop did not reach with the last state.
    layers += [layer] * (len(times) - len(layers))
    return np.array(layers)


def run_timed(argv, env=None, cwd=None):
    """Runs argv to completion: (wall seconds, CPU seconds of the child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"simuformer.py: {' '.join(argv[:3])} ... failed ({result.returncode}):\n"
                 + result.stderr[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout


def measured(info):
    """A program's run for timing.alternate: (wall seconds, its info dict)."""
    return info["wall"], info


def fresh_peer_dir(outdir):
    """Removes an earlier run's pickle and per-sample densities from outdir: the peer names
    its pickle by the time it started, so repeated runs would leave one each, and
    read_peer() must read the last run's."""
    for name in os.listdir(outdir):
        if name.endswith(".pkl") or name == "per_sample.npz":
            os.remove(os.path.join(outdir, name))


def run_peer(peer, samples, outdir, env):
    fresh_peer_dir(outdir)
    args = ["--norm", "postln", "--batch", str(samples), "--disable_tqdm", "--no_plot",
            "--outdir", outdir]
    code = PEER_WRAPPER.format(threads=THREADS, peer=os.path.abspath(peer), args=args,
                               samples_path=os.path.join(outdir, "per_sample.npz"))
    wall, cpu, out = run_timed(["/usr/bin/python3", "-c", code], env=env, cwd=outdir)
    info = __import__("json").loads(out.strip().splitlines()[-1])
    own = re.search(r"Total time: ([0-9.]+) seconds", out)
    info.update(wall=wall, cpu=cpu, own=float(own.group(1)) if own else None,
                command="python3 runner.py " + " ".join(args[:-2]))
    return info


def read_peer(outdir):
    """The peer's pickle in outdir: density (betas x checkpoints), times, betas, as numpy;
    with the wrapper's per-sample densities, per_sample (betas x samples x checkpoints)."""
    import torch  # noqa: F401  (the pickle holds torch tensors)
    names = [f for f in os.listdir(outdir) if f.endswith(".pkl")]
    if len(names) != 1:
        sys.exit(f"simuformer.py: expected one .pkl in {outdir}, found {names}")
    with open(os.path.join(outdir, names[0]), "rb") as f:
        results = pickle.load(f)
    peer = {"density": results["density_tensor"].double().numpy(),
            "times": results["times_list"].numpy(),
            "betas": results["betas_list"].double().numpy()}
    samples = os.path.join(outdir, "per_sample.npz")
    if os.path.exists(samples):
        with np.load(samples) as calls:
            peer["per_sample"] = per_sample_checkpoints(
                calls["beta"], calls["density"], peer["betas"],
                checkpoint_layers(peer["times"]))
        # The pooled density is the mean of the samples' (each has n (n - 1) pairs).
        if not np.allclose(peer["per_sample"].mean(axis=1), peer["density"], atol=1e-6):
            sys.exit("simuformer.py: the peer's per-sample densities do not average to its "
                     "density")
    return peer


def per_sample_checkpoints(call_betas, call_density, betas, layers):
    """The peer's per-sample densities at its checkpoints (betas x samples x checkpoints)
    from its check_stats calls in order (the beta and the samples' densities of each): per
    beta, one call at each distinct checkpoint layer, which fills every checkpoint of that
    layer (runner.py's loop)."""
    distinct = np.unique(layers)
    out = np.empty((len(betas), call_density.shape[1], len(layers)))
    for b, beta in enumerate(betas):
        mine = call_density[np.isclose(call_betas, beta, rtol=1e-6)]
        if len(mine) != len(distinct):
            sys.exit(f"simuformer.py: {len(mine)} checkpoint calls at beta {beta}, expected "
                     f"{len(distinct)}")
        out[b] = mine[np.searchsorted(distinct, layers)].T
    return out


def nadyn_sweep(nadyn, samples, out, every=None, precision=None):
    argv = [nadyn, "sweep", EXPERIMENT, "--set", f"sweep.seed.range=[1,{samples}]",
            "--out", out, "--force"]
    if every is not None:
        argv += ["--set", f"run.every={every}"]
    if precision is not None:
        argv += ["--set", f'run.precision="{precision}"']
    wall, cpu, stdout = run_timed(argv, env=blas.peer_env("", THREADS))
    side = re.search(r"\((\d+) side by side\)", stdout)
    shown = ["nadyn sweep", os.path.relpath(EXPERIMENT, ROOT),
             f"--set 'sweep.seed.range=[1,{samples}]'"]
    return {"wall": wall, "cpu": cpu, "side_by_side": int(side.group(1)) if side else None,
            "command": " ".join(shown + ["--out", os.path.basename(out)])}


def read_nadyn(path):
    """nadyn's sweep file: pair_density per seed (betas x seeds x frames), the frames'
    layers, the betas. The file's axes are (beta, seed, time) as examples/simuformer.toml
    orders them; checked."""
    import h5py
    with h5py.File(path, "r") as f:
        density = f["pair_density"]
        dims = [f[ref].name for refs in density.attrs["DIMENSION_LIST"] for ref in refs]
        if dims != ["/beta", "/seed", "/time"]:
            sys.exit(f"simuformer.py: {path}: pair_density over {dims}, not (beta, seed, time)")
        times = f["time"][:]
        return {"per_seed": density[:], "layers": np.rint(times / DT).astype(int),
                "times": times, "betas": f["beta"][:]}


def agreement(peer_density, peer_layers, per_seed, nadyn_layers, peer_samples,
              peer_per_sample=None):
    """Compares the peer's density (betas x checkpoints) with nadyn's per-seed densities
    (betas x seeds x frames) at the checkpoints whose layer nadyn records. The difference's
    standard error is sqrt(s^2 / K_nadyn + s_peer^2 / K_peer), s nadyn's per-seed standard
    deviation per cell and s_peer the peer's per-sample one (peer_per_sample: betas x
    samples x checkpoints); without the peer's samples, s_peer is taken as s (the same
    distribution).
    Returns the common checkpoints, both means there, the difference and its standard
    error, and the statistics: the largest |difference| / standard error over the cells with
    a nonzero error, the fraction of all cells within 3 standard errors (a cell with zero
    error is within only when the difference is 0), and the count of zero-error cells."""
    frame_of_layer = {layer: i for i, layer in enumerate(nadyn_layers)}
    common = [c for c, layer in enumerate(peer_layers) if layer in frame_of_layer]
    frames = [frame_of_layer[peer_layers[c]] for c in common]
    values = per_seed[:, :, frames]
    seeds = values.shape[1]
    mean = values.mean(axis=1)
    spread = values.std(axis=1, ddof=1) if seeds > 1 else np.zeros_like(mean)
    if peer_per_sample is None:
        se = spread * math.sqrt(1.0 / seeds + 1.0 / peer_samples)
    else:
        peer_spread = peer_per_sample[:, :, common].std(axis=1, ddof=1)
        se = np.sqrt(spread ** 2 / seeds + peer_spread ** 2 / peer_per_sample.shape[1])
    peer = peer_density[:, common]
    diff = mean - peer
    positive = se > 0
    z = np.where(positive, np.abs(diff) / np.where(positive, se, 1.0), np.inf)
    z[~positive & (diff == 0)] = 0.0
    return {"common": np.array(common), "nadyn": mean, "peer": peer, "diff": diff, "se": se,
            "max_z": float(np.max(z[positive])) if positive.any() else float("nan"),
            "within3": float(np.mean(z <= 3.0)), "cells": int(z.size),
            "zero_se": int(np.sum(~positive)),
            "zero_se_differ": int(np.sum(~positive & (diff != 0))),
            "max_abs_diff": float(np.max(np.abs(diff)))}


def profile(nadyn, samples):
    """perf's self time per function of nadyn's sweep as measured (frames every 2 layers), on
    at most 8 samples per beta; None without perf."""
    from benchmark import perf_profile  # bench/benchmark.py, beside this script
    kept = min(samples, 8)
    return kept, perf_profile(lambda work: [
        nadyn, "sweep", EXPERIMENT, "--set", f"sweep.seed.range=[1,{kept}]",
        "--out", os.path.join(work, "profile.h5"), "--force"], rows_wanted=10)


def gap_note(peer_run, nadyn_run, dynamics_run, roofline):
    """What would close the gap to 10x, from the measured times, when it is not met."""
    needed = peer_run["wall"] / 10.0
    frames = nadyn_run["wall"] - dynamics_run["wall"]
    if nadyn_run["wall"] <= needed:
        return None
    text = (f"10x needs nadyn's sweep in {needed:.2f} s of wall clock; it took "
            f"{nadyn_run['wall']:.2f} s, of which the frames (every 2 layers, the pair density "
            f"alone) cost {frames:.2f} s and the dynamics {dynamics_run['wall']:.2f} s. ")
    if dynamics_run["wall"] > needed:
        text += (f"The dynamics alone exceed it: the layers would have to run "
                 f"{dynamics_run['wall'] / needed:.2f}x faster, against a roofline of "
                 f"{roofline:.2f} s (the algorithm's attention flops at the double GEMM rate)"
                 + (": the target is below what the flops allow on this machine at this "
                    "peer speed." if roofline > needed else
                    "; the profile below shows where the time goes."))
    else:
        text += (f"The dynamics fit: frames cheaper by "
                 f"{frames / max(needed - dynamics_run['wall'], 1e-9):.1f}x would close it.")
    return text


def attention_flops(samples):
    """The attention's flops of the sweep by the algorithm nadyn runs (docs/performance.md,
    "The rooflines"): the 8 heads share their values (V = I / 8: identity values averaged),
    so their weights are summed before one value product and the values are not projected;
    each head's logits 2 n^2 d against the tokens, with its queries projected by B^T (Q folded
    into K): H (2 n^2 d + 2 n d^2) + 2 n^2 d per run and layer, the same in float."""
    return BETAS * samples * LAYERS * flops_per_evaluation(N, D, HEADS, shared_values=True,
                                                           value_projection=False)


def exponentials(samples):
    """The softmax's exponentials of the sweep: H n^2 per run and layer."""
    return BETAS * samples * LAYERS * softmax_exponentials(N, HEADS)


def floor_note(dynamics, roofline, floor, exps, precision):
    """Why 1.3x of the roofline is out of reach when it is below the floor with the
    exponentials; None when it is not."""
    goal = 1.3 * roofline
    if floor <= goal:
        return None
    needed = exps / (goal - roofline)  # roofline + exps / needed = goal
    return (f"In {precision}, 1.3x the roofline is {goal:.2f} s, and the exponentials alone take "
            f"{exps:.2f} s at nadyn's exponential rate: the floor with them, {floor:.2f} s, is "
            f"{floor / roofline:.2f}x the roofline. Even with every flop at the GEMM rate and "
            f"nothing else to do, 1.3x needs an exponential {needed:.1f}x faster than nadyn's; "
            f"nadyn's dynamics take {dynamics:.2f} s, {dynamics / floor:.2f}x that floor.")


def draw(path, peer, nadyn, compared):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    betas = nadyn["betas"]
    panels = [("nadyn: mean of pair_density over seeds", nadyn["times"],
               nadyn["per_seed"].mean(axis=1), "viridis", (0, 1))]
    if peer is not None:
        panels.insert(0, ("simuformer (the peer): its density", peer["times"],
                          peer["density"], "viridis", (0, 1)))
        limit = max(float(np.max(np.abs(compared["diff"]))), 1e-3)
        panels.append(("nadyn - peer at the common checkpoints",
                       peer["times"][compared["common"]], compared["diff"], "RdBu_r",
                       (-limit, limit)))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2),
                             constrained_layout=True)
    axes = np.atleast_1d(axes)
    for ax, (title, times, values, cmap, (lo, hi)) in zip(axes, panels):
        mesh = ax.pcolormesh(times, betas, values, cmap=cmap, vmin=lo, vmax=hi,
                             shading="nearest")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("time t (layers x 0.1)")
        ax.set_ylabel("beta")
        fig.colorbar(mesh, ax=ax)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def verdict(ok, *infos):
    """"met" or "not met", and "(unreliable)" when a figure behind it is (bench/timing.py)."""
    shaky = any(info and "timing" in info and not info["timing"].reliable for info in infos)
    return ("met" if ok else "not met") + (" (unreliable)" if shaky else "")


def timing_ratio(slow, fast):
    """slow's wall over fast's, with the range the runs allow (bench/timing.py)."""
    if slow and fast and "timing" in slow and "timing" in fast:
        return timing.ratio_text(slow["timing"], fast["timing"]) + " wall clock"
    return f"{slow['wall'] / fast['wall']:.1f}x wall clock"


def runs(info):
    """The runs behind a figure: best, range, spread and load (bench/timing.py)."""
    return info["timing"].text() if info and "timing" in info else "1 run"


def report(args, command, peer_run, peer, nadyn_run, dynamics_run, compared, rates, load,
           version, float_run=None, float_dynamics_run=None, profiled=None, peer_blas=None,
           float_rates=None, exp_rates=None):
    samples = args.samples
    flops = attention_flops(samples)
    best = max(rates.values())
    roofline = flops / best
    float_best = max(float_rates.values()) if float_rates else None
    float_roofline = flops / float_best if float_best else None
    exp_rates = exp_rates or {}
    exps = exponentials(samples)
    # The floors: each roofline plus the exponentials at nadyn's exponential rate alone.
    floor = softmax_floor(flops, exps, best, exp_rates["double"]) if exp_rates.get("double") else None
    float_floor = (softmax_floor(flops, exps, float_best, exp_rates["float"])
                   if float_best and exp_rates.get("float") else None)

    def floor_row(precision, value):
        return (f"| floor in {precision}: the roofline plus the softmax's {exps / 1e9:.2f}e9 "
                f"exponentials (H n^2 per run and layer) at nadyn's exponential rate alone, "
                f"{exp_rates[precision] / 1e9:.2f}e9/s (nadyn-bench exp --precision {precision}, "
                f"2 threads) | {value:.2f} | | | {value / nadyn_run['wall']:.2f}x |")
    lines = [
        "# simuformer's experiment, by the peer and by nadyn",
        "",
        f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} ({version}); other processes "
        f"kept {load:.2f} cores busy at the start. Do not edit by hand.",
        "",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores. Each program gets {THREADS} threads "
        f"(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS = {THREADS}; the peer also "
        f"torch.set_num_threads({THREADS})) and runs alone, one after the other."
        + (f" The peer and NumPy run with {peer_blas}, as mapped by their interpreter "
           "(bench/blas.py)." if peer_blas else ""),
        "",
        f"Experiment: simuformer's default (docs/from-peers.md) with `--norm postln`: "
        f"{HEADS} heads, n = {N}, d = {D}, {BETAS} betas in [0.1, 15], {LAYERS} layers of "
        f"{DT:g}, {samples} samples per beta"
        + ("" if samples == 512 else " (the peer's default is 512)") + ".",
        "",
        f"Each program ran {args.repeats} time{'s' if args.repeats != 1 else ''}, alternating "
        f"with the others; each figure is "
        f"its best run (wall clock; CPU time of that run), with the range and spread of its "
        f"runs and the load: {timing.LOAD_MEANING}. A figure is marked UNRELIABLE when "
        f"a load was above {timing.RELIABLE_LOAD} or the spread above "
        f"{100 * timing.RELIABLE_SPREAD:.0f}% (or it had fewer than {timing.MIN_REPEATS} runs): "
        f"then something else used the machine, and the ratios built on it are marked too.",
        "",
        "| what | wall s | CPU s | runs | wall vs nadyn sweep |",
        "|---|---|---|---|---|",
    ]
    note = None
    if peer_run:
        lines.append(f"| the peer: `{peer_run['command']}` (torch {peer_run['torch']}, "
                     f"float32, CPU, {peer_run['threads']} threads) | {peer_run['wall']:.2f} | "
                     f"{peer_run['cpu']:.2f} | {runs(peer_run)} | "
                     f"{peer_run['wall'] / nadyn_run['wall']:.1f}x |")
        if peer_run["wall"] > 600:
            note = ("The peer took over 10 minutes: issue 25 allows fewer samples per beta "
                    "(`--samples`), and nothing else reduced.")
    else:
        lines.append("| the peer | not run: no `--peer` checkout given | | | |")
    lines += [
        f"| nadyn: `{nadyn_run['command']}` ({nadyn_run['side_by_side']} runs side by side, "
        f"251 frames, positions not kept) | {nadyn_run['wall']:.2f} | {nadyn_run['cpu']:.2f} "
        f"| {runs(nadyn_run)} | 1.0x |",
        f"| nadyn, the dynamics alone: the same with `--set run.every=500` (frames at the "
        f"ends only) | {dynamics_run['wall']:.2f} | {dynamics_run['cpu']:.2f} | "
        f"{runs(dynamics_run)} | {dynamics_run['wall'] / nadyn_run['wall']:.2f}x |",
        f"| roofline in double: {flops / 1e12:.3f} TFLOP of attention (the algorithm's: "
        f"H (2 n^2 d + 2 n d^2) + 2 n^2 d per run and layer, docs/performance.md) at the double "
        f"GEMM rate, {best / 1e9:.1f} GFLOP/s | {roofline:.2f} | | | "
        f"{roofline / nadyn_run['wall']:.2f}x |",
    ]
    if floor:
        lines.append(floor_row("double", floor))
    if float_run:
        lines += [
            f"| nadyn in float: the same sweep with `--set 'run.precision=\"float\"'` | "
            f"{float_run['wall']:.2f} | {float_run['cpu']:.2f} | {runs(float_run)} | "
            f"{float_run['wall'] / nadyn_run['wall']:.2f}x |",
            f"| nadyn in float, the dynamics alone (`run.every=500`) | "
            f"{float_dynamics_run['wall']:.2f} | {float_dynamics_run['cpu']:.2f} | "
            f"{runs(float_dynamics_run)} | {float_dynamics_run['wall'] / nadyn_run['wall']:.2f}x |",
        ]
    if float_roofline:
        lines.append(f"| roofline in float: the same flops at the float GEMM rate, "
                     f"{float_best / 1e9:.1f} GFLOP/s | {float_roofline:.2f} | | | "
                     f"{float_roofline / nadyn_run['wall']:.2f}x |")
    if float_floor:
        lines.append(floor_row("float", float_floor))
    if note:
        lines += ["", note]
    lines += [
        "",
        "| GEMM rate (1024 x 1024, 2 threads; the best of 5 measurements 1 s apart) | GFLOP/s |",
        "|---|---|",
    ]
    lines += [f"| {name} | {rate / 1e9:.1f} |" for name, rate in rates.items()]
    lines += [f"| {name} | {rate / 1e9:.1f} |" for name, rate in (float_rates or {}).items()]
    lines += ["", "Targets of the peer's experiment (issue 25):", "", "| target | measured | |",
              "|---|---|---|"]
    if peer_run:
        wall_ratio = peer_run["wall"] / nadyn_run["wall"]
        cpu_ratio = peer_run["cpu"] / nadyn_run["cpu"]
        lines.append(f"| nadyn at least 10x faster than the peer | {wall_ratio:.1f}x wall clock, "
                     f"{cpu_ratio:.1f}x CPU time | "
                     f"{verdict(min(wall_ratio, cpu_ratio) >= 10, peer_run, nadyn_run)} |")
        lines.append(f"| nadyn in double at least 6x the peer (issue 38; the peer runs float32) | "
                     f"{timing_ratio(peer_run, nadyn_run)} | "
                     f"{verdict(wall_ratio >= 6, peer_run, nadyn_run)} |")
        if float_run:
            float_ratio = peer_run["wall"] / float_run["wall"]
            lines.append(f"| nadyn in float at least 10x the peer (issue 38: like for like) | "
                         f"{timing_ratio(peer_run, float_run)} | "
                         f"{verdict(float_ratio >= 10, peer_run, float_run)} |")
    dyn = dynamics_run["wall"] / roofline
    lines.append(f"| nadyn's dynamics in double within 1.3x of their roofline (issue 38: the "
                 f"algorithm's flops at the double GEMM rate) | {dyn:.2f}x (the whole "
                 f"sweep with its frames: {nadyn_run['wall'] / roofline:.2f}x)"
                 + (f"; {dynamics_run['wall'] / floor:.2f}x the floor with the exponentials, "
                    f"itself {floor / roofline:.2f}x the roofline" if floor else "") + " | "
                 f"{verdict(dyn <= 1.3, dynamics_run)} |")
    if float_run and float_roofline:
        float_dyn = float_dynamics_run["wall"] / float_roofline
        lines.append(f"| nadyn's dynamics in float within 1.3x of their roofline (the same flops "
                     f"at the float GEMM rate) | {float_dyn:.2f}x (the whole sweep with its "
                     f"frames: {float_run['wall'] / float_roofline:.2f}x)"
                     + (f"; {float_dynamics_run['wall'] / float_floor:.2f}x the floor with the "
                        f"exponentials, itself {float_floor / float_roofline:.2f}x the roofline"
                        if float_floor else "") + " | "
                     f"{verdict(float_dyn <= 1.3, float_dynamics_run)} |")
    if float_run:
        wall_gain = dynamics_run["wall"] / float_dynamics_run["wall"]
        cpu_gain = dynamics_run["cpu"] / float_dynamics_run["cpu"]
        lines.append(f"| float at least 1.6x double (the dynamics alone) | {wall_gain:.2f}x wall "
                     f"clock, {cpu_gain:.2f}x CPU time (with the frames: "
                     f"{nadyn_run['wall'] / float_run['wall']:.2f}x wall clock, "
                     f"{nadyn_run['cpu'] / float_run['cpu']:.2f}x CPU time) | "
                     f"{verdict(min(wall_gain, cpu_gain) >= 1.6, dynamics_run, float_dynamics_run)} |")
    if compared:
        lines.append(f"| heat maps agree within sampling error (at least 99% of cells within 3 "
                     f"standard errors; 99.7% expected) | largest \\|difference\\| / "
                     f"standard error {compared['max_z']:.2f}; "
                     f"{100 * compared['within3']:.1f}% of cells within 3 standard errors | "
                     f"{verdict(compared['within3'] >= 0.99)} |")
    lines.append("")
    notes = [note for note in (
        floor_note(dynamics_run["wall"], roofline, floor, exps / exp_rates["double"], "double")
        if floor else None,
        floor_note(float_dynamics_run["wall"], float_roofline, float_floor,
                   exps / exp_rates["float"], "float") if float_floor and float_run else None)
        if note]
    if notes:
        lines += ["## The exponentials the rooflines leave out", "",
                  "The rooflines count the flops of the algorithm, not the softmax's "
                  "exponentials: H n^2 = " + f"{softmax_exponentials(N, HEADS)} per run and "
                  "layer, which an exact softmax cannot skip, against " +
                  f"{flops / (BETAS * samples * LAYERS):.0f} flops. The floor adds them at the "
                  "rate nadyn's exponential reaches when nothing else runs (rows of n values "
                  "in L1, nadyn-bench exp).", ""]
        for text in notes:
            lines += [text, ""]
    if peer_run:
        gap = gap_note(peer_run, nadyn_run, dynamics_run, roofline)
        if gap:
            lines += ["## What would close the gap to 10x", "", gap, ""]
    if profiled:
        kept, rows = profiled
        lines += ["## Where nadyn's time goes", "",
                  f"`perf record` of the same sweep on {kept} samples per beta (frames every 2 "
                  f"layers): self time per function, the first ten.", "",
                  "| share | function |", "|---|---|"]
        lines += [f"| {share:.1f}% | `{symbol}` |" for share, symbol in rows]
        lines.append("")
    if compared:
        lines += [
            "## Agreement of the heat maps",
            "",
            f"Compared at the {len(compared['common'])} of the peer's {CHECKPOINTS} "
            f"checkpoints that fall on a layer nadyn records (a frame every 2 layers; the peer "
            f"records checkpoint c after its first step reaching c * 50 / 199): the same "
            f"times, no interpolation; {compared['cells']} cells (beta x time). The runs draw "
            f"different weights and starts. Per cell, the standard error of the difference "
            + (f"is sqrt(s^2 / K + s_peer^2 / K), K = {samples}, s and s_peer the standard "
               f"deviations of nadyn's per-seed densities and of the peer's per-sample ones "
               f"(the peer pools its batch; the benchmark's wrapper keeps each sample's "
               f"density from the peer's own Gram matrix at its checkpoints)."
               if compared.get("peer_samples_kept") else
               f"is s sqrt(1/K + 1/K), K = {samples}, s the standard deviation of nadyn's "
               f"per-seed densities (the peer pools its batch, so its per-sample spread is "
               f"taken as nadyn's: the same distribution).")
            + " A cell whose standard error is 0 (every sample of both at the same "
            "density, 0 or 1) is within only when the two are equal.",
            "",
            "| statistic | value |",
            "|---|---|",
            f"| largest \\|nadyn - peer\\| | {compared['max_abs_diff']:.4f} |",
            f"| largest \\|nadyn - peer\\| / standard error (cells with a nonzero error) | "
            f"{compared['max_z']:.2f} |",
            f"| cells within 3 standard errors | {100 * compared['within3']:.1f}% |",
            f"| cells with standard error 0 | "
            f"{compared['zero_se']}, of which the peer differs in {compared['zero_se_differ']} |",
            "",
        ]
    figure = os.path.relpath(os.path.abspath(args.figure),
                             os.path.dirname(os.path.abspath(args.out)))
    lines += [f"![the two heat maps and their difference]({figure})", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", default="", help="a checkout of simuformer (none: nadyn alone)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--samples", type=int, default=512, help="samples per beta")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "simuformer.md"))
    parser.add_argument("--figure", default=os.path.join(ROOT, "results", "simuformer_heatmap.png"))
    parser.add_argument("--openblas", default=None,
                        help="directory of OpenBLAS's libblas.so.3 for the peer (default: the "
                        "one scripts/benchmark.sh fetches into BUILD/bench-openblas)")
    parser.add_argument("--repeats", type=int, default=timing.MIN_REPEATS,
                        help="runs of each program, alternating; each is reported by its best "
                        f"(default and minimum for a trusted figure: {timing.MIN_REPEATS})")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.samples < 2:
        parser.error("--samples must be at least 2 (the standard error needs two seeds)")
    nadyn = os.path.join(args.build, "bin", "nadyn")
    if not os.access(nadyn, os.X_OK):
        parser.error(f"no nadyn in {args.build}/bin: build it or give --build")
    if args.peer and not os.path.exists(os.path.join(args.peer, "runner.py")):
        parser.error(f"--peer {args.peer}: no runner.py there (a checkout of simuformer)")
    if not args.peer:
        print("simuformer.py: no --peer checkout given: only nadyn runs", file=sys.stderr)
    command = "/usr/bin/python3 bench/simuformer.py" + (" --peer PATH" if args.peer else "") \
        + f" --samples {args.samples}" + (f" --repeats {args.repeats}"
                                          if args.repeats != timing.MIN_REPEATS else "")
    version = provenance.checked_version(nadyn, ROOT)
    load = timing.load_before(1.0)
    peer_env = blas.peer_env(blas.default_openblas(args.build) if args.openblas is None
                             else args.openblas, THREADS)
    peer_blas = blas.describe_peer(peer_env, ROOT)
    peer_run = peer = compared = None
    with tempfile.TemporaryDirectory(prefix="nadyn-simuformer-") as work:
        # Every program runs args.repeats times, alternating (bench/timing.py); each is
        # reported by its best run, with the spread and the load before it. The files of
        # the last run of each are read (the same seeds every time: the same contents).
        programs = {}
        if args.peer:
            peer_dir = os.path.join(work, "peer")
            os.mkdir(peer_dir)
            programs["peer"] = lambda: measured(run_peer(args.peer, args.samples, peer_dir,
                                                         peer_env))
        out = os.path.join(work, "simuformer.h5")
        programs["nadyn"] = lambda: measured(nadyn_sweep(nadyn, args.samples, out))
        programs["dynamics"] = lambda: measured(nadyn_sweep(
            nadyn, args.samples, os.path.join(work, "ends.h5"), every=LAYERS))
        programs["float"] = lambda: measured(nadyn_sweep(
            nadyn, args.samples, os.path.join(work, "float.h5"), precision="float"))
        programs["float dynamics"] = lambda: measured(nadyn_sweep(
            nadyn, args.samples, os.path.join(work, "float_ends.h5"), every=LAYERS,
            precision="float"))
        timings = timing.alternate(programs, args.repeats)
        if args.peer:
            peer_run = timings["peer"].result
            peer = read_peer(peer_dir)
        nadyn_run = timings["nadyn"].result
        result = read_nadyn(out)
        dynamics_run = timings["dynamics"].result
        float_run = timings["float"].result
        float_dynamics_run = timings["float dynamics"].result
        for name, info in (("peer", peer_run), ("nadyn", nadyn_run), ("dynamics", dynamics_run),
                           ("float", float_run), ("float dynamics", float_dynamics_run)):
            if info is not None:
                info["timing"] = timings[name]
    # Each rate the best of 5 measurements a second apart (ensemble.best_rates()).
    rates = best_rates(lambda: gemm_rate(args.build, peer_env))
    float_rates = best_rates(lambda: gemm_rate(args.build, peer_env, "float"))
    exp_rates = {precision: best_rates(lambda precision=precision: exp_rate(args.build, precision))
                 for precision in ("double", "float")}
    profiled = profile(nadyn, args.samples)
    if profiled[1] is None:
        profiled = None
    if peer is not None:
        if not np.allclose(peer["betas"], result["betas"], rtol=1e-6):
            sys.exit(f"simuformer.py: the betas differ: {peer['betas']} vs {result['betas']}")
        compared = agreement(peer["density"], checkpoint_layers(peer["times"]),
                             result["per_seed"], result["layers"], args.samples,
                             peer.get("per_sample"))
        compared["peer_samples_kept"] = "per_sample" in peer
    draw(args.figure, peer, result, compared)
    text = report(args, command, peer_run, peer, nadyn_run, dynamics_run, compared, rates,
                  load, version, float_run, float_dynamics_run, profiled, peer_blas,
                  float_rates, exp_rates)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
