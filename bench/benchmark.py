#!/usr/bin/env python3
"""Runs every benchmark of nadyn and writes results/performance.md (scripts/benchmark.sh).

    benchmark.py --build build --portable build-portable --out results/performance.md
                 [--openblas DIR] [--quick | --smoke]

--build is the default build (what users get: scripts/setup.sh, NADYN_SIMD=auto), the
headline; --portable the portable one (NADYN_SIMD=portable, scripts/test-portable.sh),
timed beside it in the same run. Steps, each printing as it goes: each build's GEMM rate
(Eigen, 1 and 2 threads), the table (RHS, RK4 step, kernel, the step's roofline, for n x d)
of both builds, thread scaling, single precision, the peers (NumPy with OpenBLAS and with
the reference BLAS, PyTorch on the CPU when installed) on the same cases from the same start
with their final states checked against nadyn's, the whole-process time of a small run,
and the peak memory of a large run. Raw results go next to the report (.json). The peers and
nadyn, and the whole process, are timed through bench/timing.py: each program runs at least 3
times, alternating with the others, and is reported by its best run with the spread and the
load before it, marked unreliable when either is too high; the kernel and thread tables are
medians of repeated runs inside `nadyn-bench`. --smoke runs the n = 32, d = 3
cases once (a check of the pipeline, not a measurement) and writes its report into the
default build directory.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blas as peer_blas  # noqa: E402  (bench/blas.py: the peers' BLAS and what they map)
import provenance  # noqa: E402  (bench/provenance.py: the commit of the tree and of a binary)
import timing  # noqa: E402  (bench/timing.py: best of alternating runs, spread, load)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(ROOT, "bench", "peers", "attention_peer.py")
PYTHON = "/usr/bin/python3"

TABLE_N = [32, 256, 1024, 4096, 16384]
TABLE_D = [3, 64, 512]
# (n, d, steps, repeats of nadyn, repeats of the peers)
PEER_CASES = [(32, 3, 2000, 7, 5), (1024, 64, 50, 5, 3), (4096, 64, 5, 5, 3)]
THREAD_CASES = [(1024, 64), (4096, 64), (4096, 512), (16384, 3)]
# (n, d) of the single-precision comparison (the first four with --quick; they cover
# d = 3, 64 and 512, the target's dimensions)
PRECISION_CASES = [(1024, 3), (1024, 64), (4096, 64), (4096, 512), (1024, 512), (16384, 64)]
MEMORY_CASE = dict(n=65536, d=32, T="0.02", dt="0.01")
# The whole-process case: this command as a user types it (plus an output path).
PROCESS_ARGS = ["simulate", "--n", "32", "--d", "3", "--T", "50"]
DT, BETA, THREADS = 0.01, 4.0, 2
# The peer every ratio target is judged against.
HEADLINE_PEER = "numpy+openblas"
# Other processes' busy cores above which the machine counts as loaded at the start (2
# cores: one other busy process already takes half of them); during the run, a 1-minute
# load average above this plus the benchmark's own THREADS. (Each timed figure has its own
# measured load, bench/timing.py.)
LOADED = 0.5

# Small settings of --smoke: every step runs, on n = 32, d = 3, once.
SMOKE = dict(table_n=[32], table_d=[3], peer_cases=[(32, 3, 50, 1, 1)], thread_cases=[(32, 3)],
             precision_cases=[(32, 3)], memory=dict(n=1024, d=3, T="0.02", dt="0.01"))

loads = []


def log(*args):
    print(*args, flush=True)


def sample_load():
    loads.append(os.getloadavg()[0])


def run_json(command, env=None):
    """Runs a command that prints JSON lines; returns the parsed objects."""
    sample_load()
    log("  $", " ".join(command))
    out = subprocess.run(command, check=True, capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    for row in rows:
        log("   ", json.dumps(row))
    return rows


def capture(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def simd_level(build, work):
    """The instruction set a build's library was compiled for, as a run records it
    (/parameters/simd of a tiny run's file)."""
    import h5py
    out = os.path.join(work, "simd.h5")
    subprocess.run([os.path.join(build, "bin", "nadyn"), "simulate", "--n", "4", "--d", "3",
                    "--T", "0.01", "--out", out, "--force", "--quiet"], check=True,
                   capture_output=True)
    with h5py.File(out, "r") as f:
        value = f["parameters"].attrs.get("simd", "?")
    return value.decode() if isinstance(value, bytes) else str(value)


def build_info(name, build, work):
    cache = open(os.path.join(build, "CMakeCache.txt")).read()
    value = lambda key: (re.search(rf"^{key}:\w+=(.*)$", cache, re.M) or [None, ""])[1]
    simd = value("NADYN_SIMD") or "auto"
    level = simd_level(build, work)
    march = {"avx2": "-march=x86-64-v3", "avx512": "-march=x86-64-v4", "native": "-march=native"}
    flags = " ".join(filter(None, [value("CMAKE_CXX_FLAGS"), value("CMAKE_CXX_FLAGS_RELEASE"),
                                   march.get(simd if simd == "native" else level, ""),
                                   "-fopenmp -std=c++20"]))
    return {"name": name, "dir": os.path.relpath(build, ROOT), "simd": simd, "level": level,
            "flags": flags,
            "compiler": capture([value("CMAKE_CXX_COMPILER") or "c++", "--version"]).splitlines()[0]}


def machine():
    lscpu = capture(["lscpu"])
    field = lambda name: (re.search(rf"^{name}:\s*(.*)$", lscpu, re.M) or [None, "?"])[1]
    eigen = capture(["dpkg-query", "-W", "-f=${Version}", "libeigen3-dev"])
    numpy_info = capture([PYTHON, "-c", "import numpy; print(numpy.__version__)"])
    return {
        "cpu": field("Model name"), "cores": field(r"CPU\(s\)"),
        "threads_per_core": field(r"Thread\(s\) per core"),
        "eigen": eigen, "numpy": numpy_info,
        "kernel": platform.release(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": provenance.tree_commit(ROOT) or "",
        # Other processes' busy cores (bench/timing.py), not the load average, which
        # still holds whatever ran in the minute before.
        "load_at_start": timing.load_before(1.0),
    }


def read_final(path):
    import h5py
    import numpy as np
    with h5py.File(path, "r") as f:
        theta = np.array(f["particles/tokens/position/value"][-1])
        r = np.array(f["particles/tokens/magnitude/value"][-1]).reshape(-1)
    return theta, r


def nadyn_peer(build, work, name, n, d, steps, theta_ref, r_ref):
    """nadyn's own peer run (`nadyn-bench peer`, one repetition) in one build, for
    timing.alternate: (its seconds, the row with its final state against the CLI's
    reference)."""
    import numpy as np
    final_bin = os.path.join(work, f"nadyn_{name}_{n}_{d}.bin")
    row = run_json([os.path.join(build, "bin", "nadyn-bench"), "peer", "--n", str(n), "--d",
                    str(d), "--steps", str(steps), "--dt", str(DT), "--beta", str(BETA),
                    "--reps", "1", "--threads", str(THREADS), "--out", final_bin])[0]
    x = np.fromfile(final_bin)
    diff = max(np.abs(x[: n * d] - theta_ref.reshape(-1)).max(), np.abs(x[n * d:] - r_ref).max())
    return row["seconds"], {"seconds": row["seconds"], "seconds_run": row.get("seconds_run"),
                            "vs_cli": float(diff),
                            "allocations_per_step": row["allocations_per_step"]}


def runs_text(t):
    """timing.Timing.text() in milliseconds (a peer case's run takes a few of them)."""
    problems = t.problems()
    return (f"best {1e3 * t.best:.3g} ms of {len(t.walls)} runs ({1e3 * min(t.walls):.3g}-"
            f"{1e3 * max(t.walls):.3g} ms, spread {100 * t.spread:.0f}%, {t.load_text()})"
            + (f"; UNRELIABLE: {', '.join(problems)}" if problems else ""))


def timing_fields(t):
    """What the report needs of a bench/timing.py Timing (the .json keeps no objects)."""
    return {"reps": len(t.walls), "runs": runs_text(t), "reliable": t.reliable,
            "walls": t.walls, "loads": t.loads, "loads_during": t.loads_during}


def peer_backends(openblas, refblas, have_torch):
    """The peers as (name, module, environment): NumPy with OpenBLAS (given its directory) and
    with the reference BLAS (by path: the system's libblas.so.3 alternative may be OpenBLAS),
    and PyTorch with the OpenBLAS; every environment from bench/blas.py, with the benchmark's
    thread count."""
    backends = []
    if openblas:
        backends.append(("numpy+openblas", "numpy", peer_blas.peer_env(openblas, THREADS)))
    backends.append(("numpy+refblas", "numpy", peer_blas.peer_env(refblas, THREADS)))
    if have_torch:
        backends.append(("torch", "torch", peer_blas.peer_env(openblas, THREADS)))
    return backends


def peers(builds, work, openblas, refblas, repeat_scale, cases):
    """Every peer on every case, side by side with each build of nadyn; final states compared
    with the default build's CLI run. Every program of a case (each build, each peer) runs
    at least timing.MIN_REPEATS times, alternating (bench/timing.py); each is reported by its
    best run. Returns the cases, whether PyTorch ran, and the BLAS each peer's interpreter
    mapped (bench/blas.py), by peer name."""
    import numpy as np
    nadyn = os.path.join(builds[0][1], "bin", "nadyn")
    have_torch = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
    backends = peer_backends(openblas, refblas, have_torch)
    mapped = {name: peer_blas.name_mapped(peer_blas.loaded_blas(env, module), ROOT)
              for name, module, env in backends}
    results = []
    for n, d, steps, nadyn_reps, peer_reps in cases:
        log(f"peer case n = {n}, d = {d}, {steps} RK4 steps")
        start = os.path.join(work, f"case_{n}_{d}.h5")
        T = repr(steps * DT)
        subprocess.run([nadyn, "simulate", "--scheme", "peri-ln", "--n", str(n), "--d", str(d),
                        "--beta", str(BETA), "--dt", str(DT), "--T", T, "--every", str(steps),
                        "--init", "uniform", "--seed", "1", "--integrator", "rk4",
                        "--threads", str(THREADS), "--out", start, "--force", "--quiet"],
                       check=True, capture_output=True)
        theta_ref, r_ref = read_final(start)
        case = {"n": n, "d": d, "steps": steps, "nadyn": {}, "peers": []}
        programs = {}
        for name, build in builds:
            programs["nadyn " + name] = (lambda build=build, name=name: nadyn_peer(
                build, work, name, n, d, steps, theta_ref, r_ref))
        failed = set()

        def peer_program(name, backend, env):
            out = os.path.join(work, f"{name}_{n}_{d}.npz")

            def run():
                if name in failed:
                    return float("nan"), None
                try:
                    p = run_json([PYTHON, PEER, "--backend", backend, "--start", start,
                                  "--steps", str(steps), "--dt", str(DT), "--beta", str(BETA),
                                  "--threads", str(THREADS), "--repeats", "1", "--out", out],
                                 env=env)[0]
                except subprocess.CalledProcessError as e:
                    log("    peer failed:", e.stderr[-500:] if e.stderr else e)
                    failed.add(name)
                    return float("nan"), None
                final = np.load(out)
                diff = max(np.abs(final["theta"] - theta_ref).max(),
                           np.abs(final["r"] - r_ref).max())
                return p["seconds"], {"version": p["version"], "max_difference": float(diff)}
            return run

        for name, backend, env in backends:
            programs[name] = peer_program(name, backend, env)
        # One count for all, so that they alternate to the end: the larger of the case's
        # counts (scaled by --repeats for the peers), at least timing.MIN_REPEATS.
        repeats = max(timing.MIN_REPEATS, nadyn_reps, int(round(peer_reps * repeat_scale)))
        timings = timing.alternate(programs, repeats)
        for name, _ in builds:
            t = timings["nadyn " + name]
            case["nadyn"][name] = {**t.result, "seconds": t.best, **timing_fields(t)}
        for name, _, _ in backends:
            t = timings[name]
            if name in failed:
                case["peers"].append({"name": name, "error": "failed"})
                continue
            p = t.result
            case["peers"].append({
                "name": name, "version": p["version"], "seconds": t.best, **timing_fields(t),
                "ratio": {b: t.best / case["nadyn"][b]["seconds"] for b, _ in builds},
                "ratio_text": {b: timing.ratio_text(t, timings["nadyn " + b]) for b, _ in builds},
                "max_difference": p["max_difference"], "agree": bool(p["max_difference"] <= 1e-9)})
        results.append(case)
    return results, have_torch, mapped


def process_time(build, work, reps):
    """`nadyn simulate --n 32 --d 3 --T 50` as a whole process (fork to exit, wall clock)
    against the time the run reports for itself (simulation::run: the integration, the
    observables and the frames written): `reps` runs (at least timing.MIN_REPEATS) after one
    warm-up, the best of each (bench/timing.py)."""
    out = os.path.join(work, "process.h5")
    command = [os.path.join(build, "bin", "nadyn")] + PROCESS_ARGS + ["--out", out, "--force",
                                                                        "--quiet"]
    log("  $", " ".join(command))
    sample_load()

    def launch():
        began = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, text=True)
        wall = time.perf_counter() - began
        return wall, timing.run_seconds(out)  # the run's own time, unrounded

    launch()  # warms the page cache (binary, libraries)
    whole = timing.alternate({"process": launch}, max(reps, timing.MIN_REPEATS))["process"]
    inside = timing.Timing("in-process", walls=list(whole.results), loads=list(whole.loads),
                           results=list(whole.results),
                           loads_during=list(whole.loads_during))
    row = {"command": "nadyn " + " ".join(PROCESS_ARGS), "process_seconds": whole.best,
           "run_seconds": inside.best, "reps": len(whole.walls), "runs": runs_text(whole),
           "reliable": whole.reliable and inside.reliable}
    row["ratio"] = row["process_seconds"] / row["run_seconds"]
    log("   ", json.dumps(row))
    return row


def memory(build, work, case):
    time_bin = shutil.which("time", path="/usr/bin")
    if not time_bin:
        return {"error": "/usr/bin/time is not installed (Debian package 'time')"}
    out = os.path.join(work, "memory.h5")
    command = [os.path.join(build, "bin", "nadyn"), "simulate", "--n", str(case["n"]),
               "--d", str(case["d"]), "--T", case["T"], "--dt", case["dt"],
               "--positions", "none", "--every", "1", "--threads", str(THREADS), "--out", out,
               "--force", "--quiet"]
    log("  $ /usr/bin/time -v", " ".join(command))
    sample_load()
    began = time.time()
    done = subprocess.run([time_bin, "-v"] + command, capture_output=True, text=True)
    seconds = time.time() - began
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if done.returncode != 0 or not match:
        return {"error": done.stderr[-500:]}
    kib = int(match.group(1))
    log(f"    peak RSS {kib / 1024:.1f} MiB in {seconds:.1f} s")
    return {"command": "nadyn " + " ".join(command[1:]).replace(out, "/tmp/x.h5"),
            "n": case["n"], "d": case["d"], "max_rss_mib": kib / 1024, "seconds": seconds}


def fmt(v, digits=3):
    if v is None:
        return "–"
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


def step_flops(n, d, path="symmetric"):
    """Flops of one RK4 step's attention: 4 evaluations of 3 n² d (the symmetric Q = K paths,
    "symmetric", "symmetric_small_d": the logits' half plus the values' product) or 4 n² d
    (the general paths, "general", "small_n")."""
    return 4.0 * (3.0 if path.startswith("symmetric") else 4.0) * n * n * d


def gemm_rate(data, build, threads=THREADS):
    return next((g["gflops"] for g in data["gemm"][build] if g["threads"] == threads), None)


def roofline_ms(data, build, n, d, path="symmetric"):
    rate = gemm_rate(data, build)
    return step_flops(n, d, path) / (rate * 1e9) * 1e3 if rate else None


def report(data):
    m = data["machine"]
    builds = data["builds"]
    names = [b["name"] for b in builds]
    headline = names[0]
    L = []
    L.append("# Performance of nadyn")
    L.append("")
    L.append("Regenerated by `bash scripts/benchmark.sh` (builds the benchmark targets in the "
             "default build `build/`, configured as `scripts/setup.sh` and the README's quick "
             "start configure it, and in the portable build `build-portable/`, configured as "
             "`scripts/test-portable.sh` does, then runs `bench/benchmark.py` on both); raw "
             f"numbers in `{data['json']}`. Every time is the median of several runs "
             "(the count is given) made in one run of the script, so both builds and the peers "
             "saw the same machine state; ratios are more trustworthy than absolute times "
             "(another process may share the cores).")
    L.append("")
    if data.get("requoted"):
        reports = " and ".join(f"{entry['report']} (on {entry['date']})"
                               for entry in data["requoted"])
        L.append(f"**Requoted:** the sections quoting {reports} were re-read "
                 "from those reports, regenerated after this run (`bench/benchmark.py "
                 "--requote`, which `scripts/benchmark.sh --simuformer-only` runs after "
                 "simuformer's experiment); every other figure, and the machine and load below, "
                 f"are this run's, of {data['machine']['date']}.")
        L.append("")
    if data.get("smoke"):
        L.append("**Smoke run (`--smoke`): n = 32, d = 3 only, one repetition. A check that "
                 "every step runs, not a measurement.**")
        L.append("")
    L.append("## Machine and builds")
    L.append("")
    L.append(f"- CPU: {m['cpu']}, {m['cores']} cores ({m['threads_per_core']} thread per core), "
             f"Linux {m['kernel']}; Eigen {m['eigen']}")
    for b in builds:
        role = ("what users get by default, the headline" if b["name"] == headline
                else "the x86-64 baseline: SSE2, 2-wide vectors, no FMA")
        L.append(f"- **{b['name']}** build `{b['dir']}/` ({role}): `NADYN_SIMD={b['simd']}`, "
                 f"instruction set `{b['level']}`; {b['compiler']}; flags `{b['flags']}`")
    L.append(f"- nadyn commit {m['commit']}; NumPy {m['numpy']} (Debian); date {m['date']}")
    load_start, load_end, load_max = m["load_at_start"], data["load_at_end"], data["load_max"]
    L.append(f"- Load: other processes kept {load_start:.2f} cores busy at the start (measured "
             f"over 1 s); the 1-minute load average was {load_end:.2f} at the end and at most "
             f"{load_max:.2f} between the steps. During the run the benchmark itself keeps up "
             f"to {THREADS} threads busy, so up to about {THREADS} is its own. Other processes "
             "mostly hurt the 2-thread figures (a parallel region waits for its slowest thread).")
    if data["loaded"]:
        L.append(f"- **The machine was loaded during this run** (a load above {LOADED:g} at "
                 f"the start or a load average above {THREADS + LOADED:g} during the run): "
                 "the absolute times and the ratios against the peers are not clean figures; "
                 "rerun `bash scripts/benchmark.sh` on an idle machine before quoting them.")
    L.append("")
    L.append("## GEMM rate of each build (Eigen, double, square "
             f"{data['gemm'][headline][0]['size']})")
    L.append("")
    L.append("The rate every roofline below uses: an RK4 step's attention is 4 evaluations of "
             "3 n² d flops on the symmetric Q = K path (4 n² d on the general path), and its "
             "*roofline* is that count at the build's 2-thread GEMM rate.")
    L.append("")
    L.append("| threads | " + " | ".join(f"{b} (GFLOP/s)" for b in names) + " |")
    L.append("|---|" + "---|" * len(names))
    for t in sorted({g["threads"] for g in data["gemm"][headline]}):
        L.append(f"| {t} | " + " | ".join(fmt(gemm_rate(data, b, t)) for b in names) + " |")
    L.append("")
    L.append(f"## Right-hand side, RK4 step and kernel ({THREADS} threads), "
             + ("both builds" if len(names) > 1 else f"{headline} build"))
    L.append("")
    L.append("peri-ln, beta = 4, Q = K = V = I, uniform start. *RHS*: one evaluation of the "
             "right-hand side (attention + per-token rates). *step*: one RK4 step through "
             "`nadyn::integrate` (4 evaluations, stage combinations, projection, finiteness "
             "check), its marginal cost: 2s steps minus s steps, so the frames' step-error probe and "
             "last evaluation cancel. *x roofline*: the step over its roofline at the same build's GEMM rate. "
             "*kernel*: `attention_kernel::compute` alone; its GFLOP/s count 4 n² d flops "
             "(the two products; the symmetric path actually performs about 3 n² d since "
             "Q = K), and *of GEMM* is that rate over the build's 2-thread GEMM rate. "
             "*alloc/step* (default build): heap allocations per RK4 step once the workspaces "
             "exist; at d = 512 they are Eigen's GEMM packing buffers (a depth-512 panel "
             "exceeds Eigen's 128 KiB stack limit, so each tile product takes its buffers from "
             "malloc), a negligible share of such a step; for d <= 64 a step allocates nothing.")
    L.append("")
    cols = ["RHS (ms)", "RK4 step (ms)", "roofline (ms)", "x roofline", "kernel GFLOP/s",
            "of GEMM"]
    L.append("| n | d | path | " + " | ".join(f"{c} {b}" for b in names for c in cols)
             + " | alloc/step | runs |")
    L.append("|---|---|---|" + "---|" * (len(cols) * len(names) + 2))
    rows = {b: {(r["n"], r["d"]): r for r in data["table"][b]} for b in names}
    for key, r0 in rows[headline].items():
        if "skipped" in r0:
            L.append(f"| {key[0]} | {key[1]} | skipped: {r0['skipped']} (over a minute) |"
                     + " |" * (len(cols) * len(names) + 2))
            continue
        cells = []
        for b in names:
            r = rows[b].get(key)
            if not r or "skipped" in r:
                cells += ["–"] * len(cols)
                continue
            roof = roofline_ms(data, b, key[0], key[1], r["kernel_path"])
            rate = gemm_rate(data, b)
            cells += [fmt(r["rhs_ms"]), fmt(r["step_ms"]), fmt(roof),
                      f"{r['step_ms'] / roof:.2f}x" if roof else "–",
                      fmt(r["kernel_gflops"]),
                      f"{r['kernel_gflops'] / rate:.0%}" if rate else "–"]
        alloc = r0.get("allocations_per_step")
        L.append(f"| {key[0]} | {key[1]} | {r0['kernel_path']} | " + " | ".join(cells) +
                 f" | {fmt(alloc) if alloc is not None and alloc >= 0 else '–'} | {r0['reps']} |")
    L.append("")
    L.append(f"## Thread scaling (right-hand side, 1 vs 2 threads, interleaved; {headline} build)")
    L.append("")
    L.append("Median and best of the runs: a 2-thread evaluation waits for its slower thread, so "
             "a process on the other core hurts it far more than the 1-thread one; the best "
             "runs show the scaling of the code itself when both cores are free.")
    L.append("")
    L.append("| n | d | 1 thread (ms) | 2 threads (ms) | speed-up (median) | best 1 / best 2 (ms) | speed-up (best) | runs | bitwise equal |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for r in data["threads"]:
        L.append(f"| {r['n']} | {r['d']} | {fmt(r['rhs_ms_1'])} | {fmt(r['rhs_ms_2'])} | "
                 f"{r['speedup']:.2f}x | {fmt(r['rhs_ms_1_best'])} / {fmt(r['rhs_ms_2_best'])} | "
                 f"{r['speedup_best']:.2f}x | {r['reps']} | {'yes' if r['bitwise_equal'] else 'NO'} |")
    L.append("")
    L.append(f"## Single precision (`--precision float`; {headline} build)")
    L.append("")
    L.append("The kernel alone, in double (its default path) and in float (the general path in "
             "single precision; state, integrator, rates, projection and observables stay in "
             "double), interleaved. *GFLOP/s* count 4 n² d flops. *deviation*: largest "
             "|A_float - A_double| over max |A| (peri-ln, beta = 4, uniform start).")
    L.append("")
    L.append("| n | d | double (ms) | double path | float (ms) | float GFLOP/s | speed-up | deviation | runs |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for r in data.get("precision", []):
        L.append(f"| {r['n']} | {r['d']} | {fmt(r['double_ms'])} | {r['double_path']} | "
                 f"{fmt(r['float_ms'])} | {fmt(r['float_gflops'])} | {r['speedup']:.2f}x | "
                 f"{r['relative_deviation']:.1e} | {r['reps']} |")
    L.append("")
    L.append("## Peers: the same model, scheme, start and dt")
    L.append("")
    L.append("peri-ln, beta = 4, RK4 with dt = 0.01 and projection after every step, from "
             "nadyn's `/parameters/theta0` (`--init uniform --seed 1`). nadyn is timed by "
             "each build's `nadyn-bench peer` (the library's `integrate()` with no observer, "
             "i.e. no file I/O; the default build's CLI writes the reference final state, and "
             "each build's final state is checked against it); the peers "
             "(`bench/peers/attention_peer.py`) time their step loop only. Each side uses 2 "
             "threads (nadyn: the run's own thread count; the peers: OMP_NUM_THREADS, "
             "OPENBLAS_NUM_THREADS, torch.set_num_threads). Times are per RK4 step; nadyn's is the "
             "marginal cost of a step (integrate() over 2s steps minus over s steps, so the work "
             "of the first and last frames cancels: the step-error probe, 12 evaluations per "
             "frame at most every 20 steps, and the last frame's evaluation); *whole call* is "
             "the integrate() call over s steps per step, those included. *Ratio* = "
             "peer time / nadyn time (the default build's ratio against "
             f"`{HEADLINE_PEER}` is the headline); *roofline*: the step's flops at the default "
             "build's GEMM rate; *max diff* = largest difference of the final theta and r from "
             "nadyn's (required: 1e-9).")
    L.append("")
    L.append("| n | d | steps | roofline (ms) | " + " | ".join(
        f"nadyn {b} (ms) | x roofline {b}" for b in names) + f" | whole call {headline} (ms) | max diff "
        + "/".join(names) + " |")
    L.append("|---|---|---|---|" + "---|---|" * len(names) + "---|---|")
    for c in data["peers"]:
        per = lambda s: s / c["steps"] * 1e3
        roof = roofline_ms(data, headline, c["n"], c["d"])
        cells = []
        for b in names:
            t = per(c["nadyn"][b]["seconds"])
            cells += [fmt(t), f"{t / roof:.2f}x" if roof else "–"]
        whole = c["nadyn"][headline].get("seconds_run")
        cells.append(fmt(per(whole)) if whole else "–")
        L.append(f"| {c['n']} | {c['d']} | {c['steps']} | {fmt(roof)} | " + " | ".join(cells) +
                 " | " + " / ".join(f"{c['nadyn'][b]['vs_cli']:.1e}" for b in names) + " |")
    L.append("")
    L.append("| n | d | peer | peer (ms/step) | " + " | ".join(f"ratio to {b}" for b in names)
             + " | max diff | agree | runs (nadyn/peer) |")
    L.append("|---|---|---|---|" + "---|" * len(names) + "---|---|---|")
    for c in data["peers"]:
        for p in c["peers"]:
            if "error" in p:
                L.append(f"| {c['n']} | {c['d']} | {p['name']} | failed |" + " |" * (len(names) + 3))
                continue
            shaky = lambda b: ("" if p.get("reliable", True) and
                               c["nadyn"][b].get("reliable", True) else " UNRELIABLE")
            ratios = [(f"**{p['ratio'][b]:.1f}x**" if b == headline else f"{p['ratio'][b]:.1f}x")
                      + shaky(b) for b in names]
            L.append(f"| {c['n']} | {c['d']} | {p['name']} {p['version']} | "
                     f"{fmt(p['seconds'] / c['steps'] * 1e3)} | " + " | ".join(ratios) + " | "
                     f"{p['max_difference']:.1e} | {'yes' if p['agree'] else 'NO'} | "
                     f"{c['nadyn'][headline]['reps']}/{p['reps']} |")
    L.append("")
    L.append("Each program of a case (each build's `nadyn-bench peer` and each peer) ran the "
             "same number of times, alternating (bench/timing.py); its time is its best run, "
             "and a ratio is UNRELIABLE when a figure behind it had a load ("
             f"{timing.LOAD_MEANING}) above {timing.RELIABLE_LOAD} or a spread above "
             f"{100 * timing.RELIABLE_SPREAD:.0f}%. The runs:")
    L.append("")
    for c in data["peers"]:
        for b in names:
            if "runs" in c["nadyn"][b]:
                L.append(f"- n = {c['n']}, d = {c['d']}, nadyn {b}: {c['nadyn'][b]['runs']}")
        for p in c["peers"]:
            if "runs" in p:
                L.append(f"- n = {c['n']}, d = {c['d']}, {p['name']}: {p['runs']}")
    L.append("")
    for note in data.get("peer_notes", []):
        L.append(f"- {note}")
    floor = openblas_floor(data)
    if floor:
        L.append(f"- The floor at n = {floor['n']}, d = {floor['d']}: {HEADLINE_PEER} takes "
                 f"{floor['peer_rhs_ms']:.2f} ms per right-hand side ({floor['steps']} RK4 steps, 4 "
                 f"evaluations each), so {floor['goal']:g}x faster means {floor['needed_ms']:.3f} ms; "
                 f"the symmetric kernel's 3 n² d flops alone take {floor['flop_ms']:.3f} ms at the "
                 f"measured {floor['gemm']:.0f} GFLOP/s GEMM rate, and nadyn's whole right-hand "
                 f"side takes {floor['nadyn_rhs_ms']:.3f} ms. A margin beyond "
                 f"{floor['peer_rhs_ms'] / floor['flop_ms']:.1f}x over this peer would need fewer "
                 "flops, not faster ones.")
        profile = data.get("profile_1024")
        if profile:
            L.append("")
            L.append(f"  Where that right-hand side's time goes (`perf record` of `nadyn-bench peer "
                     f"--n 1024 --d 64 --steps 300`, {THREADS} threads, self time per function; "
                     "the GEMM kernel and its packing are the tiles' three products):")
            L.append("")
            L.append("  | share | function |")
            L.append("  |---|---|")
            for share, symbol in profile[:8]:
                L.append(f"  | {share:.1f}% | `{symbol}` |")
            L.append("")
            L.append(f"  What would close the gap: the right-hand side must come within "
                     f"{floor['needed_ms'] / floor['flop_ms']:.2f}x of its GEMM time (it is at "
                     f"{floor['nadyn_rhs_ms'] / floor['flop_ms']:.2f}x). Beyond the GEMMs the time "
                     "is the tile loop's own work (exp arguments, denominators, the diagonal "
                     "tiles' mirror), zeroing four lanes' n x d sums per call, the exponentials, "
                     "and threads waiting: 36 tile pairs over 4 fixed lanes, diagonal tiles half "
                     "the cost. Zeroing only the rows a lane touches and one parallel region per "
                     "RK4 step keep the sums bitwise; a lane order balanced by tile cost, or "
                     "larger tiles (fewer, deeper GEMMs), change the summation order and so the "
                     "stored regression data.")
    L.append("")
    profile = data.get("profile_small")
    if profile:
        L.append(f"### Where a small system's time goes ({headline} build)")
        L.append("")
        L.append("`perf record` of `nadyn-bench peer --n 32 --d 3 --steps 200000 --dt 0.0001` "
                 "(the n = 32, d = 3 case, longer), self time per function:")
        L.append("")
        L.append("| share | function |")
        L.append("|---|---|")
        for share, symbol in profile:
            L.append(f"| {share:.1f}% | `{symbol}` |")
        L.append("")
        L.append("`add_batch` is the symmetric kernel's small-d loop: for each 8 x 8 sub-block "
                 "of E below the diagonal, the exponents, their exponentials and the sums to "
                 "both tokens, in registers; it is bound by FMA throughput. The rest is "
                 "per-token work: the rates (`chunk_derivative`, `chunk_rates`), the kernel's "
                 "set-up and result (`transpose_queries`, `weight_values`, `add_quotient`, "
                 "`add_symmetric_small_d`) and the step (`integrate`, `check_finite`, "
                 "`chunk_to_sphere`).")
        L.append("")
    L.append(f"## Whole process ({headline} build)")
    L.append("")
    proc = data.get("process")
    if proc:
        L.append(f"`{proc['command']}` (plus `--out FILE --force --quiet`), fork to exit, "
                 f"best of {proc['reps']} runs after one warm-up run "
                 f"({proc.get('runs', '')}): "
                 f"**{proc['process_seconds'] * 1e3:.0f} ms**, against "
                 f"{proc['run_seconds'] * 1e3:.0f} ms that the run reports for itself "
                 "(the integration, the observables and the frames written to the file, timed "
                 f"inside the process): **{proc['ratio']:.2f}x**. The difference is the "
                 "process's start (loading the executable and its libraries), parsing, "
                 "creating and closing the HDF5 file.")
    L.append("")
    L.append(f"## Peak memory ({headline} build)")
    L.append("")
    mem = data["memory"]
    if "error" in mem:
        L.append(f"Not measured: {mem['error']}")
    else:
        L.append(f"`/usr/bin/time -v {mem['command']}` (RK4, 2 steps, 3 frames, 2 threads): "
                 f"maximum resident set size **{mem['max_rss_mib']:.0f} MiB** "
                 f"({mem['max_rss_mib'] / 1024:.2f} GiB), {mem['seconds']:.0f} s wall.")
    L.append("")
    L.append(f"## Targets ({headline} build)")
    L.append("")
    if data["loaded"]:
        L.append("Measured on a loaded machine (see above): a verdict may change on an idle one.")
        L.append("")
    L.append("| target | measured | met |")
    L.append("|---|---|---|")
    for t in data["targets"]:
        L.append(f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |")
    L.append("")
    # The reports scripts/benchmark.sh ran just before this script, quoted: a heading, where
    # they came from, and their lines (targets or tables).
    quoted = [
        ("ensemble", "Ensembles of small runs (the sweep issue's targets)", "targets",
         "; the whole report, with the peers, the roofline and a profile, is "),
        ("simuformer", "simuformer's experiment, by the peer and by nadyn (issue 25)", "targets",
         " (given `--peer-simuformer PATH`); the whole report, with the timings, the agreement "
         "of the heat maps and the figure, is "),
        ("observables", "What the observables cost at frames", "body", " ("),
    ]
    for key, title, lines, link in quoted:
        part = data.get(key)
        if not part:
            continue
        close = ")" if link == " (" else ""
        L.append(f"## {title}")
        L.append("")
        L.append(f"From `{part['command']}`, which `scripts/benchmark.sh` ran just before this "
                 f"script{link}[{part['name']}]({part['name']}){close}.")
        L.append("")
        L += part[lines]
        L.append("")
    L.append(f"Total benchmark time: {data['seconds'] / 60:.1f} min.")
    L.append("")
    return "\n".join(L)


def ensemble_targets(path, heading="Targets of the sweep"):
    """The targets table of bench/ensemble.py's report at path (its lines), its command line
    and file name; with another heading, of bench/simuformer.py's report."""
    with open(path) as f:
        text = f.read().splitlines()
    command = next((m.group(1) for line in text for m in [re.search(r"Generated by `([^`]*)`",
                                                                    line)] if m), "")
    start = next(i for i, line in enumerate(text) if line.startswith(heading))
    end = next((i for i in range(start + 2, len(text)) if not text[i].strip()), len(text))
    return {"command": command, "name": os.path.basename(path), "targets": text[start:end]}


def observables_tables(path):
    """bench/observables.py's report at path: its command line, file name, and its body
    (every line after the paragraph that names the command), headings one level down."""
    with open(path) as f:
        text = f.read().splitlines()
    command = next((m.group(1) for line in text for m in [re.search(r"Generated by `([^`]*)`",
                                                                    line)] if m), "")
    start = next(i for i, line in enumerate(text) if line.startswith("Whole `nadyn` processes"))
    body = ["#" + line if line.startswith("## ") else line for line in text[start:]]
    while body and not body[-1].strip():
        body.pop()
    return {"command": command, "name": os.path.basename(path), "body": body}


def profile_small(build):
    """perf's profile of the n = 32, d = 3 peer case (where the time of a small system
    goes), as (share, symbol) rows; None when perf is missing or not permitted."""
    return profile_case(build, 32, 3, 200000, 0.0001)


def profile_case(build, n, d, steps, dt):
    """perf's profile of `nadyn-bench peer` at n, d (RK4, `steps` steps of dt) as (share,
    symbol) rows of self time; None when perf is missing or not permitted."""
    bench = os.path.join(build, "bin", "nadyn-bench")
    return perf_profile(lambda work: [bench, "peer", "--n", str(n), "--d", str(d), "--steps",
                                      str(steps), "--dt", str(dt), "--beta", "4", "--reps", "1",
                                      "--threads", str(THREADS), "--out",
                                      os.path.join(work, "final.bin")])


def perf_profile(command, rows_wanted=12, children=()):
    """perf's profile of command(workdir) (a list, run in a temporary directory) as (share,
    symbol) rows of self time, the first rows_wanted; with `children`, a second list of
    (share, name) for the given symbols' total time (theirs and their callees'), or for a
    tuple of symbols the sum of their self times. None when perf is missing or not
    permitted."""
    if not shutil.which("perf"):
        return None
    with tempfile.TemporaryDirectory(prefix="nadyn-perf-") as work:
        data = os.path.join(work, "perf.data")
        record = ["perf", "record", "-q", "-g", "-o", data] + command(work)
        if subprocess.run(record, capture_output=True, text=True).returncode != 0:
            return None
        report = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                                 "--sort", "symbol", "-g", "none"],
                                capture_output=True, text=True).stdout
        totals = subprocess.run(["perf", "report", "-i", data, "--stdio", "--children",
                                 "--sort", "symbol", "-g", "none"],
                                capture_output=True, text=True).stdout if children else ""
    rows, self_shares = [], {}
    for line in report.splitlines():
        m = re.match(r"\s*([0-9.]+)%\s+\[[.k]\]\s+(.*)", line)
        if m:
            symbol = re.sub(r"\(anonymous namespace\)::", "", m.group(2).split("  ")[0].strip())
            self_shares[symbol.split("(")[0]] = self_shares.get(symbol.split("(")[0], 0.0) + \
                float(m.group(1))
            if len(rows) < rows_wanted:
                rows.append((float(m.group(1)), symbol))
    if not children:
        return rows or None
    shares = []
    for name, symbol in children:
        if isinstance(symbol, tuple):
            # A set of functions by their self time: the call graph of an optimised build
            # (no frame pointers) loses callers, so "and its callees" is not reliable there.
            shares.append((sum(self_shares.get(s, 0.0) for s in symbol), name))
            continue
        share = None
        for line in totals.splitlines():
            m = re.match(r"\s*([0-9.]+)%\s+[0-9.]+%\s+\[[.k]\]\s+(.*)", line)
            name_here = re.sub(r"\(anonymous namespace\)::", "", m.group(2).split("  ")[0].strip()) if m else ""
            # The symbol itself, with or without its parameter list.
            if m and (name_here == symbol or name_here.startswith(symbol + "(")):
                share = float(m.group(1))
                break
        shares.append((share, name))
    return (rows or None), shares


def openblas_floor(data, goal=8.0):
    """How fast nadyn would have to be for `goal` x over NumPy+OpenBLAS at n = 1024, d = 64,
    next to the time its flops take at the default build's GEMM rate."""
    headline = data["builds"][0]["name"]
    case = next((c for c in data["peers"] if (c["n"], c["d"]) == (1024, 64)), None)
    gemm2 = gemm_rate(data, headline)
    if not case or not gemm2:
        return None
    peer = next((p for p in case["peers"] if p["name"] == HEADLINE_PEER and "seconds" in p), None)
    if not peer:
        return None
    evaluations = 4 * case["steps"]
    n, d = case["n"], case["d"]
    return {"n": n, "d": d, "steps": case["steps"], "gemm": gemm2, "goal": goal,
            "peer_rhs_ms": peer["seconds"] / evaluations * 1e3,
            "needed_ms": peer["seconds"] / evaluations / goal * 1e3,
            "flop_ms": 3.0 * n * n * d / (gemm2 * 1e9) * 1e3,
            "nadyn_rhs_ms": case["nadyn"][headline]["seconds"] / evaluations * 1e3}


def targets(data):
    """Issue 10's targets, for the default build (the first), each met or not with its figure;
    then the older ones that still hold."""
    out = []
    names = [b["name"] for b in data["builds"]]
    headline = names[0]

    def add(target, measured, met):
        out.append({"target": target, "measured": measured, "met": bool(met)})

    def peer(case, name):
        return next((p for c in data["peers"] if (c["n"], c["d"]) == case
                     for p in c["peers"] if p["name"] == name and "ratio" in p), None)

    for case, goal in [((1024, 64), 8.0), ((4096, 64), 8.0), ((32, 3), 25.0)]:
        target = f">= {goal:g}x faster than {HEADLINE_PEER} per RK4 step at n = {case[0]}, d = {case[1]}"
        p = peer(case, HEADLINE_PEER)
        if not p:
            add(target, "not measured (no such case or no OpenBLAS)", False)
            continue
        others = [f"{p['ratio'][b]:.1f}x ({b} build)" for b in names[1:]]
        ref = peer(case, "numpy+refblas")
        if ref:
            others.append(f"{ref['ratio'][headline]:.1f}x vs numpy with the reference BLAS")
        add(target, f"{p['ratio'][headline]:.1f}x" + (f"; {', '.join(others)}" if others else ""),
            p["ratio"][headline] >= goal)

    target = "RK4 step at n = 4096, d = 64 within 1.5x of its roofline (4 x 3 n² d flops at the measured GEMM rate)"
    case = next((c for c in data["peers"] if (c["n"], c["d"]) == (4096, 64)), None)
    roof = roofline_ms(data, headline, 4096, 64)
    if case and roof:
        step = case["nadyn"][headline]["seconds"] / case["steps"] * 1e3
        add(target, f"{step / roof:.2f}x ({step:.1f} ms per step, roofline {roof:.1f} ms at "
                    f"{gemm_rate(data, headline):.1f} GFLOP/s)", step / roof <= 1.5)
    else:
        add(target, "not measured", False)

    by_d = {}
    for r in data.get("precision", []):
        by_d.setdefault(r["d"], []).append(r)
    for d in (3, 64, 512):
        target = f"float kernel faster than double at d = {d}"
        rows = by_d.get(d)
        if not rows:
            add(target, "not measured", False)
            continue
        add(target, ", ".join(f"{r['speedup']:.2f}x at n = {r['n']}" for r in rows),
            all(r["speedup"] > 1.0 for r in rows))

    proc = data.get("process")
    target = f"whole-process time of `{proc['command'] if proc else 'nadyn ' + ' '.join(PROCESS_ARGS)}` within 1.5x of in-process time (issue 38 item 4)"
    if proc:
        add(target, f"{proc['ratio']:.2f}x ({proc['process_seconds'] * 1e3:.0f} ms vs "
                    f"{proc['run_seconds'] * 1e3:.0f} ms)"
                    + ("" if proc.get("reliable", True) else " UNRELIABLE"), proc["ratio"] <= 1.5)
    else:
        add(target, "not measured", False)

    gemm2 = gemm_rate(data, headline)
    row = next((r for r in data["table"][headline]
                if (r["n"], r["d"]) == (4096, 512) and "kernel_gflops" in r), None)
    if row and gemm2:
        share = row["kernel_gflops"] / gemm2
        add("kernel >= 60% of the GEMM rate at n = 4096, d = 512",
            f"{share:.0%} ({row['kernel_gflops']:.1f} of {gemm2:.1f} GFLOP/s)", share >= 0.6)
    th = next((r for r in data["threads"] if (r["n"], r["d"]) == (4096, 64)), None)
    if th:
        add("2 threads >= 1.7x faster than 1 at n = 4096, d = 64",
            f"{th['speedup']:.2f}x (median), {th['speedup_best']:.2f}x (best runs)",
            th["speedup"] >= 1.7)
    mem = data["memory"]
    if "max_rss_mib" in mem and mem.get("n") == MEMORY_CASE["n"]:
        add("peak memory < 1 GiB at n = 65,536, d = 32", f"{mem['max_rss_mib']:.0f} MiB",
            mem["max_rss_mib"] < 1024)
    return out


def requote(args):
    """--requote: the report at args.out rewritten from its .json, with each report given
    quoted anew (one regenerated after the full run, e.g. by `scripts/benchmark.sh
    --simuformer-only`), the targets recomputed, and the requoting stated under the header.
    Nothing is timed: every other figure stays the full run's."""
    json_path = os.path.splitext(args.out)[0] + ".json"
    if not os.path.exists(json_path):
        print(f"benchmark.py: --requote needs {json_path}, written by a full run", file=sys.stderr)
        return 2
    quoted = [(key, path) for key, path in (("ensemble", args.ensemble),
                                            ("simuformer", args.simuformer),
                                            ("observables", args.observables)) if path]
    if not quoted:
        print("benchmark.py: --requote needs a report to quote: --ensemble, --simuformer or "
              "--observables", file=sys.stderr)
        return 2
    with open(json_path) as f:
        data = json.load(f)
    for key, path in quoted:
        if key == "ensemble":
            data[key] = ensemble_targets(path)
        elif key == "simuformer":
            data[key] = ensemble_targets(path, "Targets of the peer's experiment")
        else:
            data[key] = observables_tables(path)
    data["targets"] = targets(data)
    # Each report's latest requoting, kept across requotings (simuformer.md, then
    # observables.md, ...).
    today = time.strftime("%Y-%m-%d")
    reports = [os.path.basename(path) for _, path in quoted]
    names = ", ".join(reports)
    earlier = [entry for entry in data.get("requoted") or [] if entry["report"] not in reports]
    data["requoted"] = earlier + [{"report": name, "date": today} for name in reports]
    with open(args.out, "w") as f:
        f.write(report(data))
    with open(json_path, "w") as f:
        json.dump(data, f, indent=1)
    log(f"wrote {args.out}: {names} quoted anew, the rest from the run of "
        f"{data['machine']['date']}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="", help="the default build (the headline)")
    parser.add_argument("--portable", default="", help="the portable build, timed beside it")
    parser.add_argument("--out", required=True)
    parser.add_argument("--openblas", default="", help="directory holding OpenBLAS's libblas.so.3")
    parser.add_argument("--refblas", default="",
                        help="directory holding the reference BLAS's libblas.so.3")
    parser.add_argument("--ensemble", default="",
                        help="bench/ensemble.py's report of this run, whose targets to include")
    parser.add_argument("--simuformer", default="",
                        help="bench/simuformer.py's report of this run, whose targets to include")
    parser.add_argument("--observables", default="",
                        help="bench/observables.py's report of this run, whose tables to include")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer repetitions, smaller table")
    mode.add_argument("--smoke", action="store_true",
                      help="n = 32, d = 3 once: checks the pipeline; report in the build dir")
    mode.add_argument("--requote", action="store_true",
                      help="time nothing: rewrite --out from its .json with the reports given "
                           "(--ensemble, --simuformer, --observables) quoted anew")
    args = parser.parse_args()
    if args.requote:
        return requote(args)
    if not args.build:
        parser.error("--build is required (except with --requote)")
    began = time.time()
    builds = [("default", args.build)] + ([("portable", args.portable)] if args.portable else [])
    out_path = args.out
    if args.smoke:
        out_path = os.path.join(args.build, "performance-smoke.md")
    reps = 1 if args.smoke else 3 if args.quick else 5
    table_n = SMOKE["table_n"] if args.smoke else TABLE_N[:4] if args.quick else TABLE_N
    table_d = SMOKE["table_d"] if args.smoke else TABLE_D
    peer_cases = SMOKE["peer_cases"] if args.smoke else PEER_CASES
    thread_cases = SMOKE["thread_cases"] if args.smoke else THREAD_CASES
    precision_cases = (SMOKE["precision_cases"] if args.smoke else
                       PRECISION_CASES[:4] if args.quick else PRECISION_CASES)
    bench = lambda build: os.path.join(build, "bin", "nadyn-bench")
    headline = args.build

    data = {"machine": machine(), "smoke": args.smoke}
    sample_load()
    with tempfile.TemporaryDirectory(prefix="nadyn-bench-") as work:
        data["builds"] = [build_info(name, path, work) for name, path in builds]
    log("machine:", json.dumps(data["machine"]))
    log("builds:", json.dumps(data["builds"]))

    log("GEMM rate")
    data["gemm"] = {name: run_json([bench(path), "gemm", "--size", "512" if args.smoke else "2048",
                                    "--threads", "1,2", "--reps", str(reps)])
                    for name, path in builds}

    log("table")
    data["table"] = {}
    for name, path in builds:
        data["table"][name] = run_json(
            [bench(path), "table", "--n", ",".join(map(str, table_n)),
             "--d", ",".join(map(str, table_d)), "--reps", str(reps), "--budget", "4",
             "--threads", str(THREADS), "--skip-above", "60",
             "--rate-guess", str(max(g["gflops"] for g in data["gemm"][name]))])

    log("thread scaling")
    data["threads"] = []
    for n, d in thread_cases:
        data["threads"] += run_json([bench(headline), "threads", "--n", str(n), "--d", str(d),
                                     "--reps", "1" if args.smoke else "9"])

    log("profile of the small case")
    data["profile_small"] = None if args.smoke else profile_small(headline)
    log("profile of n = 1024, d = 64")
    data["profile_1024"] = None if args.smoke else profile_case(headline, 1024, 64, 300, 0.01)

    log("single precision")
    data["precision"] = []
    for n, d in precision_cases:
        data["precision"] += run_json([bench(headline), "precision", "--n", str(n), "--d", str(d),
                                       "--reps", str(reps), "--threads", str(THREADS)])

    with tempfile.TemporaryDirectory(prefix="nadyn-bench-") as work:
        log("peers")
        data["peers"], have_torch, mapped = peers(builds, work, args.openblas, args.refblas,
                                                  0.5 if args.quick else 1.0, peer_cases)
        notes = []
        blas = capture(["readlink", "-f", "/usr/lib/x86_64-linux-gnu/libblas.so.3"])
        if args.openblas:
            notes.append(f"`{HEADLINE_PEER}` is Debian's NumPy with Debian's OpenBLAS "
                         "(libopenblas0-pthread, fetched with `apt-get download` into "
                         "`build/bench-openblas/` and loaded with LD_LIBRARY_PATH, so the system "
                         "is unchanged), 2 threads: the peer the targets are judged against.")
        else:
            notes.append("OpenBLAS could not be fetched (`apt-get download libopenblas0-pthread`), "
                         "so NumPy ran only with the system BLAS and the ratio targets are not "
                         "measured.")
        if args.refblas:
            notes.append("`numpy+refblas` is the same NumPy with the reference (netlib) BLAS "
                         f"(`{args.refblas}`, loaded with "
                         "LD_LIBRARY_PATH whatever the system's libblas.so.3 alternative is, "
                         f"here {blas}); it is single-threaded, so that peer runs its GEMMs on "
                         "one core whatever its thread settings.")
        else:
            notes.append(f"`numpy+refblas` could not load the reference BLAS, so it ran with the "
                         f"system's libblas.so.3 ({blas}).")
        if have_torch:
            notes.append("`torch` is Debian's python3-torch on the CPU (float64, "
                         "torch.set_num_threads(2))"
                         + (", with the OpenBLAS above" if args.openblas else "") +
                         "; its `softmax` subtracts the maximum.")
        else:
            notes.append("PyTorch: `import torch` failed (python3-torch is not installed and "
                         "`apt-get install -y python3-torch` did not succeed), so there is no "
                         "PyTorch peer.")
        notes.append("The BLAS each peer's interpreter mapped, read from its /proc/self/maps "
                     "(bench/blas.py): " + "; ".join(f"`{name}`: {library}"
                                                     for name, library in mapped.items()) + ".")
        data["peer_notes"] = notes
        log("whole process")
        data["process"] = process_time(headline, work, 1 if args.smoke else 5)
        log("peak memory")
        data["memory"] = memory(headline, work, SMOKE["memory"] if args.smoke else MEMORY_CASE)

    data["ensemble"] = ensemble_targets(args.ensemble) if args.ensemble else None
    data["simuformer"] = (ensemble_targets(args.simuformer, "Targets of the peer's experiment")
                          if args.simuformer else None)
    data["observables"] = observables_tables(args.observables) if args.observables else None
    data["load_at_end"] = os.getloadavg()[0]
    sample_load()
    data["load_max"] = max(loads + [data["machine"]["load_at_start"]])
    data["loaded"] = (data["machine"]["load_at_start"] > LOADED
                      or data["load_max"] > THREADS + LOADED)
    data["targets"] = targets(data)
    data["seconds"] = time.time() - began
    json_path = os.path.splitext(out_path)[0] + ".json"
    data["json"] = os.path.relpath(os.path.abspath(json_path), ROOT)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        f.write(report(data))
    with open(json_path, "w") as f:
        json.dump(data, f, indent=1)
    log(f"wrote {out_path} ({data['seconds'] / 60:.1f} min)")
    if data["loaded"]:
        log(f"the machine was loaded (load average up to {data['load_max']:.2f}): "
            "rerun on an idle machine before quoting these figures")
    for t in data["targets"]:
        log(f"  {'met    ' if t['met'] else 'NOT MET'}  {t['target']}: {t['measured']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
