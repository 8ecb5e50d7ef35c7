"""bench/ensemble.py's own parts, without the peer or a timed run: the roofline's flop count,
what an unmet target would take, and the profile's parts (never a negative share)."""
import importlib.util
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ensemble_bench", ROOT / "bench" / "ensemble.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_flops_count_the_algorithm_nadyn_runs():
    # n = 64, d = 16, Q folded into K, each head its own V: the queries' projection by K^T Q
    # and the values' (2 n d^2 each), the logits and the value product (2 n^2 d each):
    # 4 n^2 d + 4 n d^2 = 262144 + 65536 per head and evaluation (issue 38: not the three
    # projections, 6 n d^2, of separate Q and K).
    assert bench.flops(1, 1, 1) == 327680.0
    assert bench.flops(512, 8) == 512 * 500 * 8 * 327680.0
    # Heads sharing their values: one value product for all heads; V = s I: no projection.
    assert bench.attention_flops(64, 16, 8, shared_values=True) == 8 * 163840.0 + 163840.0
    assert bench.attention_flops(64, 16, 8, shared_values=True, value_projection=False) == (
        8 * (131072.0 + 32768.0) + 131072.0)


def test_shortfall_gives_the_time_a_target_needs():
    rate = bench.flops(512, 8) / 8.0  # the 8-head roofline: 8 s; the 1-head one: 1 s
    peer = {"seconds": 400.0, "batch": 512, "steps": 500}
    # 15x a peer of 90 s at 64 x 200 steps: 6 s for 64 x 200 run-steps, 120 s for the
    # 512 x 500 (met).
    peers = {(8, "large"): peer, (8, "small"): {"seconds": 90.0, "batch": 64, "steps": 200}}
    sweep, dynamics = {1: 2.0, 8: 12.0}, {1: 1.5, 8: 10.0}
    lines = bench.shortfall_lines(sweep, dynamics, peers, 15.0, 512, 512, rate)
    text = "\n".join(lines)
    # 40x a peer of 400 s: 10 s, 1.25x the 8 s roofline; 10x processes of 15 s: 1.5 s.
    assert "40x needs the 512 runs in 10.00 s: 1.25x their roofline" in text
    assert "dynamics alone take 10.00 s (1.25x)" in text
    assert "frames of the default observables 2.00 s more" in text
    assert "(29.3 ms of wall clock a process" in text
    assert "10x needs the 512 runs in 1.50 s: 1.50x their roofline" in text
    assert "batch 64" not in text
    assert "attention's kernels" not in text  # without a 1-head profile, nothing of them
    # With the attention at 60% of the 2 s sweep: 1.2 s (1.2x the 1 s roofline), leaving
    # 0.3 s of the 1.5 s for the rest, which takes 0.8 s.
    text = "\n".join(bench.shortfall_lines(sweep, dynamics, peers, 15.0, 512, 512, rate, 60.0))
    assert ("The attention's kernels, their flops and exponentials, take 1.20 s of the sweep "
            "(60% in the 1-head profile below, 1.20x the roofline); the target leaves 0.30 s "
            "for everything else") in text
    assert "which takes 0.80 s now: 2.7x less would be needed." in text
    # At 80%, 1.6 s: the attention alone is over the 1.5 s.
    text = "\n".join(bench.shortfall_lines(sweep, dynamics, peers, 15.0, 512, 512, rate, 80.0))
    assert "they alone take longer than the target allows." in text
    # 15x a peer of 4.5 s at 64 x 200: 0.3 s, so 6 s for the 512 x 500 runs, 0.75x the roofline.
    peers[(8, "small")] = {"seconds": 4.5, "batch": 64, "steps": 200}
    text = "\n".join(bench.shortfall_lines(sweep, dynamics, peers, 15.0, 512, 512, rate))
    assert ("8 heads against the peer at batch 64 x 200 steps: 15x needs the 512 runs in "
            "6.00 s: 0.75x their roofline") in text
    # Targets met: nothing to say.
    peers[(8, "small")] = {"seconds": 90.0, "batch": 64, "steps": 200}
    assert bench.shortfall_lines({1: 1.0, 8: 9.0}, dynamics, peers, 15.0, 512, 512, rate) == []


def test_profile_parts_are_self_time_sums_and_the_rest_is_not_negative():
    rows = [(25.0, "nadyn::detail::add_rows"), (23.0, "nadyn::detail::exp_shifted_row")]
    parts = [(70.0, "attention"), (6.0, "entropy"), (23.0, "exponentials")]
    text = "\n".join(bench.profile_lines((rows, parts), 1.5))
    assert "The whole run is 1.50x its roofline" in text
    # 1.5 x 70% and 1.5 x (70% - 23%).
    assert "attention alone is 1.05x, 0.70x without its exponentials" in text
    assert re.search(r"the file\) 24%", text)
    assert not re.search(r"-\d", text.split("## Where")[1].split("|---|---|")[-1])
    assert "## Where an 8-head run's time goes" in text
    assert "Within 2x, as here" in text
    # One head: its own title, and no 2x verdict (that target is the 8-head run's).
    text = "\n".join(bench.profile_lines((rows, parts), 2.3, heads=1))
    assert "## Where a 1-head run's time goes" in text
    assert "over the 1-head case" in text
    assert "Within 2x" not in text
    assert "the file) 24%." in text


def test_binding_target_is_recomputed_against_the_peer_measured_here():
    rate = bench.flops(512, 8) / 8.0  # 8-head roofline of 512 x 500: 8 s
    # A peer of 200 s at 512 x 500 is 25x its roofline: 2x of the roofline is 12.5x the peer.
    peers = {(8, "large"): {"seconds": 200.0, "batch": 512, "steps": 500}}
    text = "\n".join(bench.binding_lines(peers, rate))
    assert "the 8-head peer is 25.0x its roofline here, so 2x of the roofline is 12.5x" in text
    assert "the issue's 40x only against a peer 80x from its roofline" in text
    assert bench.binding_lines({}, rate) == []


def test_the_floor_adds_the_softmax_exponentials_at_their_rate():
    # An exact softmax takes one exponential per head, query and key: H n^2 per evaluation.
    assert bench.softmax_exponentials(64, 8) == 8 * 64 * 64
    # 2e12 flops at 1e11 flop/s (20 s) and 1e10 exponentials at 2e9/s (5 s).
    assert bench.softmax_floor(2e12, 1e10, 1e11, 2e9) == 25.0


def test_nadyn_bench_exp_rate_and_its_bad_input(cli):
    """nadyn-bench exp times the kernel's exponential: one JSON line per thread count with a
    finite positive rate; an unknown precision or no values is refused with status 2 and
    one line."""
    import json
    import math
    import subprocess

    import pytest
    bench_exe = pathlib.Path(cli).parent / "nadyn-bench"  # beside nadyn in build/bin/
    if not bench_exe.exists():
        pytest.skip("nadyn-bench is not built here (NADYN_BUILD_BENCH=OFF)")
    for precision in ("double", "float"):
        out = subprocess.run([str(bench_exe), "exp", "--count", "64", "--reps", "1",
                              "--threads", "1,2", "--precision", precision],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        records = [json.loads(line) for line in out]
        assert [r["threads"] for r in records] == [1, 2]
        for r in records:
            assert r["what"] == "exp" and r["precision"] == precision and r["count"] == 64
            assert math.isfinite(r["per_second"]) and r["per_second"] > 0
    for flags, message in ((["--precision", "half"], "unknown precision 'half'; valid choices: "
                                                     "double, float"),
                           (["--count", "0"], "--count must be at least 1")):
        bad = subprocess.run([str(bench_exe), "exp", *flags], capture_output=True, text=True)
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr.count("\n") == 1 and message in bad.stderr


def test_nadyn_bench_observed_times_a_frames_evaluation_and_refuses_bad_input(cli):
    """nadyn-bench observed times the kernel's call with and without the rows' entropies:
    one JSON line with both medians and their ratio; sizes it cannot take are refused with
    status 2 and one line."""
    import json
    import math
    import subprocess

    import pytest
    bench_exe = pathlib.Path(cli).parent / "nadyn-bench"
    if not bench_exe.exists():
        pytest.skip("nadyn-bench is not built here (NADYN_BUILD_BENCH=OFF)")
    out = subprocess.run([str(bench_exe), "observed", "--n", "40", "--d", "8", "--heads", "2",
                          "--reps", "3"], capture_output=True, text=True, check=True).stdout
    record = json.loads(out.splitlines()[-1])
    assert (record["what"], record["n"], record["d"], record["heads"]) == ("observed", 40, 8, 2)
    assert record["plain_seconds"] > 0 and record["observed_seconds"] > 0
    assert math.isclose(record["overhead"],
                        record["observed_seconds"] / record["plain_seconds"] - 1, rel_tol=1e-4,
                        abs_tol=1e-5)
    for flags in (["--n", "1"], ["--heads", "0"], ["--d", "-3"], ["--reps", "0"]):
        bad = subprocess.run([str(bench_exe), "observed", *flags], capture_output=True,
                             text=True)
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr.count("\n") == 1 and "--n must be at least 2" in bad.stderr
    # A size whose kernel path does not take the entropy in its evaluation is an error, not a
    # figure for another path (n = 256 is past the small-n path).
    bad = subprocess.run([str(bench_exe), "observed", "--n", "256", "--reps", "1"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "does not take the entropy" in bad.stderr


def test_frame_evaluation_sentence_states_the_medians_and_the_share_of_the_dynamics():
    record = {"plain_seconds": 60e-6, "observed_seconds": 75e-6, "overhead": 0.25}
    text = bench.frame_evaluation_line(record, 8)
    assert "took 75.0 us against 60.0 us for a plain one: 25% more" in text
    assert "--n 64 --d 16 --heads 8" in text
    # One frame every 5 of the 500 steps: a quarter more on a fifth of the evaluations.
    assert "a frame every 5 steps" in text and "that is 5% of the dynamics" in text
    rows = [(25.0, "nadyn::detail::add_rows")]
    parts = [(70.0, "attention"), (6.0, "entropy"), (23.0, "exponentials")]
    assert text in "\n".join(bench.profile_lines((rows, parts), 1.5, 8, record))
    assert text in "\n".join(bench.profile_lines(None, 1.5, 8, record))
    assert "nadyn-bench observed" not in "\n".join(bench.profile_lines((rows, parts), 1.5))


def test_best_rates_keeps_each_rates_fastest_measurement():
    measured = iter([{"Eigen": 90.0, "NumPy": 130.0}, {"Eigen": 120.0, "NumPy": 17.0},
                     {"Eigen": 100.0, "NumPy": 128.0}])
    assert bench.best_rates(lambda: next(measured), times=3, pause=0.0) == {
        "Eigen": 120.0, "NumPy": 130.0}
    plain = iter([3.0e9, 4.5e9, 2.9e9])
    assert bench.best_rates(lambda: next(plain), times=3, pause=0.0) == 4.5e9
    assert bench.best_rates(lambda: None, times=3, pause=0.0) is None  # no nadyn-bench
