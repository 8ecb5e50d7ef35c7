"""Ensembles of small runs, measured side by side: results/ensemble.md.

    /usr/bin/python3 bench/ensemble.py --build build --out results/ensemble.md [--quick]

The case of the sweep issue: pre-ln, n = 64, d = 16, beta = 4, Gaussian Q, K, V per run
(per head), explicit Euler dt = 0.1, T = 50 (500 steps), 512 runs, with 1 and 8 heads.
Measured in one run of this script, on this machine, with the build the README's set-up
makes:

- `nadyn sweep` over a seed axis (one process, runs side by side), whole-process time,
  with 1 and 8 heads;
- one head: the same runs as separate `nadyn simulate` processes, two at a time (two cores);
- the batched PyTorch peer (bench/peers/ensemble_peer.py, float64, 2 threads), 1 and 8
  heads, at a batch of 512 runs x 500 steps and at a batch of 64 runs x 200 steps;
- the 160-run sweep of the issue (10 betas x 8 seeds x 2 schemes, n = 64, d = 16, T = 50,
  Euler 0.1, Gaussian weights, final positions kept), whole-process time;
- the roofline: the attention flops of the algorithm the runs take (Q folded into K, each
  head its own values: H (4 n^2 d + 4 n d^2) per evaluation, attention_flops()) at the
  double GEMM rate measured now (Eigen in nadyn-bench, and NumPy's BLAS; the faster counts);
- the floor: the roofline plus the softmax's exponentials (H n^2 per evaluation, which no
  exact softmax skips and the roofline does not count) at the rate of nadyn's exponential
  alone (nadyn-bench exp);
- beside each profile, a frame's evaluation of the attention (which also takes each row's
  entropy) against a plain one (nadyn-bench observed, one thread).

--quick (under about two minutes) runs 128 runs per head count (separate processes: 64),
and the peer on shorter runs (fewer steps at the same batch: the peer's time is linear in
the steps); each comparison with nadyn is at equal work, from nadyn's measured time per
run-step. The published table comes from the full run on an idle machine.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchmark import perf_profile  # noqa: E402  (bench/benchmark.py, beside this script)
import blas  # noqa: E402  (bench/blas.py: the peers' OpenBLAS)
import provenance  # noqa: E402  (bench/provenance.py: the binary is the tree's)
import timing  # noqa: E402  (bench/timing.py: best of alternating runs, spread, load)
N, D, BETA, DT, T = 64, 16, 4.0, 0.1, 50.0
STEPS = int(round(T / DT))
# The frame interval of a run without --every (run_config::frame_interval: about 100 frames).
EVERY = max(1, (STEPS + 99) // 100)
# nadyn-bench observed's batches of each kind of call (frame_evaluation()).
FRAME_REPS = 200
HEADS = (1, 8)


def attention_flops(n, d, heads, shared_values=False, value_projection=True,
                    query_projection=True):
    """The attention's flops per evaluation of the algorithm nadyn runs (docs/performance.md,
    "The rooflines"): per head the logits, 2 n^2 d, against the tokens as keys, with the
    queries projected by K^T Q (Q folded into K: one projection, 2 n d^2, for two; none without
    Q and K); the value product, 2 n^2 d, and the values' projection, 2 n d^2 (none when
    V = s I), per head, or once when the heads share their values (their weights summed before
    the product). The softmax (exponentials, normalisation, the heads' sum of weights) is not
    counted. nadyn's attention_flops() (include/nadyn/model/attention.hpp) is this count, and
    `nadyn sweep --dry-run`'s work (tests/unit/sweep_plan_flops.cpp checks the same values)."""
    values = 2.0 * n * n * d + (2.0 * n * d * d if value_projection else 0.0)
    per_head = 2.0 * n * n * d + (2.0 * n * d * d if query_projection else 0.0)
    return heads * per_head + (values if shared_values else heads * values)


def flops(runs, heads, steps=STEPS):
    """The case's attention flops: Gaussian Q, K, V per head, so every head its own values."""
    return runs * steps * attention_flops(N, D, heads)


# The names of the GEMM rates per arithmetic (gemm_rate()).
RATE_NAMES = {
    "double": ("Eigen (nadyn-bench gemm, 2 threads)", "NumPy BLAS (2 threads)"),
    "float": ("Eigen float (nadyn-bench gemm --precision float, 2 threads)",
              "NumPy BLAS float32 (2 threads)"),
}


def gemm_rate(build, peer_env=None, precision="double"):
    """GEMM rates (flop/s) in the arithmetic nadyn runs (`precision`: double, or float for
    --precision float): Eigen in nadyn-bench (when built), and NumPy under peer_env (its
    BLAS)."""
    eigen, numpy_name = RATE_NAMES[precision]
    rates = {}
    bench = os.path.join(build, "bin", "nadyn-bench")
    if os.path.exists(bench):
        out = subprocess.run([bench, "gemm", "--size", "1024", "--reps", "5", "--threads", "2",
                              "--precision", precision],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            record = json.loads(line)
            rates[eigen] = record["gflops"] * 1e9
    dtype = "float64" if precision == "double" else "float32"
    code = ("import numpy, time\n"
            f"a = numpy.random.rand(1024, 1024).astype(numpy.{dtype}); "
            f"b = numpy.random.rand(1024, 1024).astype(numpy.{dtype}); a @ b\n"
            "best = min((lambda t: (a @ b, time.perf_counter() - t)[1])(time.perf_counter()) "
            "for _ in range(5))\n"
            "print(2 * 1024 ** 3 / best)\n")
    env = peer_env if peer_env is not None else blas.peer_env("")
    out = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    rates[numpy_name] = float(out.strip())
    return rates


def best_rates(measure, times=5, pause=1.0):
    """The fastest of `times` measurements of each rate (measure() returns {name: rate} or a
    rate), `pause` seconds apart: on a host whose speed varies (GEMM rates of 87 to 140
    GFLOP/s within half a minute on this 2-core VM) one measurement may fall in a slow
    moment, and a roofline or floor is a lower bound of a run's time only at the best rate
    the machine was seen to reach."""
    found = None
    for attempt in range(times):
        if attempt:
            time.sleep(pause)
        rates = measure()
        if rates is None:
            return None
        if not isinstance(rates, dict):
            found = rates if found is None else max(found, rates)
            continue
        found = dict(rates) if found is None else {
            name: max(found.get(name, 0.0), rate) for name, rate in rates.items()}
    return found


def exp_rate(build, precision="double"):
    """Exponentials per second, 2 threads, of nadyn's own vectorised exponential on rows of
    N values (nadyn-bench exp: each row copied in, then exponentiated in place, in L1), in
    the arithmetic nadyn runs; None without nadyn-bench. With it, softmax_floor()."""
    bench = os.path.join(build, "bin", "nadyn-bench")
    if not os.path.exists(bench):
        return None
    out = subprocess.run([bench, "exp", "--count", str(N), "--reps", "7", "--threads", "2",
                          "--precision", precision],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])["per_second"]


def softmax_exponentials(n, heads):
    """The exponentials of the softmax per evaluation: one per head, query and key, H n^2
    (no mask). The rooflines do not count them; an exact softmax cannot skip one."""
    return heads * n * n


def softmax_floor(flops_total, exponentials_total, gemm, exp_per_second):
    """The roofline plus the softmax's exponentials at nadyn's exponential rate alone: a
    floor under any run that computes the same flops at the GEMM rate and the same
    exponentials as fast as nadyn's exponential runs on its own (seconds)."""
    return flops_total / gemm + exponentials_total / exp_per_second


def time_experiment(nadyn, text, workdir, name):
    toml = os.path.join(workdir, name + ".toml")
    with open(toml, "w") as f:
        f.write(text)
    out = os.path.join(workdir, name + ".h5")
    start = time.perf_counter()
    subprocess.run([nadyn, "sweep", toml, "--out", out, "--force", "--quiet"], check=True,
                   capture_output=True)
    seconds = time.perf_counter() - start
    os.remove(out)
    return seconds


def time_sweep(nadyn, runs, heads, workdir, observables=None):
    return time_experiment(nadyn, sweep_text(runs, heads, observables), workdir,
                           f"ensemble_h{heads}")


def sweep_text(runs, heads, observables=None):
    """The ensemble as a TOML experiment; observables=None records the default set."""
    recorded = "" if observables is None else f'observables = "{observables}"\n'
    return f"""[run]
scheme = "pre-ln"
n = {N}
d = {D}
heads = {heads}
beta = {BETA}
T = {T}
dt = {DT}
integrator = "euler"
weights = "random"
positions = "none"
{recorded}[sweep]
seed = {{ range = [1, {runs}] }}
"""


# The sweep of the issue as a user writes it: 10 betas x 8 seeds x 2 schemes.
ISSUE_SWEEP = f"""[run]
scheme = "pre-ln"
n = {N}
d = {D}
T = {T}
dt = {DT}
integrator = "euler"
weights = "gaussian"
[sweep]
beta = {{ linspace = [0.1, 15, 10] }}
seed = {{ range = [1, 8] }}
scheme = ["pre-ln", "peri-ln"]
"""


def time_processes(nadyn, runs, workdir):
    def one(seed):
        subprocess.run([nadyn, "simulate", "--scheme", "pre-ln", "--n", str(N), "--d", str(D),
                        "--beta", str(BETA), "--T", str(T), "--dt", str(DT), "--integrator",
                        "euler", "--weights", "random", "--seed", str(seed), "--positions",
                        "none", "--threads", "1", "--quiet", "--force", "--out",
                        os.path.join(workdir, f"run{seed}.h5")],
                       check=True, capture_output=True)
        os.remove(os.path.join(workdir, f"run{seed}.h5"))
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, range(1, runs + 1)))
    return time.perf_counter() - start


def seconds(wall):
    """A nadyn program's run for timing.alternate: (wall seconds, the same)."""
    return wall, wall


def peer_seconds(record):
    """A peer's run for timing.alternate: (its seconds, its record); a failed run counts as
    infinitely slow, and is never the best."""
    return (record["seconds"], record) if record else (float("inf"), None)


def time_peer(batch, steps, heads, env):
    result = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "peers", "ensemble_peer.py"),
                             "--batch", str(batch), "--steps", str(steps), "--heads", str(heads),
                             "--threads", "2"],
                            capture_output=True, text=True, env=env)
    if result.returncode != 0:
        return None
    record = json.loads(result.stdout.strip().splitlines()[-1])
    record.update(batch=batch, steps=steps, heads=heads)
    return record


# The parts of an 8-head run, each the sum of its functions' self times (the call graph of an
# optimised build, without frame pointers, loses callers: "a function and its callees" came
# out smaller than one of its callees).
ATTENTION = ("nadyn::attention_kernel::compute_rows", "nadyn::detail::add_rows",
             "nadyn::detail::exp_shifted_row", "nadyn::detail::exp_shifted_row_entropy",
             "nadyn::detail::add_weighted_values_pair<2ul>",
             "nadyn::detail::project_rows<2ul>", "nadyn::detail::transpose_small_n_keys",
             "nadyn::detail::logits_pair", "nadyn::detail::add_weighted_values_any",
             "nadyn::detail::add_rows_shared_values")
PARTS = [("the attention (self time of `compute_rows` and the small-n loops: `add_rows`, "
          "`exp_shifted_row`, `exp_shifted_row_entropy`, `add_weighted_values_pair`, "
          "`project_rows`, `transpose_small_n_keys`), the frames' evaluations included", ATTENTION),
         ("the frames' attention entropy beyond the sums it takes in the frame rows' pass over "
          "their exponentials (`exp_shifted_row_entropy`, counted in the attention): the top "
          "key's index (`first_index_of`), `entropies_of_sums` and libm's `log`",
          ("nadyn::detail::first_index_of", "nadyn::detail::entropies_of_sums",
           "__ieee754_log_fma", "__ieee754_log", "__log1p_fma", "__log1p")),
         ("the exponentials of the softmax rows (`exp_shifted_row`, and at the frames "
          "`exp_shifted_row_entropy` with the entropy's sums)",
          ("nadyn::detail::exp_shifted_row", "nadyn::detail::exp_shifted_row_entropy"))]


def profile_sweep(nadyn, runs, heads):
    """perf's profile of a `nadyn sweep` of the case with `heads` heads (self time per
    function, and the parts' totals), or None without perf."""
    def command(work):
        toml = os.path.join(work, "profile.toml")
        with open(toml, "w") as f:
            f.write(sweep_text(runs, heads))
        return [nadyn, "sweep", toml, "--out", os.path.join(work, "profile.h5"), "--quiet"]
    return perf_profile(command, rows_wanted=10, children=[(name, symbol) for name, symbol in PARTS])


def frame_evaluation(build, heads):
    """nadyn-bench observed's record for the case's n, d and `heads` (a frame's evaluation of
    the attention, which takes each row's entropy too, against a plain one, one thread), or
    None without nadyn-bench."""
    bench = os.path.join(build, "bin", "nadyn-bench")
    if not os.path.exists(bench):
        return None
    out = subprocess.run([bench, "observed", "--n", str(N), "--d", str(D), "--heads",
                          str(heads), "--reps", str(FRAME_REPS)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def frame_evaluation_line(record, heads):
    """One sentence on nadyn-bench observed's record (frame_evaluation())."""
    return (f"A frame's evaluation of the attention, which also takes each row's entropy, took "
            f"{record['observed_seconds'] * 1e6:.1f} us against {record['plain_seconds'] * 1e6:.1f}"
            f" us for a plain one: {100 * record['overhead']:.0f}% more (`nadyn-bench observed "
            f"--n {N} --d {D} --heads {heads}`, one thread, medians of {FRAME_REPS} interleaved "
            f"batches). "
            f"With a frame every {EVERY} steps and every evaluation alike, that is "
            f"{100 * record['overhead'] / EVERY:.0f}% of the dynamics.")


def profile_lines(profile, ratio, heads=8, frame=None):
    """Where a run's time goes; with 8 heads, what would bring it within 2x of the
    roofline. frame: nadyn-bench observed's record (frame_evaluation()), or None."""
    if not profile:
        return [f"perf is not available here: no profile of the {heads}-head run.", ""] + (
            [frame_evaluation_line(frame, heads), ""] if frame else [])
    rows, parts = profile
    lines = [f"## Where a{'n' if heads == 8 else ''} {heads}-head run's time goes", "",
             f"`perf record` of `nadyn sweep` over the {heads}-head case (a quarter of the runs, "
             "side by side as above): each part's share, the sum of its functions' self times, "
             "then self time per function.", "", "| share | part |", "|---|---|"]
    for share, name in parts:
        lines.append(f"| {'?' if share is None else f'{share:.1f}%'} | {name} |")
    lines += ["", "| share | function |", "|---|---|"]
    for share, symbol in rows or []:
        lines.append(f"| {share:.1f}% | `{symbol}` |")
    attention, observed, exponentials = (share or 0.0 for share, _ in parts)
    # The 2x target is the 8-head run's: only its profile says what the target asks.
    within_2x = ""
    if heads == 8:
        within_2x = (" Within 2x, as here, means everything beyond the attention's flops costs "
                     "less than the flops themselves." if ratio <= 2.0 else
                     " Within 2x needs everything beyond the attention's flops to cost less "
                     "than the flops themselves.")
    if attention:
        # The attention against its flops (the roofline counts only those).
        alone = ratio * attention / 100.0
        without_exp = ratio * (attention - exponentials) / 100.0
        lines += [
            "",
            f"The whole run is {ratio:.2f}x its roofline. The "
            f"attention alone is {alone:.2f}x, {without_exp:.2f}x without its exponentials "
            f"(n^2 = {N * N} per head and evaluation, which the roofline does not count: each "
            f"costs about 15 vector operations per 8 values against 2 d = {2 * D} flops per "
            f"logit; the roofline counts the two projections the folded heads make, the "
            f"queries' by K^T Q and the values'); "
            f"the frames' attention entropy beyond its sums (about 100 frames, taken inside "
            f"the frames' evaluations) adds {observed:.0f}% of the run and the rest (the step, "
            f"the rates, the frames' other observables, the file) "
            f"{max(100.0 - attention - observed, 0.0):.0f}%." + within_2x,
        ]
    if frame:
        lines += ["", frame_evaluation_line(frame, heads)]
    return lines + [""]


# The sweep issue's targets against the 8-head peer: (size, ratio).
PEER_GOALS = (("large", 40.0), ("small", 15.0))


def shortfall_lines(sweep, dynamics, peers, processes, runs, process_runs, rate,
                    attention_1=None):
    """For a target not met: the time nadyn would need, against its roofline and against
    the dynamics alone. attention_1: the attention's share (percent) of the 1-head sweep in
    its profile, to say what the 1-head target leaves for the rest of the run."""
    lines = []

    def need(heads, seconds, goal):
        roofline = flops(runs, heads) / rate
        return (f"{goal:.0f}x needs the {runs} runs in {seconds:.2f} s: {seconds / roofline:.2f}x "
                f"their roofline, where the dynamics alone take {dynamics[heads]:.2f} s "
                f"({dynamics[heads] / roofline:.2f}x) and the frames of the default observables "
                f"{sweep[heads] - dynamics[heads]:.2f} s more")
    for size, goal in PEER_GOALS:
        peer = peers.get((8, size))
        if peer is None:
            continue
        per_run_step = peer["seconds"] / (peer["batch"] * peer["steps"])
        goal_time = per_run_step * runs * STEPS / goal
        if sweep[8] > goal_time:
            lines.append(f"- 8 heads against the peer at batch {peer['batch']} x "
                         f"{peer['steps']} steps: {need(8, goal_time, goal)}.")
    per_process = processes / process_runs
    goal_time = per_process * runs / 10.0
    if sweep[1] > goal_time:
        line = (f"- 1 head against separate processes ({1e3 * per_process:.1f} ms of wall "
                f"clock a process, two at a time): {need(1, goal_time, 10.0)}.")
        if attention_1:
            # The attention's kernels (flops and exponentials) as the profile measures them:
            # what the target leaves for the Euler steps, the frames and the files.
            attention = sweep[1] * attention_1 / 100.0
            rest = sweep[1] - attention
            left = goal_time - attention
            line += (f" The attention's kernels, their flops and exponentials, take "
                     f"{attention:.2f} s of the sweep ({attention_1:.0f}% in the 1-head profile "
                     f"below, {attention / (flops(runs, 1) / rate):.2f}x the roofline); "
                     + (f"the target leaves {left:.2f} s for everything else (the Euler steps, "
                        f"every frame's observables, the {runs} runs' files), which takes "
                        f"{rest:.2f} s now: {rest / left:.1f}x less would be needed."
                        if left > 0 else
                        "they alone take longer than the target allows."))
        lines.append(line)
    if lines:
        lines = ["What the targets not met would take:", ""] + lines + [""]
    return lines


def binding_lines(peers, rate):
    """What the binding target, 2x of the roofline, means against the peer measured here.

    The sweep issue derived its peer ratios from that target and the peer it measured then
    (40x at batch 512, where that peer was memory-bound); the peer's distance from the
    roofline depends on the machine and on its BLAS, so the ratio the roofline target implies
    is recomputed here."""
    lines = []
    for size, goal in PEER_GOALS:
        peer = peers.get((8, size))
        if peer is None:
            continue
        distance = peer["seconds"] / (flops(peer["batch"], 8, peer["steps"]) / rate)
        lines.append(f"- At batch {peer['batch']} x {peer['steps']} steps the 8-head peer is "
                     f"{distance:.1f}x its roofline here, so 2x of the roofline is "
                     f"{distance / 2:.1f}x the peer (2x of the roofline is the issue's "
                     f"{goal:.0f}x only against a peer {2 * goal:.0f}x from its roofline).")
    if not lines:
        return []
    return ["The sweep issue's binding target is 2x of the roofline; it set the peer ratios "
            "from the peer it measured then:", ""] + lines + [""]


def attention_share(profile):
    """The attention's share (percent) of a profile_sweep() profile, its first part; None
    without a profile."""
    return profile[1][0][0] if profile else None


def verdict(ok, *figures):
    """"met" or "not met", "(unreliable)" added when a timing behind it is (bench/timing.py)."""
    shaky = any(not f.reliable for f in figures)
    return verdict_word(ok) + (" (unreliable)" if shaky else "")


def verdict_word(ok):
    return "met" if ok else "not met"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--openblas", default=None,
                        help="directory of OpenBLAS's libblas.so.3 for the peer (default: the "
                        "one scripts/benchmark.sh fetches into BUILD/bench-openblas)")
    parser.add_argument("--repeats", type=int, default=timing.MIN_REPEATS,
                        help="runs of each program, alternating; each is reported by its best "
                        f"(default and minimum for a trusted figure: {timing.MIN_REPEATS})")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    openblas = blas.default_openblas(args.build) if args.openblas is None else args.openblas
    peer_env = blas.peer_env(openblas)
    peer_blas = blas.describe_peer(peer_env, os.path.dirname(HERE))
    nadyn = os.path.join(args.build, "bin", "nadyn")
    runs = 128 if args.quick else 512
    process_runs = 64 if args.quick else 512
    # The peer's (batch, steps) per comparison; --quick shortens the runs, not the batch.
    peer_large = {1: (runs, 100 if args.quick else STEPS), 8: (runs, 10 if args.quick else STEPS)}
    peer_small = {1: (64, 200), 8: (64, 40 if args.quick else 200)}
    flags = provenance.checked_version(nadyn, os.path.dirname(HERE))
    load = timing.load_before(1.0)

    rates = best_rates(lambda: gemm_rate(args.build, peer_env))
    best_rate = max(rates.values())
    exps_rate = best_rates(lambda: exp_rate(args.build))
    # Every program runs args.repeats times, the programs alternating (bench/timing.py);
    # each figure below is its best run, with the spread and the load before it.
    programs = {}
    with tempfile.TemporaryDirectory() as workdir:
        for heads in HEADS:
            programs[f"sweep {heads}"] = lambda heads=heads: seconds(
                time_sweep(nadyn, runs, heads, workdir))
            programs[f"dynamics {heads}"] = lambda heads=heads: seconds(
                time_sweep(nadyn, runs, heads, workdir, observables="none"))
        programs["processes"] = lambda: seconds(time_processes(nadyn, process_runs, workdir))
        programs["issue sweep"] = lambda: seconds(
            time_experiment(nadyn, ISSUE_SWEEP, workdir, "issue_sweep"))
        shapes = {(heads, "large"): peer_large[heads] for heads in HEADS}
        shapes.update({(heads, "small"): peer_small[heads] for heads in HEADS})
        peer_ran = {}
        for key, (batch, steps) in shapes.items():
            # A peer that cannot run (no python3-torch) is tried once, not args.repeats times.
            peer_ran[key] = time_peer(batch, steps, key[0], peer_env)
            if peer_ran[key] is not None:
                programs[f"peer {key[0]} {key[1]}"] = (
                    lambda key=key: peer_seconds(time_peer(*shapes[key], key[0], peer_env)))
        timings = timing.alternate(programs, args.repeats)
    sweep = {heads: timings[f"sweep {heads}"].best for heads in HEADS}
    dynamics = {heads: timings[f"dynamics {heads}"].best for heads in HEADS}
    processes = timings["processes"].best
    issue_sweep = timings["issue sweep"].best
    peers = {key: (timings[f"peer {key[0]} {key[1]}"].result if peer_ran[key] else None)
             for key in shapes}
    profiles = {heads: profile_sweep(nadyn, max(runs // 4, 16), heads) for heads in HEADS}
    frames = {heads: frame_evaluation(args.build, heads) for heads in HEADS}

    def nadyn_time(heads, batch, steps):  # nadyn's time for the same work, from its rate
        return sweep[heads] / (runs * STEPS) * batch * steps

    lines = [
        "# Ensembles of small runs",
        "",
        f"Generated by `/usr/bin/python3 bench/ensemble.py --build build --out results/ensemble.md"
        f"{' --quick' if args.quick else ''}` on {time.strftime('%Y-%m-%d')} ({flags}); other "
        f"processes kept {load:.2f} cores busy at the start. Do not edit by hand.",
        "",
        f"Case: pre-ln, n = {N}, d = {D}, beta = {BETA:g}, 1 and 8 heads, Gaussian Q, K, V per "
        f"run and head, explicit Euler dt = {DT:g}, T = {T:g} ({STEPS} steps), {runs} runs "
        f"(seeds 1..{runs}); 2 cores. Roofline: the attention flops of the algorithm the runs "
        "take (Q folded into K: one projection of the queries, the keys the tokens; each head "
        "its own values: H (4 n^2 d + 4 n d^2) per evaluation, docs/performance.md) at the "
        "double GEMM rate measured in the same run.",
        "",
        f"The peer (PyTorch) and NumPy run with 2 threads and {peer_blas}, as mapped by "
        "their interpreter: the system's libblas.so.3 does not decide (bench/blas.py).",
        "",
        "| GEMM rate (1024 x 1024, 2 threads; the best of 5 measurements 1 s apart) | GFLOP/s |",
        "|---|---|",
    ]
    for name, rate in rates.items():
        lines.append(f"| {name} | {rate / 1e9:.1f} |")
    lines += [
        "",
        f"Each program ran {args.repeats} time{'s' if args.repeats != 1 else ''}, alternating "
        f"with the others; `seconds` is its "
        f"best run, `runs` the range and spread of its runs and the load ({timing.LOAD_MEANING}), "
        f"UNRELIABLE when a load was above {timing.RELIABLE_LOAD} or the spread "
        f"above {100 * timing.RELIABLE_SPREAD:.0f}% (bench/timing.py).",
        "",
        "| heads | what | seconds | runs | vs nadyn sweep | vs roofline |",
        "|---|---|---|---|---|---|",
    ]
    # Each head count's exponentials and floor (the roofline plus them), once.
    exponentials = {heads: runs * STEPS * softmax_exponentials(N, heads) for heads in HEADS}
    floors = {heads: softmax_floor(flops(runs, heads), exponentials[heads], best_rate,
                                   exps_rate) for heads in HEADS} if exps_rate else {}
    for heads in HEADS:
        roofline = flops(runs, heads) / best_rate
        lines.append(f"| {heads} | roofline ({flops(runs, heads) / 1e12:.3f} TFLOP at "
                     f"{best_rate / 1e9:.1f} GFLOP/s) | {roofline:.2f} | | | 1.0x |")
        if floors:
            floor = floors[heads]
            lines.append(
                f"| {heads} | floor: the roofline plus the softmax's {exponentials[heads] / 1e9:.2f}e9 "
                f"exponentials (H n^2 per evaluation) at nadyn's exponential rate alone, "
                f"{exps_rate / 1e9:.2f}e9/s (nadyn-bench exp, 2 threads) | {floor:.2f} | | | "
                f"{floor / roofline:.2f}x |")
        lines += [
            f"| {heads} | `nadyn sweep`, {runs} runs (one process, whole-process time) | "
            f"{sweep[heads]:.2f} | {timings[f'sweep {heads}'].text()} | 1.0x | "
            f"{sweep[heads] / roofline:.1f}x |",
            f"| {heads} | the same without observables (`observables = \"none\"`: the "
            f"dynamics and the file) | {dynamics[heads]:.2f} | "
            f"{timings[f'dynamics {heads}'].text()} | "
            f"{dynamics[heads] / sweep[heads]:.2f}x | {dynamics[heads] / roofline:.1f}x |",
        ]
        if heads == 1:
            same = nadyn_time(1, process_runs, STEPS)
            lines.append(
                f"| 1 | {process_runs} `nadyn simulate` processes, two at a time | "
                f"{processes:.2f} | {timings['processes'].text()} | {processes / same:.1f}x slower | "
                f"{processes / (flops(process_runs, 1) / best_rate):.1f}x |")
        for size in ("large", "small"):
            peer = peers[(heads, size)]
            if peer is None:
                lines.append(f"| {heads} | PyTorch batched peer | not run: python3-torch is not "
                             "installed | | | |")
                continue
            same = nadyn_time(heads, peer["batch"], peer["steps"])
            peer_roofline = flops(peer["batch"], heads, peer["steps"]) / best_rate
            lines.append(
                f"| {heads} | PyTorch batched peer, batch {peer['batch']} x {peer['steps']} steps "
                f"(float64, 2 threads, torch {peer['torch']}) | {peer['seconds']:.2f} | "
                f"{timings[f'peer {heads} {size}'].text()} | "
                f"{peer['seconds'] / same:.1f}x slower | {peer['seconds'] / peer_roofline:.1f}x |")
    lines += [
        "",
        f"The sweep of the issue (10 betas x 8 seeds x 2 schemes = 160 runs, one head, Gaussian "
        f"weights, final positions kept), `nadyn sweep` whole-process time: {issue_sweep:.2f} s "
        f"({timings['issue sweep'].text()}).",
        "",
        "Targets of the sweep issue (equal work; --quick extrapolates from shorter runs):",
        "",
        "| target | measured | |",
        "|---|---|---|",
    ]
    roofline_8 = sweep[8] / (flops(runs, 8) / best_rate)
    numpy_rate = rates["NumPy BLAS (2 threads)"]
    floor_8 = ""
    if floors:
        floor_8 = (f"; {sweep[8] / floors[8]:.2f}x the floor with the softmax's exponentials "
                   f"(the dynamics alone: {dynamics[8] / floors[8]:.2f}x)")
    lines.append(f"| 8 heads within 2x of the roofline | {roofline_8:.1f}x at the fastest GEMM "
                 f"rate measured ({best_rate / 1e9:.0f} GFLOP/s); "
                 f"{sweep[8] / (flops(runs, 8) / numpy_rate):.1f}x at NumPy's BLAS rate "
                 f"({numpy_rate / 1e9:.0f} GFLOP/s){floor_8} | "
                 f"{verdict(roofline_8 <= 2.0, timings['sweep 8'])} |")
    for size, goal in PEER_GOALS:
        peer = peers[(8, size)]
        if peer is None:
            continue
        ratio = peer["seconds"] / nadyn_time(8, peer["batch"], peer["steps"])
        what = ("batch 512" if size == "large" else "batch 64 x 200 steps")
        measured = f"batch {peer['batch']} x {peer['steps']} steps"
        lines.append(f"| 8 heads, at least {goal:.0f}x the peer at {what} | {ratio:.1f}x "
                     f"(peer at {measured}) | "
                     f"{verdict(ratio >= goal, timings['sweep 8'], timings[f'peer 8 {size}'])} |")
    ratio = processes / nadyn_time(1, process_runs, STEPS)
    lines += [
        f"| 1 head, at least 10x faster than separate processes | {ratio:.1f}x | "
        f"{verdict(ratio >= 10.0, timings['processes'], timings['sweep 1'])} |",
        f"| the 160-run sweep under 5 s | {issue_sweep:.2f} s | {verdict(issue_sweep < 5.0, timings['issue sweep'])} |",
        "",
    ]
    attention_1 = attention_share(profiles[1])
    lines += shortfall_lines(sweep, dynamics, peers, processes, runs,
                             process_runs, best_rate, attention_1)
    lines += binding_lines(peers, best_rate)
    for heads in (8, 1):
        lines += profile_lines(profiles[heads], sweep[heads] / (flops(runs, heads) / best_rate),
                               heads, frames[heads])
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
