#!/usr/bin/python3
"""How long any nadyn command takes before it works: `nadyn --version`, `nadyn inspect` of a
small file and a run of a few steps beside /bin/true (the cost of a process), with the shared
libraries the loader maps; and a small run of 5000 steps as a whole process against the time
it reports for itself (issue 38 item 4: at most 1.5x). The commands alternate, each is
reported by its best launch with its spread and the load before it (bench/timing.py), marked
unreliable when that load or the spread was too high. The issue's target for the commands:
under 15 ms when not launched by mpirun.

    /usr/bin/python3 bench/startup.py --build build --out results/startup.md
    /usr/bin/python3 bench/startup.py --build build --compare /tmp/nadyn-before

--compare times an earlier nadyn binary's 5000-step run alternately with the build's, for a
before/after of a change.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing  # noqa: E402  (bench/timing.py: best of alternating runs, spread, load)

# 5000 RK4 steps of a small run (n = 32, d = 3, dt = 0.01), as benchmark.py's whole-process
# case; 101 frames.
SMALL_RUN = ["simulate", "--n", "32", "--d", "3", "--T", "50"]
PROCESS_TARGET = 1.5


def launch(command):
    """A program for timing.alternate: one launch, (wall seconds, stdout)."""
    def run():
        start = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, check=True)
        return time.perf_counter() - start, done.stdout
    return run


def launch_run(command, out):
    """A program for timing.alternate: one launch of a run writing `out`, (wall seconds, the
    seconds the run reports for itself, read from `out` after the launch)."""
    launched = launch(command)

    def run():
        wall, _ = launched()
        return wall, timing.run_seconds(out)
    return run


def in_process(whole):
    """The in-process times of the runs behind `whole` (a Timing of whole-process launches),
    as a Timing of their own with the same loads."""
    inside = timing.Timing(whole.name + " (in-process)")
    inside.walls = list(whole.results)
    inside.loads = list(whole.loads)
    inside.loads_during = list(whole.loads_during)
    inside.results = list(whole.results)
    return inside


def ms_text(t):
    """`best 3.7 ms (3.7-4.1, spread 9%, load 0.21)`, UNRELIABLE with its reasons."""
    problems = t.problems()
    return (f"{1e3 * t.best:.1f} | {1e3 * min(t.walls):.1f}-{1e3 * max(t.walls):.1f} | "
            f"{100 * t.spread:.0f}% | {t.load_text().removeprefix('load ')} | "
            + ("UNRELIABLE: " + ", ".join(problems) if problems else "reliable"))


def shared_libraries(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if "=>" in line or "ld-linux" in line]


def process_ratio(whole):
    """The whole process over the time the run reports for itself, best against best
    (the in-process time of the same launches)."""
    inside = in_process(whole)
    return whole.best / inside.best, inside


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--out", default="results/startup.md")
    parser.add_argument("--repeats", type=int, default=20,
                        help="launches of each command, alternating (at least "
                             f"{timing.MIN_REPEATS} for a trusted figure)")
    parser.add_argument("--compare", default="",
                        help="an earlier nadyn binary: its 5000-step run beside the build's")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    nadyn = os.path.abspath(os.path.join(args.build, "bin", "nadyn"))
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "small.h5")
        subprocess.run([nadyn, "simulate", "--n", "64", "--d", "8", "--T", "20", "--out", small,
                        "--quiet"], check=True, stdout=subprocess.DEVNULL)
        tiny = os.path.join(tmp, "tiny.h5")
        commands = {
            "/bin/true (a process)": ["/bin/true"],
            "nadyn --version": [nadyn, "--version"],
            "nadyn inspect (n = 64, 101 frames)": [nadyn, "inspect", small],
            "nadyn simulate (n = 8, d = 3, 10 steps, 11 frames)":
                [nadyn, "simulate", "--n", "8", "--d", "3", "--T", "0.1", "--out", tiny,
                 "--force", "--quiet"],
        }
        runs = {"this build": nadyn}
        if args.compare:
            runs["--compare " + args.compare] = os.path.abspath(args.compare)
        steps = {f"5000 steps, {name}": os.path.join(tmp, f"steps{i}.h5")
                 for i, name in enumerate(runs)}
        programs = {name: launch(command) for name, command in commands.items()}
        for (name, out), binary in zip(steps.items(), runs.values()):
            programs[name] = launch_run([binary] + SMALL_RUN + ["--out", out, "--force",
                                                                "--quiet"], out)
        for program in programs.values():  # one warm-up each (page cache, binary, libraries)
            program()
        timings = timing.alternate(programs, args.repeats)
    libraries = shared_libraries(nadyn)
    lines = [
        "# Start-up",
        "",
        f"Made by `/usr/bin/python3 bench/startup.py --build {args.build} --out {args.out}` "
        f"(run by `bash scripts/benchmark.sh`); {args.repeats} launches of each command after "
        f"one warm-up, the commands alternating, on {os.cpu_count()} cores. Each is reported by "
        f"its best launch, with the range and spread of its launches and the load: "
        f"{timing.LOAD_MEANING} (bench/timing.py); marked UNRELIABLE when a load was "
        f"above {timing.RELIABLE_LOAD} or the spread above {100 * timing.RELIABLE_SPREAD:.0f}%.",
        "",
        "| command | best (ms) | range (ms) | spread | load | |",
        "|---|---|---|---|---|---|",
    ]
    for name in commands:
        lines.append(f"| {name} | {ms_text(timings[name])} |")
    version, inspect = timings["nadyn --version"], timings["nadyn inspect (n = 64, 101 frames)"]
    lines += [
        "",
        f"The program maps {len(libraries)} shared libraries. HDF5, GLPK, FFTW, szip and zlib "
        "are linked statically (CMakeLists.txt, `NADYN_STATIC_ARCHIVES`): the shared HDF5 "
        "brings about 30 more (libcurl, TLS, Kerberos, LDAP) whose loading took 6 ms of every "
        "start, and GLPK's 5 (SuiteSparse, GMP, libltdl).",
        "",
        f"Target (issue 25): a command under 15 ms when not launched by mpirun: "
        f"`--version` {1e3 * version.best:.1f} ms, `inspect` {1e3 * inspect.best:.1f} ms: "
        + ("met" if max(version.best, inspect.best) < 0.015 else "not met")
        + ("" if version.reliable and inspect.reliable else " (unreliable)") + ".",
        "",
        "## A small run as a whole process",
        "",
        f"`nadyn {' '.join(SMALL_RUN)}` (5000 RK4 steps, 101 frames, plus `--out FILE --force "
        "--quiet`), fork to exit, against the time the run reports for itself (the "
        "integration, the observables and the frames written, timed inside the process and "
        "read from the file's `wall_time_seconds`), best launch against best launch:",
        "",
        "| binary | process (ms) | in-process (ms) | process / in-process | target |",
        "|---|---|---|---|---|",
    ]
    for name in steps:
        whole = timings[name]
        ratio, inside = process_ratio(whole)
        shaky = "" if whole.reliable and inside.reliable else " (unreliable)"
        lines.append(
            f"| {name.split(', ', 1)[1]} | {1e3 * whole.best:.1f} ({100 * whole.spread:.0f}% "
            f"spread, {whole.load_text()}) | {1e3 * inside.best:.1f} | **{ratio:.2f}x**{shaky} | "
            f"{PROCESS_TARGET}x: {'met' if ratio <= PROCESS_TARGET else 'not met'} |")
    lines += [
        "",
        "Issue 38 item 4: the file is made, with its header, on a second thread while the "
        "run takes its first steps (src/experiment/frame_sink.hpp); the frames are written in "
        "blocks (up to 64 frames, 1 MiB), not one by one. The process's share beyond the run "
        "is its start, the parsing, the end of the file (SWMR close and reopen, plateaus) and "
        "the exit (docs/performance.md).",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
