"""What the observables cost at frames, measured side by side: results/observables.md.

    /usr/bin/python3 bench/observables.py --build build --out results/observables.md [--quick]

Two cases, each timed as a user runs it (whole `nadyn` processes, positions not kept, so
the file's positions do not count), the variants interleaved and the median of the repeats
taken:

- one run, n = 1024, d = 64, pre-ln, beta = 4, RK4 dt = 0.01, 100 steps, with a frame
  at every step (101 frames) against frames at the ends only (2 frames): the default
  observables, then each optional one (`--observe NAME`), then all of them but
  `unselectable` (n linear programs per frame, a cost of its own by design);
- the 8-head ensemble of bench/ensemble.py (pre-ln, n = 64, d = 16, Gaussian weights, Euler
  dt = 0.1, T = 50: 500 steps, a seed axis of runs in one `nadyn sweep`), with its default
  100 frames against 2, and with every cheap optional observable at those frames.

The observables' share of a run is (t - t_ends) / t, with t_ends the same run with frames
at the ends only; a frame's cost is also given in steps of the run (the dynamics' time per
step, from t_ends).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Optional observables timed one by one; unselectable solves n linear programs per frame and
# is timed at its own, smaller size below.
OPTIONAL = ["pair_change", "angle", "energy", "effective_rank", "pair_density", "modes"]
RUN = dict(n=1024, d=64, beta=4.0, dt=0.01, steps=100, scheme="pre-ln")
ENSEMBLE = dict(n=64, d=16, beta=4.0, dt=0.1, T=50.0, heads=8, steps=500)


def run_command(nadyn, out, every, observe):
    return [nadyn, "simulate", "--scheme", RUN["scheme"], "--n", str(RUN["n"]), "--d",
            str(RUN["d"]), "--beta", str(RUN["beta"]), "--dt", str(RUN["dt"]), "--T",
            str(RUN["dt"] * RUN["steps"]), "--every", str(every), "--positions", "none",
            "--observe", observe, "--seed", "1", "--threads", "2", "--quiet", "--force",
            "--out", out]


def ensemble_text(runs, every, observe):
    observe_list = ", ".join(f'"{o}"' for o in observe)
    return f"""[run]
scheme = "pre-ln"
n = {ENSEMBLE['n']}
d = {ENSEMBLE['d']}
heads = {ENSEMBLE['heads']}
beta = {ENSEMBLE['beta']}
T = {ENSEMBLE['T']}
dt = {ENSEMBLE['dt']}
integrator = "euler"
weights = "random"
positions = "none"
every = {every}
observe = [{observe_list}]
[sweep]
seed = {{ range = [1, {runs}] }}
"""


def timed(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def median_times(variants, repeats):
    """{name: median seconds} of commands run interleaved (a round runs every variant once),
    so that a change of the machine's load touches every variant alike."""
    seconds = {name: [] for name in variants}
    for _ in range(repeats):
        for name, command in variants.items():
            seconds[name].append(timed(command))
    return {name: statistics.median(values) for name, values in seconds.items()}


def single_run(nadyn, work, repeats):
    out = os.path.join(work, "run.h5")
    steps = RUN["steps"]
    variants = {"ends": run_command(nadyn, out, steps, "none"),
                "default": run_command(nadyn, out, 1, "none")}
    for name in OPTIONAL:
        variants[name] = run_command(nadyn, out, 1, name)
    variants["all"] = run_command(nadyn, out, 1, ",".join(OPTIONAL))
    times = median_times(variants, repeats)
    step = times["ends"] / steps
    rows = []
    for name, t in times.items():
        if name == "ends":
            continue
        extra = t - times["ends"] if name == "default" else t - times["default"]
        rows.append(dict(variant=name, seconds=t, share=(t - times["ends"]) / t,
                         frame_steps=extra / (steps - 1) / step))
    return dict(times=times, step=step, rows=rows)


def ensemble(nadyn, work, runs, repeats):
    variants = {}
    for name, every, observe in (("ends", ENSEMBLE["steps"], []), ("default", 5, []),
                                 ("all", 5, OPTIONAL)):
        toml = os.path.join(work, f"ensemble_{name}.toml")
        with open(toml, "w") as f:
            f.write(ensemble_text(runs, every, observe))
        variants[name] = [nadyn, "sweep", toml, "--out", os.path.join(work, "ensemble.h5"),
                          "--force", "--quiet"]
    times = median_times(variants, repeats)
    step = times["ends"] / ENSEMBLE["steps"]
    frames = ENSEMBLE["steps"] // 5
    rows = []
    for name in ("default", "all"):
        t = times[name]
        base = times["ends"] if name == "default" else times["default"]
        rows.append(dict(variant=name, seconds=t, share=(t - times["ends"]) / t,
                         frame_steps=(t - base) / (frames - 1) / step))
    return dict(runs=runs, times=times, rows=rows)


def report(args, single, ens, load, seconds):
    L = ["# What the observables cost at frames", "",
         f"Generated by `/usr/bin/python3 bench/observables.py --build {args.build} --out "
         f"{args.out}{' --quick' if args.quick else ''}` on {time.strftime('%Y-%m-%d')}; "
         f"load average {load:.2f} at the start; {seconds:.0f} s. Do not edit by hand.", "",
         "Whole `nadyn` processes, positions not kept, variants interleaved, medians. `share`: "
         "the observables' part of the run, (t - t_ends) / t, where t_ends is the same run with "
         "frames at the ends only. `frame cost`: one frame's observables in steps of the run "
         "(for an optional observable, what it adds to a frame of the default set).", "",
         f"## One run: n = {RUN['n']}, d = {RUN['d']}, {RUN['scheme']}, RK4, "
         f"{RUN['steps']} steps, a frame at every step", "",
         f"Frames at the ends only: {single['times']['ends']:.3f} s "
         f"({1e3 * single['step']:.2f} ms a step).", "",
         "| observables | seconds | share of the run | frame cost (steps) |",
         "|---|---|---|---|"]
    for r in single["rows"]:
        label = {"default": "default set", "all": "default + every optional one but "
                 "unselectable"}.get(r["variant"], f"default + `{r['variant']}`")
        L.append(f"| {label} | {r['seconds']:.3f} | {100 * r['share']:.1f}% | "
                 f"{r['frame_steps']:.3f} |")
    L += ["", f"## The 8-head ensemble: {ens['runs']} runs of n = {ENSEMBLE['n']}, "
          f"d = {ENSEMBLE['d']}, Euler, {ENSEMBLE['steps']} steps, 100 frames each "
          "(the default), one `nadyn sweep`", "",
          f"Frames at the ends only: {ens['times']['ends']:.3f} s.", "",
          "| observables | seconds | share of the run | frame cost (steps) |", "|---|---|---|---|"]
    for r in ens["rows"]:
        label = {"default": "default set", "all": "default + every optional one but "
                 "unselectable"}[r["variant"]]
        L.append(f"| {label} | {r['seconds']:.3f} | {100 * r['share']:.1f}% | "
                 f"{r['frame_steps']:.3f} |")
    L.append("")
    return "\n".join(L)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="the build directory (bin/nadyn)")
    parser.add_argument("--out", required=True, help="the report (Markdown; .json beside it)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats and runs (about a minute)")
    args = parser.parse_args()
    nadyn = os.path.join(args.build, "bin", "nadyn")
    if not os.access(nadyn, os.X_OK):
        print(f"bench/observables.py: no nadyn in {args.build}/bin (build it first)",
              file=sys.stderr)
        return 2
    load = os.getloadavg()[0]
    start = time.perf_counter()
    repeats = 3 if args.quick else 5
    with tempfile.TemporaryDirectory() as work:
        single = single_run(nadyn, work, repeats)
        ens = ensemble(nadyn, work, 32 if args.quick else 128, repeats)
    seconds = time.perf_counter() - start
    text = report(args, single, ens, load, seconds)
    with open(args.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(dict(single=single, ensemble=ens, load=load, seconds=seconds), f, indent=1)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
