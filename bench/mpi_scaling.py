#!/usr/bin/python3
"""Sweep throughput over MPI ranks on this machine, and results/scaling.md from it.

    /usr/bin/python3 bench/mpi_scaling.py [--nadyn build/bin/nadyn] [--runs 100] [--repeats 3] [--out results/scaling.md]

Runs one sweep (n = 48, d = 8, RK4, T = 3, dt = 0.01; --runs seeds) as one process and
over P = 1, 2, 3 MPI ranks (mpirun --oversubscribe: every rank computes, rank 0 also writes
the file), each rank on one core (--jobs 1, OMP_NUM_THREADS=1) so that P is the only
variable, and as one process on every core (the default --jobs) for reference. Every
configuration runs --repeats times, alternating (bench/timing.py), and is reported by its
best run with the spread and the load. It reports runs/s, the runs each rank ran and rank
0's time split (writing the file, receiving records, idle). The compute time is the sum of
the file's per-run wall_time. From the measured per-run compute time and rank 0's
per-record cost it projects the time of a sweep of 10^4 such runs on 16, 64 and 256 nodes
(assumptions in the generated file).

Then one run shared among ranks by its tokens (`mpirun -np P nadyn simulate`, n = 2048,
d = 64, RK4, one thread per rank) for P = 1, 2, 3, with the general kernel (Gaussian Q, K, V)
and the symmetric one (Q = K = I): rank 0's time split into computing its rows of A, waiting
for the others and exchanging rows, and the projection of the per-step time to clusters.
"""
import argparse
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import timing  # noqa: E402  (bench/timing.py: best of alternating runs, spread, load)

EXPERIMENT = """[run]
n = 48
d = 8
T = 3
dt = 0.01
integrator = "rk4"

[sweep]
seed = {{ range = [1, {runs}] }}
"""


def run_sweep(nadyn, ranks, directory, out, jobs):
    """One sweep: `ranks` MPI ranks (0: one process without mpirun), `jobs` runs side by side
    per process (0: nadyn's default, every core, with OpenMP's default threads)."""
    env = dict(os.environ, OMP_NUM_THREADS="1" if jobs == 1 else os.environ.get("OMP_NUM_THREADS", ""))
    env = {k: v for k, v in env.items() if v != ""}
    command = [nadyn, "sweep", "exp.toml", "--out", out, "--quiet", "--force", "--jobs", str(jobs)]
    if ranks:
        command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + command
    started = time.monotonic()
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"mpi_scaling: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    m = re.search(r"(\d+) runs complete.*?, ([0-9.]+) s\n", done.stdout)
    split = re.search(r"rank 0: ([0-9.]+) s writing, ([0-9.]+) s receiving, ([0-9.]+) s idle",
                      done.stdout)
    per_rank = re.search(r"runs per rank ([0-9, ]+);", done.stdout)
    jobs_done = re.search(r"\((\d+) side by side\)|; (\d+) side by side each\)", done.stdout)
    with h5py.File(os.path.join(directory, out), "r") as f:
        compute = float(np.nansum(f["wall_time"][...]))
    result = {
        "ranks": ranks,
        "jobs": int(next(g for g in jobs_done.groups() if g)),
        "per_rank": per_rank.group(1) if per_rank else "",
        "runs": int(m.group(1)),
        "sweep_seconds": float(m.group(2)),
        "process_seconds": elapsed,
        "compute_seconds": compute,
    }
    if split:
        result.update(writing=float(split.group(1)), receiving=float(split.group(2)),
                      idle=float(split.group(3)))
    return result["sweep_seconds"], result


SHARED_N, SHARED_D, SHARED_STEPS, SHARED_DT = 2048, 64, 20, 0.05


def run_shared(nadyn, ranks, directory, weights):
    """One run of n = 2048, d = 64, RK4 (20 steps, frames at the start and the end only),
    alone (ranks = 0) or shared among `ranks` MPI ranks; one thread per process."""
    out = f"shared-{weights}-{ranks}.h5"
    command = [nadyn, "simulate", "--n", str(SHARED_N), "--d", str(SHARED_D), "--weights",
               weights, "--T", str(SHARED_STEPS * SHARED_DT), "--dt", str(SHARED_DT),
               "--every", str(SHARED_STEPS), "--positions", "none", "--threads", "1",
               "--out", out, "--force", "--quiet"]
    if ranks:
        command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                   "-np", str(ranks)] + command
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"mpi_scaling: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    wall = float(re.search(r", ([0-9.]+) s \(\d+ RHS evaluations\)", done.stdout).group(1))
    evaluations = int(re.search(r"\((\d+) RHS evaluations\)", done.stdout).group(1))
    result = {"weights": weights, "ranks": ranks, "wall": wall, "evaluations": evaluations}
    split = re.search(r"\): ([0-9.]+) s computing its rows of A, ([0-9.]+) s waiting for the "
                      r"others, ([0-9.]+) s exchanging rows", done.stdout)
    if split:
        result.update(compute=float(split.group(1)), waiting=float(split.group(2)),
                      exchange=float(split.group(3)))
    return wall, result


def shared_report(shared):
    lines = ["## Measured: one run shared among ranks by its tokens", "",
             f"One run of n = {SHARED_N}, d = {SHARED_D}, beta = 4, peri-ln, RK4 "
             f"({SHARED_STEPS} steps of {SHARED_DT}; frames at the start and the end), one "
             "thread per process (`--threads 1`), alone and under `mpirun --oversubscribe "
             "-np P` (P = 3 puts three ranks on two cores). The times are rank 0's, from the "
             "line `nadyn simulate` prints for a shared run: its rows of A (the kernel), "
             "waiting for the slowest rank (a barrier before each exchange), and the exchange "
             "itself (`MPI_Allgatherv` of the n x d rows of A, and an `MPI_Allreduce` that "
             "agrees on stop requests). The trajectory is bitwise that of one process "
             "(tests/mpi/simulate_ranks.cpp).", "",
             "| kernel path | processes | wall, best (s) | speed-up | rank 0: its rows (s) | waiting (s) | exchange (s) | exchange per evaluation (ms) | timing |",
             "|---|---|---|---|---|---|---|---|---|"]
    for weights, path in (("gaussian", "general (Gaussian Q, K, V)"),
                          ("identity", "symmetric (Q = K = I)")):
        alone = next(r for r in shared if r["weights"] == weights and r["ranks"] == 0)
        for r in (x for x in shared if x["weights"] == weights):
            name = "one (no mpirun)" if not r["ranks"] else f"P = {r['ranks']}"
            cells = [path, name, f"{r['wall']:.2f}", f"{alone['wall'] / r['wall']:.2f}x"]
            if "compute" in r:
                cells += [f"{r['compute']:.2f}", f"{r['waiting']:.2f}", f"{r['exchange']:.3f}",
                          f"{1e3 * r['exchange'] / r['evaluations']:.2f}"]
            else:
                cells += ["", "", "", ""]
            cells.append(r["timing"].text())
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["",
              "Each rank computes the rows of its own tokens against all keys; the general "
              "path's work divides by P. The symmetric path computes each tile of "
              "exp(-beta/2 |q_k - q_j|^2) once for two blocks of rows; a rank that owns rows "
              "of I must compute the whole tile row and column (I, J) and (J, I), so with P "
              "ranks each does about 2/P of the one-process work (P = 2: 3/4 each, 1.33x at "
              "best), the price of rows bitwise equal to the one-process kernel's. On a "
              "2-core machine P = 3 oversubscribes: its figures show the exchange's cost, not "
              "a speed-up.", ""]
    return lines


def write_report(path, results, runs, cores, shared):
    serial = results[0]  # one process, one core
    t_run = serial["compute_seconds"] / serial["runs"]  # one run on one core
    over_ranks = [r for r in results if r["ranks"] and r["ranks"] > 1]
    per_record = max((r["writing"] + r["receiving"]) / r["runs"] for r in over_ranks)
    writing = max(r["writing"] / r["runs"] for r in over_ranks)
    startup = max(r["process_seconds"] - r["sweep_seconds"] for r in results if r["ranks"])
    lines = []
    add = lines.append
    add("# Scaling over MPI ranks: measured and planned")
    add("")
    add("Generated by `/usr/bin/python3 bench/mpi_scaling.py` (MPI-aware build, `build/bin/nadyn`);")
    add(f"machine: {platform.machine()}, {cores} cores, Open MPI "
        f"{subprocess.run(['mpirun', '--version'], capture_output=True, text=True).stdout.split()[3]}; "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}.")
    add(f"Load average while measuring: {LOAD[0]:.1f} before, {LOAD[1]:.1f} after (the machine is "
        "shared: with a load above its core count, absolute rates are low and ratios noisy; "
        "rerun on a quiet machine).")
    add("")
    add("## Measured: a sweep over ranks on this machine")
    add("")
    add(f"The sweep: {runs} runs of n = 48, d = 8, RK4, T = 3, dt = 0.01 (300 steps, final "
        "positions kept). Every process on one core (`--jobs 1`, `OMP_NUM_THREADS=1`), so that "
        "P is the only variable; `mpirun --oversubscribe -np P`: every rank computes runs, "
        "rank 0 also hands them out and writes the file. The last row is one process with "
        "nadyn's default (`--jobs` chosen: every core). Each row is the best of "
        f"{results[0]['timing'].walls.__len__()} runs of the sweep, the configurations "
        "alternating (bench/timing.py; the last column gives the spread and the load, and "
        "says UNRELIABLE when either is too high to trust the figure). *wall* is the sweep's "
        "own time (after start-up); *compute* the sum of the runs' wall_time; *runs per "
        "rank* rank 0 first; rank 0's time is split into writing the file (one hyperslab per "
        "dataset and an H5Fflush per run, as in one process), receiving records, and idle "
        "(waiting for a run of its own or a message; it computes the rest of the time).")
    add("")
    add("| processes | runs | wall, best (s) | runs/s | speed-up | runs per rank | compute (s) | rank 0 writing (s) | receiving (s) | idle (s) | mpirun start-up + exit (s) | timing |")
    add("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if not r["ranks"]:
            name = f"one process, --jobs {r['jobs']} (no mpirun)"
        else:
            name = f"P = {r['ranks']}" + (" (one-process path)" if r["ranks"] == 1 else "")
        cells = [name, str(r["runs"]), f"{r['sweep_seconds']:.2f}",
                 f"{r['runs'] / r['sweep_seconds']:.1f}",
                 f"{serial['sweep_seconds'] / r['sweep_seconds']:.2f}x", r["per_rank"],
                 f"{r['compute_seconds']:.2f}"]
        cells += [f"{r[k]:.3f}" if k in r else "" for k in ("writing", "receiving", "idle")]
        cells += [f"{r['process_seconds'] - r['sweep_seconds']:.2f}", r["timing"].text()]
        add("| " + " | ".join(cells) + " |")
    add("")
    two = next((r for r in results if r["ranks"] == 2), None)
    add(f"Per run: compute t_run = {t_run * 1e3:.1f} ms on one core; rank 0 spends "
        f"t_rec = {per_record * 1e3:.2f} ms per record ({writing * 1e3:.2f} ms of it writing and "
        "flushing the file), receiving is negligible (records of a few kB over shared memory). "
        "P = 1 is the one-process sweep. With 2 cores, P = 2 puts a rank on each core and both "
        "compute"
        + (f" (runs per rank {two['per_rank']}: {two['sweep_seconds']:.2f} s against "
           f"{serial['sweep_seconds']:.2f} s on one core, "
           f"{serial['sweep_seconds'] / two['sweep_seconds']:.2f}x)" if two else "")
        + "; until issue 39 item 9 rank 0 only coordinated, so P = 2 had one computing rank "
        "and ran no faster than one process on one core. P = 3 puts three computing ranks on "
        "two cores: no faster than P = 2, its figure shows what oversubscribing costs. One "
        "process with every core (`--jobs 2`, runs side by side on threads) is the same "
        "machine's other way to use both cores; the ranks' point is more than one node.")
    if two and serial["sweep_seconds"] / two["sweep_seconds"] > 1.1 * min(2, cores):
        add("")
        add(f"**Caveat**: a speed-up above {min(2, cores)}x with {min(2, cores)} cores cannot come "
            "from the ranks; the one-process rows ran slower per run (compute column) than the "
            "ranks' runs, i.e. they got less of the cores from the machine's other load (the "
            "kernel's scheduler shares the cores among sessions and process groups, not "
            "processes). Rerun on a quiet machine for the ratio; only the runs per rank are "
            "sure here.")
    add("")
    add("## Planned: 10^4 runs on 16, 64 and 256 nodes")
    add("")
    add("Assumptions: one rank per node, 32 cores per node running 32 runs side by side "
        "(`--jobs 32`), the same per-core rate as here (runs this small do not use the memory "
        "bandwidth); rank 0 computes too, but the writer's bound below is its own; the run of "
        "the measurement (t_run above); a "
        "record of a few kB costs ~ latency + size/bandwidth ~ 10 us on InfiniBand "
        "(Hockney model, 1.5 us, 10 GB/s), so rank 0's cost per record is its file write "
        "t_rec as measured here on a local disk (a parallel file system's flush can be slower: "
        "the bound below scales with it). The sweep then takes "
        "T = max(10^4 t_run / (32 N), 10^4 t_rec) + start-up, the first term the workers', the "
        "second the writer's bound.")
    add("")
    add("| nodes N | compute bound (s) | writer bound (s) | projected time (s) | runs/s | efficiency |")
    add("|---|---|---|---|---|---|")
    total = 1e4
    for nodes in (16, 64, 256):
        compute = total * t_run / (32 * nodes)
        writer = total * per_record
        t = max(compute, writer)
        add(f"| {nodes} | {compute:.2f} | {writer:.2f} | {t:.2f} | {total / t:.0f} | "
            f"{compute / t:.0%} |")
    add("")
    add(f"For runs this small the writer bound, 1/t_rec = {1 / per_record:.0f} runs/s, is reached "
        "already at a few nodes: rank 0 flushes the file after every run so that a killed job "
        "keeps every finished run. Runs a hundred times costlier (n = 480 at the same d: "
        "4 n^2 d grows 100x) move the crossover a hundredfold, to "
        f"N ~ {100 * t_run / (32 * per_record):.0f} nodes. What would lift the writer bound for "
        "small runs: flushing every k records or every few seconds (a killed job then loses at "
        "most those), or writing with parallel HDF5 from the workers (each run is one hyperslab "
        "per dataset, disjoint across runs).")
    add("")
    lines.extend(shared_report(shared))
    add("## One run over ranks (token decomposition): design and projection")
    add("")
    add(DESIGN.format(cost_model=token_cost_model()))
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


DESIGN = """`mpirun -np P nadyn simulate --n N ...` deals the n query tokens to the ranks in
contiguous blocks of n/P. Every rank holds the whole state and steps it itself (the
integrator, the schemes' rates, the projections onto the sphere: O(n d) per step, about 1/n
of the attention's 4 n^2 d); in each right-hand-side evaluation a rank computes the attention
of its own block of query tokens against all keys (`attention_kernel::compute_rows`, whose
rows are bitwise the full kernel's: the same blocks and tiles, summed in the same order, the
ones that touch none of its rows skipped) and one `MPI_Allgatherv` brings every rank the
other blocks of A (8 n d bytes in all). So every rank holds the A of one process, bitwise,
and steps the state of one process: the trajectory is bitwise that of one process for any P,
with nothing to reduce (observables are computed on rank 0 from its state, as in one
process). Stop requests are agreed in the same exchange (an `MPI_Allreduce` per evaluation),
so every rank stops at the same step. Rank 0 writes the file; a resume reads the last frame
on every rank (the file must be visible to all, as on a cluster's shared file system).

Memory per rank: the state and the integrator's stages, O(n d) (the issue's bound
O((n/P) d + n d)), plus the kernel's blocks; the memory check before a run is per rank, as in
one process. Holding the whole state on every rank, rather than each rank's block of it and
a gathered copy of the keys, costs the same allgather (of A instead of the directions) and
keeps the integrators, the adaptive step's error norm, the observables and resume unchanged.

{cost_model}

What comes next when the n d keys no longer fit one rank
(n d * 8 bytes: 0.5 GB at n = 10^6, d = 64, so only for n >> 10^7): ring passing of key blocks,
each rank keeping its queries and passing blocks of n/P keys around the ring, with an online
(running max and sum) softmax that rescales partial sums as blocks arrive; memory O(n d / P)
per rank, the same flops, P - 1 neighbour exchanges per evaluation overlapped with compute;
bitwise independence of P is then lost unless the blocks are summed in a fixed key order
(each rank adds the blocks in key order, not arrival order)."""


# The kernel's per-core rate: results/performance.md, n = 4096, d = 64, 146 GFLOP/s on 2
# threads (4 n^2 d flops counted).
KERNEL_FLOPS_PER_CORE = 73e9
CORES_PER_NODE = 32
LATENCY = 2e-6  # s, InfiniBand HDR
BANDWIDTH = 10e9  # bytes/s per node


def token_cost_model():
    rows = ["Cost model per right-hand-side evaluation at d = 64, float64, one rank per node "
            f"with {CORES_PER_NODE} cores at the kernel's measured rate "
            f"({KERNEL_FLOPS_PER_CORE / 1e9:.0f} GFLOP/s per core: results/performance.md, "
            "n = 4096, d = 64, 2 threads). Kernel: 4 n^2 d / (P * cores * rate). Allgatherv of "
            "the rows of A (8 n d bytes in all): Open MPI's tuned component uses the ring "
            "algorithm for messages this large, in the Hockney model "
            "(P - 1) alpha + (P - 1)/P * 8 n d / beta, alpha = 2 us, beta = 10 GB/s "
            "(InfiniBand HDR). An RK4 step is 4 evaluations.",
            "",
            "| n | nodes P | kernel per evaluation (s) | allgather per evaluation (s) | RK4 step (s) | allgather share |",
            "|---|---|---|---|---|---|"]
    d = 64
    for n in (10**5, 10**6):
        for nodes in (16, 64, 256):
            kernel = 4.0 * n * n * d / (nodes * CORES_PER_NODE * KERNEL_FLOPS_PER_CORE)
            gather = (nodes - 1) * LATENCY + (nodes - 1) / nodes * 8.0 * n * d / BANDWIDTH
            step = 4 * (kernel + gather)
            rows.append(f"| {n:.0e} | {nodes} | {kernel:.3g} | {gather:.3g} | {step:.3g} | "
                        f"{gather / (kernel + gather):.1%} |")
    per_node = 2.0 * CORES_PER_NODE * KERNEL_FLOPS_PER_CORE / BANDWIDTH
    rows += ["",
             "The allgather over the kernel is (8 n d / beta) / (4 n^2 d / (P c r)) = "
             "2 P c r / (n beta) (c cores per node, r flops per core): it dominates only when "
             f"P > n beta / (2 c r) = n / {per_node:.0f}, i.e. beyond ~{1e5 / per_node:.0f} "
             f"nodes at n = 10^5 and ~{1e6 / per_node:.0f} at n = 10^6. Until then the token "
             "decomposition scales with the kernel."]
    return "\n".join(rows)


LOAD = []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nadyn", default=str(ROOT / "build" / "bin" / "nadyn"))
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=timing.MIN_REPEATS,
                        help="runs of each configuration, alternating; the best is reported")
    parser.add_argument("--out", default=str(ROOT / "results" / "scaling.md"))
    args = parser.parse_args()
    LOAD.append(os.getloadavg()[0])
    with tempfile.TemporaryDirectory() as directory:
        pathlib.Path(directory, "exp.toml").write_text(EXPERIMENT.format(runs=args.runs))
        sweeps = {"one": lambda: run_sweep(args.nadyn, 0, directory, "one.h5", 1)}
        for ranks in (1, 2, 3):
            sweeps[f"P{ranks}"] = (lambda ranks=ranks: run_sweep(args.nadyn, ranks, directory,
                                                                 f"p{ranks}.h5", 1))
        sweeps["every core"] = lambda: run_sweep(args.nadyn, 0, directory, "all.h5", 0)
        results = []
        for t in timing.alternate(sweeps, args.repeats).values():
            results.append(dict(t.result, timing=t))
            print(t.name, t.text(), t.result)
        programs = {}
        for weights in ("gaussian", "identity"):
            for ranks in (0, 1, 2, 3):
                programs[(weights, ranks)] = (lambda weights=weights, ranks=ranks:
                                              run_shared(args.nadyn, ranks, directory, weights))
        shared = []
        for t in timing.alternate(programs, args.repeats).values():
            shared.append(dict(t.result, timing=t))
            print(t.name, t.text(), t.result)
    LOAD.append(os.getloadavg()[0])
    write_report(args.out, results, args.runs, os.cpu_count(), shared)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
