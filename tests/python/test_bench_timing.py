"""bench/timing.py: the alternation order, the best run and its load, the spread, and the
thresholds that mark a figure unreliable, with scripted runs and a scripted load average."""
import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_timing", ROOT / "bench" / "timing.py")
timing = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = timing  # dataclasses look their module up there
spec.loader.exec_module(timing)


def scripted(order, walls):
    """A program that logs its name into `order` and returns the next of its `walls`."""
    def make(name):
        queue = list(walls[name])

        def run():
            order.append(name)
            return queue.pop(0), f"{name} run {len(walls[name]) - len(queue)}"
        return run
    return {name: make(name) for name in walls}


def test_programs_alternate_and_the_best_run_speaks_for_each():
    order = []
    loads = iter([0.1, 0.2, 0.3, 0.4, 0.45, 0.05])
    found = timing.alternate(scripted(order, {"peer": [15.3, 67.0, 16.0],
                                              "nadyn": [3.2, 3.16, 3.4]}),
                             repeats=3, loadavg=lambda: (next(loads), 0.0, 0.0))
    assert order == ["peer", "nadyn"] * 3
    peer, nadyn = found["peer"], found["nadyn"]
    assert peer.best == 15.3 and peer.load == 0.1 and peer.result == "peer run 1"
    assert nadyn.best == 3.16 and nadyn.load == 0.4 and nadyn.result == "nadyn run 2"
    # One slow peer run (67 s) does not move the best; it shows as the spread, which makes
    # the peer's figure unreliable.
    assert peer.spread == pytest.approx((67.0 - 15.3) / 15.3)
    assert not peer.reliable and "spread 338%" in peer.text()
    assert nadyn.reliable and nadyn.text() == \
        "best 3.16 s of 3 runs (3.16-3.40 s, spread 8%, load 0.40)"
    assert timing.ratio_text(peer, nadyn).startswith("4.8x (runs allow 4.5x-21.2x)")
    assert timing.ratio_text(peer, nadyn).endswith("UNRELIABLE")


@pytest.mark.parametrize("load, walls, reliable", [
    (0.5, [1.0, 1.2, 1.1], True),      # both at their thresholds: still reliable
    (0.51, [1.0, 1.0, 1.0], False),    # the load before the best run too high
    (0.0, [1.0, 1.21, 1.0], False),    # the spread above 20 %
])
def test_thresholds(load, walls, reliable):
    found = timing.alternate(scripted([], {"a": walls}), repeats=3,
                             loadavg=lambda: (load, 0.0, 0.0))["a"]
    assert found.reliable is reliable


def test_fewer_than_three_runs_are_unreliable():
    found = timing.alternate(scripted([], {"a": [1.0, 1.0]}), repeats=2,
                             loadavg=lambda: (0.0, 0.0, 0.0))["a"]
    assert found.problems() == ["2 runs, fewer than 3"]
    with pytest.raises(ValueError):
        timing.alternate({}, repeats=0)
