"""Timings that one bad run cannot move (issue 38): every program of a comparison runs
`repeats` times (at least 3), the programs alternating (a, b, c, a, b, c, ...) so that a
slow stretch of the machine falls on all of them; each is reported by its best run, with the
spread of its runs and the machine's load around the best one, and marked unreliable when
that load was above RELIABLE_LOAD or the spread above RELIABLE_SPREAD.

The load is measured, not read from the load average: the 1-minute load average decays over
minutes, so before each run it still holds the previous run's threads (about 2 after a
2-thread program) and marked every figure of an otherwise idle machine unreliable. Here it
is the number of cores other processes kept busy (from /proc/stat), over the LOAD_WINDOW
seconds before the run (when the benchmark itself is idle) and during the run (the machine's
busy CPU time less the run's own, this process's and its children's).

"16x the peer" once rested on one slow peer run; the same command measured 4.4x the next
time. A figure from this module says how far it can be trusted."""
from __future__ import annotations

import dataclasses
import os
import resource
import time
from typing import Any, Callable

# Cores kept busy by other processes, before or during the best run, above this: something
# else shared the cores (on 2 cores, a quarter of the machine).
RELIABLE_LOAD = 0.5
# Seconds over which the load before a run is measured.
LOAD_WINDOW = 0.5
# (slowest - best) / best above this: the runs disagree too much for the best to stand alone.
RELIABLE_SPREAD = 0.2
MIN_REPEATS = 3
# From this many runs on, the spread is taken to the upper quartile, not the slowest run.
QUARTILE_RUNS = 8
# What a report says its load column is.
LOAD_MEANING = (f"the cores other processes kept busy (from /proc/stat) in the {LOAD_WINDOW} s "
                f"before the best run and during it")


def machine_busy_seconds(stat_path: str = "/proc/stat") -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, summed over its cores, from
    the first line of /proc/stat (busy: everything but idle and iowait)."""
    with open(stat_path) as stat:
        fields = [float(x) for x in stat.readline().split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user, nice]
    total = sum(fields[:8])
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return (total - idle) / ticks, total / ticks


def own_cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have been waited for: a run's
    own work, whether in-process (the Python module) or a subprocess."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load_before(window: float = LOAD_WINDOW,
                busy: Callable[[], tuple[float, float]] = machine_busy_seconds,
                sleep: Callable[[float], None] = time.sleep) -> float:
    """Cores kept busy over the `window` seconds before a run, while the benchmark waits:
    the busy share of the machine's CPU time times its core count."""
    busy0, total0 = busy()
    sleep(window)
    busy1, total1 = busy()
    cores = os.cpu_count() or 1
    return cores * (busy1 - busy0) / (total1 - total0) if total1 > total0 else 0.0


def load_during(busy_seconds: float, own_seconds: float, wall: float) -> float:
    """Cores other processes kept busy during a run of `wall` seconds in which the machine was
    busy for `busy_seconds` CPU seconds and the run itself used `own_seconds`."""
    return max(0.0, busy_seconds - own_seconds) / wall if wall > 0 else 0.0


@dataclasses.dataclass
class Timing:
    """One program's runs: wall seconds, the cores other processes kept busy before and
    during each, and what each run returned besides its time (`results`, e.g. its CPU
    seconds and output)."""

    name: str
    walls: list[float] = dataclasses.field(default_factory=list)
    loads: list[float] = dataclasses.field(default_factory=list)
    results: list[Any] = dataclasses.field(default_factory=list)
    # Other processes' cores during each run; empty when not measured.
    loads_during: list[float] = dataclasses.field(default_factory=list)

    @property
    def best_index(self) -> int:
        return min(range(len(self.walls)), key=self.walls.__getitem__)

    @property
    def best(self) -> float:
        return self.walls[self.best_index]

    @property
    def result(self) -> Any:
        """What the best run returned."""
        return self.results[self.best_index]

    @property
    def spread(self) -> float:
        """(slowest - best) / best over fewer than QUARTILE_RUNS runs; from QUARTILE_RUNS on,
        (upper quartile - best) / best, so that the odd slow launch of a command of a few
        milliseconds (a scheduler tick is a millisecond) does not speak for twenty others.
        The range printed beside it is always best to slowest."""
        if self.best <= 0:
            return float("inf")
        walls = sorted(self.walls)
        if len(walls) < QUARTILE_RUNS:
            return (walls[-1] - self.best) / self.best
        # The upper quartile by linear interpolation between the order statistics.
        position = 0.75 * (len(walls) - 1)
        low = int(position)
        upper = walls[low] + (position - low) * (walls[min(low + 1, len(walls) - 1)] - walls[low])
        return (upper - self.best) / self.best

    @property
    def load(self) -> float:
        """Other processes' cores before the best run."""
        return self.loads[self.best_index]

    @property
    def load_during(self) -> float | None:
        """Other processes' cores during the best run, None when not measured."""
        return self.loads_during[self.best_index] if self.loads_during else None

    def load_text(self) -> str:
        """`load 0.21 before, 0.05 during` (the best run), or `load 0.21` when only the load
        before was measured."""
        during = self.load_during
        return f"load {self.load:.2f}" + (f" before, {during:.2f} during" if during is not None
                                          else "")

    def problems(self) -> list[str]:
        """Why the figure is unreliable; empty when it is not."""
        found = []
        if len(self.walls) < MIN_REPEATS:
            count = len(self.walls)
            found.append(f"{count} run{'s' if count != 1 else ''}, fewer than {MIN_REPEATS}")
        if self.load > RELIABLE_LOAD:
            found.append(f"load {self.load:.2f} before the best run, above {RELIABLE_LOAD}")
        during = self.load_during
        if during is not None and during > RELIABLE_LOAD:
            found.append(f"load {during:.2f} during the best run, above {RELIABLE_LOAD}")
        if self.spread > RELIABLE_SPREAD:
            found.append(f"spread {100 * self.spread:.0f}%, above {100 * RELIABLE_SPREAD:.0f}%")
        return found

    @property
    def reliable(self) -> bool:
        return not self.problems()

    def text(self) -> str:
        """`best 3.16 s of 3 runs (3.16-3.40 s, spread 8%, load 0.21 before, 0.05 during)`,
        then `; UNRELIABLE: ...` with the reasons when there are any."""
        count = len(self.walls)
        out = (f"best {self.best:.2f} s of {count} run{'s' if count != 1 else ''} "
               f"({min(self.walls):.2f}-{max(self.walls):.2f} s, "
               f"spread {100 * self.spread:.0f}%, {self.load_text()})")
        problems = self.problems()
        return out + (f"; UNRELIABLE: {', '.join(problems)}" if problems else "")


def alternate(programs: dict[str, Callable[[], tuple[float, Any]]], repeats: int = MIN_REPEATS,
              before: Callable[[], float] = load_before,
              busy: Callable[[], tuple[float, float]] | None = machine_busy_seconds,
              own: Callable[[], float] = own_cpu_seconds) -> dict[str, Timing]:
    """Runs each program `repeats` times, alternating them in the order given; a program is a
    callable returning (wall seconds, anything to keep). Before each run, `before()` measures
    other processes' cores; around it, `busy()` and `own()` give the machine's busy CPU
    seconds and the run's own (busy=None: not measured). Returns a Timing per program."""
    if repeats < 1:
        raise ValueError("alternate: repeats must be at least 1")
    timings = {name: Timing(name) for name in programs}
    for _ in range(repeats):
        for name, run in programs.items():
            load = float(before())
            if busy is not None:
                busy0, own0, start = busy()[0], own(), time.perf_counter()
            wall, result = run()
            timing = timings[name]
            if busy is not None:
                elapsed = time.perf_counter() - start
                timing.loads_during.append(load_during(busy()[0] - busy0, own() - own0,
                                                       elapsed))
            timing.walls.append(float(wall))
            timing.loads.append(load)
            timing.results.append(result)
    return timings


def ratio_text(slow: Timing, fast: Timing) -> str:
    """The ratio of two best figures, with the range their runs allow (slowest of `slow`
    over best of `fast` .. best of `slow` over slowest of `fast`), and unreliable when either
    figure is."""
    ratio = slow.best / fast.best
    low, high = slow.best / max(fast.walls), max(slow.walls) / fast.best
    text = f"{ratio:.1f}x (runs allow {low:.1f}x-{high:.1f}x)"
    if not (slow.reliable and fast.reliable):
        text += " UNRELIABLE"
    return text


def run_seconds(path: str) -> float:
    """The time a nadyn run reports for itself (simulation::run: the integration, the
    observables and the frames written), from its file's /parameters attribute
    wall_time_seconds: a double, where the summary line rounds it to the millisecond (4% of a
    25 ms run)."""
    import h5py  # Debian's python3-h5py; only the whole-process figures need it

    with h5py.File(path, "r") as f:
        return float(f["parameters"].attrs["wall_time_seconds"])
