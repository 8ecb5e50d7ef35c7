"""bench/timing.py: the alternation order, the best run and its load, the spread, and the
thresholds that mark a figure unreliable, with scripted runs and a scripted load; the load
measured from /proc/stat snapshots."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import types

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
                             repeats=3, before=lambda: next(loads), busy=None)
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
                             before=lambda: load, busy=None)["a"]
    assert found.reliable is reliable


def test_many_runs_spread_to_their_upper_quartile():
    # Twenty launches of a 1.7 ms command, two of them slowed by a scheduler tick: the
    # slowest run would give a spread of 135 %; the upper quartile (1.8 ms) gives 6 %.
    walls = [1.7] * 10 + [1.75] * 4 + [1.8] * 4 + [3.0, 4.0]
    found = timing.alternate(scripted([], {"a": walls}), repeats=len(walls),
                             before=lambda: 0.0, busy=None)["a"]
    assert found.spread == pytest.approx((1.8 - 1.7) / 1.7)
    assert found.reliable and "(1.70-4.00 s" in found.text()
    # Below QUARTILE_RUNS runs the slowest run counts: one slow peer run of three still shows.
    few = timing.alternate(scripted([], {"a": [1.7] * 6 + [4.0]}), repeats=7,
                           before=lambda: 0.0, busy=None)["a"]
    assert few.spread == pytest.approx((4.0 - 1.7) / 1.7) and not few.reliable
    # A quarter of the runs slow is a spread, however many runs there are.
    slow = timing.alternate(scripted([], {"a": [1.0] * 12 + [1.5] * 8}), repeats=20,
                            before=lambda: 0.0, busy=None)["a"]
    assert slow.spread == pytest.approx(0.5) and not slow.reliable


def test_fewer_than_three_runs_are_unreliable():
    found = timing.alternate(scripted([], {"a": [1.0, 1.0]}), repeats=2,
                             before=lambda: 0.0, busy=None)["a"]
    assert found.problems() == ["2 runs, fewer than 3"]
    with pytest.raises(ValueError):
        timing.alternate({}, repeats=0)


def test_load_during_a_run_is_the_machine_less_the_run_itself():
    # The machine busy 3.0 CPU s over a 2 s run that used 2.6 s itself: others held 0.2
    # cores. A run that was alone (its own 2 threads busy) reads 0.
    assert timing.load_during(3.0, 2.6, 2.0) == pytest.approx(0.2)
    assert timing.load_during(4.0, 4.0, 2.0) == 0.0
    snapshots = iter([(10.0, 100.0), (10.3, 101.0)])
    found = timing.alternate(scripted([], {"a": [2.0]}), repeats=1, before=lambda: 0.0,
                             busy=lambda: next(snapshots), own=iter([5.0, 5.1]).__next__)
    # The scripted run returns at once, so the elapsed wall is tiny and the other 0.2 CPU s
    # read as many cores: the figure is marked.
    assert found["a"].load_during > 0.5
    assert "during the best run" in " ".join(found["a"].problems())


def test_load_before_reads_the_busy_share_of_the_machine(tmp_path, monkeypatch):
    # Two /proc/stat snapshots 0.5 s apart (in clock ticks: user nice system idle iowait irq
    # softirq steal): 60 busy of 200 ticks on 2 cores is 0.6 cores; iowait counts as idle.
    stats = iter(["cpu  1000 0 500 8000 100 0 0 0 0 0\n",
                  "cpu  1050 0 510 8130 110 0 0 0 0 0\n"])
    stat = tmp_path / "stat"

    def busy():
        stat.write_text(next(stats))
        return timing.machine_busy_seconds(str(stat))

    monkeypatch.setattr(timing.os, "cpu_count", lambda: 2)
    slept = []
    assert timing.load_before(0.5, busy=busy, sleep=slept.append) == pytest.approx(0.6)
    assert slept == [0.5]


# ---- bench/benchmark.py through bench/timing.py (issue 38 item 1) --------------------------

def load_benchmark(monkeypatch, load=0.1):
    """bench/benchmark.py as a module, its timing.alternate reading `load` as the load."""
    spec = importlib.util.spec_from_file_location("bench_main", ROOT / "bench" / "benchmark.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    if hasattr(bench, "timing"):  # (a benchmark.py that does not use it fails the tests below)
        alternate = bench.timing.alternate
        monkeypatch.setattr(bench.timing, "alternate", lambda programs, repeats=3: alternate(
            programs, repeats, before=lambda: load, busy=None))
    monkeypatch.setattr(bench, "log", lambda *args: None)
    return bench


def test_benchmark_whole_process_is_the_best_of_at_least_three_runs(monkeypatch, tmp_path):
    bench = load_benchmark(monkeypatch)
    # A warm-up launch, then three: wall clock and the time each run reports for itself.
    walls = iter([1.0, 0.30, 0.20, 0.50])
    inside = iter([0.9, 0.10, 0.08, 0.11])
    clock = {"now": 0.0, "start": True}

    def perf_counter():
        if not clock["start"]:
            clock["now"] += next(walls)
        clock["start"] = not clock["start"]
        return clock["now"]

    monkeypatch.setattr(bench, "time", types.SimpleNamespace(perf_counter=perf_counter))
    monkeypatch.setattr(bench.subprocess, "run", lambda *a, **k: types.SimpleNamespace(stdout=""))
    files = []

    def run_seconds(path):  # read from each launch's file, after the launch
        files.append(path)
        return next(inside)

    monkeypatch.setattr(bench.timing, "run_seconds", run_seconds)
    row = bench.process_time(str(tmp_path), str(tmp_path), reps=1)
    assert files == [str(tmp_path / "process.h5")] * 4
    assert row["reps"] == 3  # at least timing.MIN_REPEATS, whatever was asked
    assert row["process_seconds"] == pytest.approx(0.20)  # the best, not the median (0.30)
    assert row["run_seconds"] == pytest.approx(0.08)
    assert row["ratio"] == pytest.approx(2.5)
    assert row["reliable"] is False  # spread (0.5 - 0.2) / 0.2 = 150 %
    assert "UNRELIABLE: spread 150%" in row["runs"]


def test_benchmark_peers_alternate_with_nadyn_and_each_is_its_best_run(monkeypatch, tmp_path):
    bench = load_benchmark(monkeypatch)
    np = pytest.importorskip("numpy")
    theta, r = np.zeros((4, 3)), np.ones(4)
    order = []
    seconds = {"nadyn": iter([0.02, 0.01, 0.03]), "peer": iter([0.50, 0.90, 0.40])}

    def run_json(command, env=None):
        out = command[command.index("--out") + 1]
        if command[0].endswith("nadyn-bench"):
            assert command[command.index("--reps") + 1] == "1"  # one run per launch
            order.append("nadyn")
            np.concatenate([theta.ravel(), r]).tofile(out)
            return [{"seconds": next(seconds["nadyn"]), "seconds_run": 0.1,
                     "allocations_per_step": 0}]
        assert command[command.index("--repeats") + 1] == "1"
        order.append("peer")
        np.savez(out, theta=theta, r=r)
        return [{"seconds": next(seconds["peer"]), "version": "1.0"}]

    monkeypatch.setattr(bench, "run_json", run_json)
    monkeypatch.setattr(bench, "read_final", lambda path: (theta, r))
    monkeypatch.setattr(bench.subprocess, "run",
                        lambda *a, **k: types.SimpleNamespace(returncode=1, stdout=""))
    monkeypatch.setattr(bench.peer_blas, "loaded_blas", lambda env, module: [])
    monkeypatch.setattr(bench.peer_blas, "name_mapped", lambda mapped, root: "a BLAS")
    cases, _, _ = bench.peers([("default", str(tmp_path))], str(tmp_path), "", "/ref", 1.0,
                              [(4, 3, 10, 1, 1)])
    assert order == ["nadyn", "peer"] * 3
    case = cases[0]
    assert case["nadyn"]["default"]["seconds"] == pytest.approx(0.01)
    assert case["nadyn"]["default"]["reps"] == 3
    peer = case["peers"][0]
    assert peer["name"] == "numpy+refblas" and peer["reps"] == 3
    assert peer["seconds"] == pytest.approx(0.40)
    assert peer["ratio"]["default"] == pytest.approx(40.0)  # best over best
    assert peer["reliable"] is False and "UNRELIABLE" in peer["ratio_text"]["default"]


def test_run_seconds_is_the_runs_own_time_unrounded(tmp_path):
    """What the whole-process figures divide by: the file's wall_time_seconds, which the
    summary line prints rounded to the millisecond."""
    cli = os.environ.get("NADYN_CLI", str(ROOT / "build" / "bin" / "nadyn"))
    out = tmp_path / "run.h5"
    done = subprocess.run([cli, "simulate", "--n", "16", "--d", "3", "--T", "5", "--out",
                           str(out)], capture_output=True, text=True, check=True)
    printed = float(re.search(r"([0-9.]+) s \(\d+ RHS", done.stdout).group(1))
    seconds = timing.run_seconds(str(out))
    assert seconds > 0
    assert abs(seconds - printed) <= 0.0005 + 1e-12  # the same time, rounded for the line
    assert seconds != round(seconds, 3)  # finer than the line (nanoseconds: 1e-6 odds of a whole ms)
