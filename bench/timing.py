"""Timings that one bad run cannot move (issue 38): every program of a comparison runs
`repeats` times (at least 3), the programs alternating (a, b, c, a, b, c, ...) so that a
slow stretch of the machine falls on all of them; each is reported by its best run, with the
spread of its runs and the load average before the best one, and marked unreliable when
that load was above RELIABLE_LOAD or the spread above RELIABLE_SPREAD.

"16x the peer" once rested on one slow peer run; the same command measured 4.4x the next
time. A figure from this module says how far it can be trusted."""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

# A 1-minute load average above this before the best run: something else shared the cores.
RELIABLE_LOAD = 0.5
# (slowest - best) / best above this: the runs disagree too much for the best to stand alone.
RELIABLE_SPREAD = 0.2
MIN_REPEATS = 3


@dataclasses.dataclass
class Timing:
    """One program's runs: wall seconds, the 1-minute load average before each, and what
    each run returned besides its time (`results`, e.g. its CPU seconds and output)."""

    name: str
    walls: list[float] = dataclasses.field(default_factory=list)
    loads: list[float] = dataclasses.field(default_factory=list)
    results: list[Any] = dataclasses.field(default_factory=list)

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
        """(slowest - best) / best over the runs."""
        return (max(self.walls) - self.best) / self.best if self.best > 0 else float("inf")

    @property
    def load(self) -> float:
        """The load average before the best run."""
        return self.loads[self.best_index]

    def problems(self) -> list[str]:
        """Why the figure is unreliable; empty when it is not."""
        found = []
        if len(self.walls) < MIN_REPEATS:
            count = len(self.walls)
            found.append(f"{count} run{'s' if count != 1 else ''}, fewer than {MIN_REPEATS}")
        if self.load > RELIABLE_LOAD:
            found.append(f"load {self.load:.2f} before the best run, above {RELIABLE_LOAD}")
        if self.spread > RELIABLE_SPREAD:
            found.append(f"spread {100 * self.spread:.0f}%, above {100 * RELIABLE_SPREAD:.0f}%")
        return found

    @property
    def reliable(self) -> bool:
        return not self.problems()

    def text(self) -> str:
        """`best 3.16 s of 3 runs (3.16-3.40 s, spread 8%, load 0.21)`, then
        `; UNRELIABLE: ...` with the reasons when there are any."""
        count = len(self.walls)
        out = (f"best {self.best:.2f} s of {count} run{'s' if count != 1 else ''} "
               f"({min(self.walls):.2f}-"
               f"{max(self.walls):.2f} s, spread {100 * self.spread:.0f}%, load "
               f"{self.load:.2f})")
        problems = self.problems()
        return out + (f"; UNRELIABLE: {', '.join(problems)}" if problems else "")


def alternate(programs: dict[str, Callable[[], tuple[float, Any]]], repeats: int = MIN_REPEATS,
              loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg,
              ) -> dict[str, Timing]:
    """Runs each program `repeats` times, alternating them in the order given; a program is a
    callable returning (wall seconds, anything to keep). Returns a Timing per program."""
    if repeats < 1:
        raise ValueError("alternate: repeats must be at least 1")
    timings = {name: Timing(name) for name in programs}
    for _ in range(repeats):
        for name, run in programs.items():
            load = float(loadavg()[0])
            wall, result = run()
            timing = timings[name]
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
