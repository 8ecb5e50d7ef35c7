#!/usr/bin/python3
"""How long any nadyn command takes before it works: `nadyn --version`, `nadyn inspect` of a
small file and a run of a few steps, medians of repeated launches, beside /bin/true (the
cost of a process), with the shared libraries the loader maps. The issue's target: under
15 ms when not launched by mpirun.

    /usr/bin/python3 bench/startup.py --build build --out results/startup.md
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def launch_seconds(command, repeats):
    """Median and minimum wall time of `repeats` launches (after one warm-up)."""
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def shared_libraries(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if "=>" in line or "ld-linux" in line]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--out", default="results/startup.md")
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    nadyn = os.path.abspath(os.path.join(args.build, "bin", "nadyn"))
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "small.h5")
        subprocess.run([nadyn, "simulate", "--n", "64", "--d", "8", "--T", "20", "--out", small,
                        "--quiet"], check=True, stdout=subprocess.DEVNULL)
        tiny = os.path.join(tmp, "tiny.h5")
        commands = [
            ("/bin/true (a process)", ["/bin/true"]),
            ("nadyn --version", [nadyn, "--version"]),
            ("nadyn inspect (n = 64, 101 frames)", [nadyn, "inspect", small]),
            ("nadyn simulate (n = 8, d = 3, 10 steps, 11 frames)",
             [nadyn, "simulate", "--n", "8", "--d", "3", "--T", "0.1", "--out", tiny, "--force",
              "--quiet"]),
        ]
        rows = [(name, *launch_seconds(command, args.repeats)) for name, command in commands]
    libraries = shared_libraries(nadyn)
    load = os.getloadavg()[0]
    lines = [
        "# Start-up",
        "",
        f"Made by `/usr/bin/python3 bench/startup.py --build {args.build} --out {args.out}` "
        f"(run by `bash scripts/benchmark.sh`); {args.repeats} launches each after one warm-up, "
        f"on {os.cpu_count()} cores, 1-minute load average {load:.2f} at the end"
        + (" (a loaded machine: the figures are high)" if load > 0.5 else "") + ".",
        "",
        "| command | median (ms) | fastest (ms) |",
        "|---|---|---|",
    ]
    for name, median, fastest in rows:
        lines.append(f"| {name} | {1e3 * median:.1f} | {1e3 * fastest:.1f} |")
    version = next(median for name, median, _ in rows if name == "nadyn --version")
    inspect = next(median for name, median, _ in rows if name.startswith("nadyn inspect"))
    lines += [
        "",
        f"The program maps {len(libraries)} shared libraries. HDF5 is linked statically "
        "(CMakeLists.txt, `NADYN_STATIC_HDF5`): its shared library brings about 30 more "
        "(libcurl, TLS, Kerberos, LDAP) whose loading took 6 ms of every start.",
        "",
        f"Target (issue 25): a command under 15 ms when not launched by mpirun: "
        f"`--version` {1e3 * version:.1f} ms, `inspect` {1e3 * inspect:.1f} ms: "
        + ("met." if max(version, inspect) < 0.015 else "not met."),
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
