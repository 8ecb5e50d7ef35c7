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

Then each standard observable alone (`--observables NAME`, a frame at every step) at both
sizes (n = 1024, d = 64, 1 head, as above; n = 64, d = 16, the 8-head ensemble), against a
frame recording nothing but step_size (`--observables none`): what recording it adds to a
frame, in steps of the run; the default set and `--observables none --observe pair_density`
(a peer's metric alone) against a step of the same run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing  # noqa: E402  (bench/timing.py: the load other processes put on the machine)

# Optional observables timed one by one; unselectable solves n linear programs per frame and
# is timed at its own, smaller size below.
OPTIONAL = ["pair_change", "angle", "log_energy", "effective_rank", "pair_density", "modes"]
RUN = dict(n=1024, d=64, beta=4.0, dt=0.01, steps=100, scheme="pre-ln")
ENSEMBLE = dict(n=64, d=16, beta=4.0, dt=0.1, T=50.0, heads=8, steps=500)


# The standard observables (src/model/observable_table.cpp), timed one by
# one; step_size is recorded by every run, so `none` is the baseline frame.
STANDARD = ["mean_cos", "gap", "velocity", "variance", "displacement", "r_mean", "r_min", "r_max",
            "min_cos", "clusters", "norm_error", "step_error", "argmax_flips",
            "attention_entropy"]


def run_command(nadyn, out, every, observe, observables="all", steps=None):
    steps = steps or RUN["steps"]
    return [nadyn, "simulate", "--scheme", RUN["scheme"], "--n", str(RUN["n"]), "--d",
            str(RUN["d"]), "--beta", str(RUN["beta"]), "--dt", str(RUN["dt"]), "--T",
            str(RUN["dt"] * steps), "--every", str(every), "--positions", "none",
            "--observe", observe, "--observables", observables, "--seed", "1", "--threads", "2",
            "--quiet", "--force", "--out", out]


def ensemble_text(runs, every, observe, observables="all", T=None):
    observe_text = ",".join(observe) or "none"
    T = T or ENSEMBLE["T"]
    return f"""[run]
scheme = "pre-ln"
n = {ENSEMBLE['n']}
d = {ENSEMBLE['d']}
heads = {ENSEMBLE['heads']}
beta = {ENSEMBLE['beta']}
T = {T}
dt = {ENSEMBLE['dt']}
integrator = "euler"
weights = "random"
positions = "none"
every = {every}
observe = "{observe_text}"
observables = "{observables}"
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


def each_observable(nadyn, work, runs, repeats, steps, ensemble_steps):
    """Per standard observable, what recording it alone adds to a frame (a frame at every
    step), in steps of the run, against a frame of step_size only; and the default set and
    pair_density alone likewise, against a step."""
    variants = {"single": {}, "ensemble": {}}
    out = os.path.join(work, "each.h5")
    single = variants["single"]
    single["ends"] = run_command(nadyn, out, steps, "none", "all", steps)
    single["none"] = run_command(nadyn, out, 1, "none", "none", steps)
    single["default set"] = run_command(nadyn, out, 1, "none", "all", steps)
    single["pair_density only"] = run_command(nadyn, out, 1, "pair_density", "none", steps)
    for name in STANDARD:
        single[name] = run_command(nadyn, out, 1, "none", name, steps)
    ens = variants["ensemble"]
    T = ENSEMBLE["dt"] * ensemble_steps

    def sweep(label, every, observe, observables):
        toml = os.path.join(work, f"each_{label.replace(' ', '_')}.toml")
        with open(toml, "w") as f:
            f.write(ensemble_text(runs, every, observe, observables, T))
        return [nadyn, "sweep", toml, "--out", os.path.join(work, "each_sweep.h5"), "--force",
                "--quiet"]

    ens["ends"] = sweep("ends", ensemble_steps, [], "all")
    ens["none"] = sweep("none", 1, [], "none")
    ens["default set"] = sweep("default", 1, [], "all")
    ens["pair_density only"] = sweep("pair_density", 1, ["pair_density"], "none")
    for name in STANDARD:
        ens[name] = sweep(name, 1, [], name)
    result = {}
    for case, count in (("single", steps), ("ensemble", ensemble_steps)):
        times = median_times(variants[case], repeats)
        step = times["ends"] / count
        rows = []
        for name, t in times.items():
            if name in ("ends", "none"):
                continue
            # The default set and pair_density alone: the whole frame against a step; one
            # standard observable: what it adds to a frame of step_size only.
            base = times["ends"] if name in ("default set", "pair_density only") else times["none"]
            rows.append(dict(variant=name, seconds=t, frame_steps=(t - base) / (count - 1) / step))
        result[case] = dict(times=times, step=step, rows=rows, steps=count)
    result["runs"] = runs
    return result


def report_each(each):
    runs = each["runs"]
    L = ["", "## Each standard observable alone (`--observables NAME`)", "",
         "A frame at every step. `frame cost`: for one observable, what recording it adds to a "
         "frame that records only step_size (`--observables none`); for the default set and "
         "for `--observables none --observe pair_density`, the whole frame; in steps of the "
         "same run. min_cos and clusters share one Gram pass, argmax_flips and "
         "attention_entropy one attention pass: each alone pays for the whole pass. "
         "step_error is three steps every 20.", "",
         f"| observables | n = {RUN['n']}, d = {RUN['d']}, 1 head: frame cost (steps) | "
         f"n = {ENSEMBLE['n']}, d = {ENSEMBLE['d']}, 8 heads ({runs} runs): frame cost (steps) |",
         "|---|---|---|"]
    single = {r["variant"]: r for r in each["single"]["rows"]}
    ens = {r["variant"]: r for r in each["ensemble"]["rows"]}
    for name in ["default set", "pair_density only", *STANDARD]:
        label = name if " " in name else f"`{name}`"
        L.append(f"| {label} | {single[name]['frame_steps']:.3f} | {ens[name]['frame_steps']:.3f} |")
    return L


def report(args, single, ens, load, seconds, each=None):
    L = ["# What the observables cost at frames", "",
         f"Generated by `/usr/bin/python3 bench/observables.py --build {args.build} --out "
         f"{args.out}{' --quick' if args.quick else ''}{' --tiny' if args.tiny else ''}` on {time.strftime('%Y-%m-%d')}; "
         f"other processes kept {load:.2f} cores busy at the start; {seconds:.0f} s. Do not edit by hand.", "",
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
    if each:
        L += report_each(each)
    L.append("")
    return "\n".join(L)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="the build directory (bin/nadyn)")
    parser.add_argument("--out", required=True, help="the report (Markdown; .json beside it)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats and runs (a few minutes)")
    parser.add_argument("--tiny", action="store_true",
                        help="a check that the script works: one repeat, few steps and runs "
                             "(figures meaningless)")
    args = parser.parse_args()
    nadyn = os.path.join(args.build, "bin", "nadyn")
    if not os.access(nadyn, os.X_OK):
        print(f"bench/observables.py: no nadyn in {args.build}/bin (build it first)",
              file=sys.stderr)
        return 2
    load = timing.load_before(1.0)
    start = time.perf_counter()
    repeats = 1 if args.tiny else 3 if args.quick else 5
    runs = 2 if args.tiny else 32 if args.quick else 128
    if args.tiny:
        RUN.update(n=128, d=16, steps=10)
        ENSEMBLE.update(T=10.0, steps=100)
    with tempfile.TemporaryDirectory() as work:
        single = single_run(nadyn, work, repeats)
        ens = ensemble(nadyn, work, runs, repeats)
        each = each_observable(nadyn, work, 2 if args.tiny else 8 if args.quick else 32, repeats,
                               RUN["steps"], 20 if args.tiny else 100)
    seconds = time.perf_counter() - start
    text = report(args, single, ens, load, seconds, each)
    with open(args.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(dict(single=single, ensemble=ens, each=each, load=load, seconds=seconds), f,
                  indent=1)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
