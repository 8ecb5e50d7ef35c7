"""bench/simuformer.py's own parts, without the peer (CI has no simuformer checkout nor
PyTorch): the peer's checkpoint layers against their closed form, the agreement statistics
on synthetic data with known answers, and the reader of nadyn's sweep file against the pair
density recomputed with numpy from the recorded positions."""
import importlib.util
import math
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("simuformer_bench", ROOT / "bench" / "simuformer.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_checkpoint_layers_are_the_first_layers_reaching_each_checkpoint():
    times = np.linspace(0, 50, 200, dtype=np.float32)
    layers = bench.checkpoint_layers(times)
    # Checkpoint c at 50 c / 199 is reached by layer ceil(500 c / 199) (never an integer
    # for 0 < c < 199, and at least 1/199 of a layer away from one, far beyond the float32
    # rounding of the time); checkpoint 0 is recorded after the first step.
    expected = [1] + [math.ceil(500 * c / 199) for c in range(1, 200)]
    assert layers.tolist() == expected
    assert layers[:6].tolist() == [1, 3, 6, 8, 11, 13]
    assert layers[-1] == 500
    assert int(np.sum(layers % 2 == 0)) == 100


def test_checkpoint_layers_past_the_end_hold_the_last_state():
    # Checkpoints beyond maxtime are filled with the last state. The peer's loop stops
    # when its time, summed in doubles, reaches maxtime: ten steps of 0.1 sum to
    # 0.9999999999999999, so with maxtime 1 it takes an eleventh.
    layers = bench.checkpoint_layers(np.array([0.0, 0.55, 2.0, 3.0], dtype=np.float32),
                                     dt=0.1, maxtime=1.0)
    assert layers.tolist() == [1, 6, 11, 11]


def test_agreement_on_synthetic_cells():
    # Two betas, three seeds, nadyn frames at layers 0, 2, 4; the peer's checkpoints at
    # layers 1, 2, 4: the common ones are checkpoints 1 and 2 (frames 1 and 2).
    per_seed = np.zeros((2, 3, 3))
    per_seed[0, :, 1] = [0.1, 0.2, 0.3]  # mean 0.2, s = 0.1
    per_seed[0, :, 2] = 0.5              # every seed 0.5: standard error 0
    per_seed[1, :, 1] = [0.4, 0.6, 0.8]  # mean 0.6, s = 0.2
    per_seed[1, :, 2] = 1.0
    se0 = 0.1 * math.sqrt(1 / 3 + 1 / 5)
    se1 = 0.2 * math.sqrt(1 / 3 + 1 / 5)
    peer = np.array([[9.0, 0.2 + 4 * se0, 0.5],    # 4 standard errors away; equal
                     [9.0, 0.6 - 2 * se1, 0.75]])  # 2 away; zero error but differs
    result = bench.agreement(peer, np.array([1, 2, 4]), per_seed, np.array([0, 2, 4]), 5)
    assert result["common"].tolist() == [1, 2]
    assert np.allclose(result["nadyn"], [[0.2, 0.5], [0.6, 1.0]])
    assert np.allclose(result["se"], [[se0, 0], [se1, 0]])
    assert np.allclose(result["diff"], [[-4 * se0, 0], [2 * se1, 0.25]])
    assert result["max_z"] == pytest.approx(4.0)
    assert result["within3"] == pytest.approx(0.5)  # the 2-error cell and the equal one
    assert result["cells"] == 4
    assert result["zero_se"] == 2 and result["zero_se_differ"] == 1
    assert result["max_abs_diff"] == pytest.approx(4 * se0)  # 0.292 > 0.25


def test_read_nadyn_matches_pair_density_from_positions(tmp_path):
    # The shipped experiment, small: two betas, two seeds, 80 layers (tokens cluster by
    # t = 7 at beta 1), every position kept; the reader's densities against the fraction
    # of pairs k < l with cosine >= 0.999 recomputed from the positions.
    out = tmp_path / "small.h5"
    subprocess.run([os.environ.get("NADYN_CLI", "nadyn"), "sweep",
                    str(ROOT / "examples" / "simuformer.toml"),
                    "--set", "sweep.seed.range=[1,2]", "--set", "sweep.beta.linspace=[1,15,2]",
                    "--set", "run.T=8", "--set", 'run.positions="all"',
                    "--out", str(out), "--quiet"], check=True)
    result = bench.read_nadyn(str(out))
    assert result["layers"].tolist() == list(range(0, 81, 2))
    assert np.allclose(result["betas"], [1, 15])
    import h5py
    with h5py.File(out, "r") as f:
        positions = f["positions"][:]  # (beta, seed, time, token, dim)
    gram = np.einsum("bstkd,bstld->bstkl", positions, positions)
    upper = np.triu(np.ones((64, 64), dtype=bool), k=1)
    density = (gram[..., upper] >= 0.999).mean(axis=-1)
    assert np.allclose(result["per_seed"], density, atol=0, rtol=0)
    assert 0 < density.mean() < 1  # some frames clustered, some not
    assert density[0, :, -1].min() == 1.0 and density[:, :, 0].max() == 0.0


def test_agreement_with_the_peers_samples():
    # The peer's own per-sample spread: one cell, nadyn's seeds [0, 0, 0] (s = 0) and the
    # peer's samples [0, 0, 0.6] (mean 0.2, s_peer^2 = 0.12): standard error
    # sqrt(0.12 / 3) = 0.2, difference 0.2: one standard error.
    per_seed = np.zeros((1, 3, 1))
    peer_samples = np.array([[[0.0], [0.0], [0.6]]])
    result = bench.agreement(peer_samples.mean(axis=1), np.array([2]), per_seed, np.array([2]),
                             3, peer_samples)
    assert np.allclose(result["se"], [[0.2]])
    assert result["max_z"] == pytest.approx(1.0)
    assert result["within3"] == 1.0 and result["zero_se"] == 0


def test_per_sample_checkpoints_follow_the_peers_calls():
    # Two betas, two samples, checkpoints at layers 1, 3, 3, 6: three check_stats calls
    # per beta (layers 1, 3, 6), the call at layer 3 filling two checkpoints.
    call_betas = np.array([0.5, 0.5, 0.5, 2.0, 2.0, 2.0], dtype=np.float32)
    call_density = np.array([[0.0, 0.1], [0.2, 0.3], [0.4, 0.5],
                             [0.6, 0.7], [0.8, 0.9], [1.0, 0.0]])
    out = bench.per_sample_checkpoints(call_betas, call_density, np.array([0.5, 2.0]),
                                       np.array([1, 3, 3, 6]))
    assert out.shape == (2, 2, 4)
    assert out[0, 0].tolist() == [0.0, 0.2, 0.2, 0.4]
    assert out[0, 1].tolist() == [0.1, 0.3, 0.3, 0.5]
    assert out[1, 1].tolist() == [0.7, 0.9, 0.9, 0.0]


def test_gap_note_says_what_would_close_the_gap():
    peer = {"wall": 100.0}
    # Met (10 s needed, 9 s taken): nothing to say.
    assert bench.gap_note(peer, {"wall": 9.0}, {"wall": 5.0}, 2.0) is None
    # The dynamics alone (12 s) exceed the 10 s needed: they must be 1.2x faster, and the
    # roofline (3 s) allows it.
    text = bench.gap_note(peer, {"wall": 15.0}, {"wall": 12.0}, 3.0)
    assert "in 10.00 s" in text and "cost 3.00 s" in text and "1.20x faster" in text
    assert "profile below" in text
    # A roofline above the time needed: the flops themselves rule it out here.
    assert "below what the flops allow" in bench.gap_note(peer, {"wall": 15.0}, {"wall": 12.0},
                                                          11.0)
    # The dynamics fit (8 s): the frames' 7 s must fall to 2 s, 3.5x cheaper.
    assert "3.5x would close it" in bench.gap_note(peer, {"wall": 15.0}, {"wall": 8.0}, 3.0)


def test_roofline_counts_the_algorithm_nadyn_runs():
    # simuformer's heads share their values (V = I / 8), so their weights are summed before
    # one value product and the values are not projected; each head's queries are projected
    # by B^T (Q folded into K): H (2 n^2 d + 2 n d^2) + 2 n^2 d per run and layer, half of
    # the H (4 n^2 d + 6 n d^2) counted before issue 38.
    per_layer = 8 * (2 * 64 ** 2 * 16 + 2 * 64 * 16 ** 2) + 2 * 64 ** 2 * 16
    assert per_layer == 1441792
    assert bench.attention_flops(40) == 20 * 40 * 500 * per_layer
    assert bench.attention_flops(40) * 2 == 20 * 40 * 500 * 8 * (4 * 64 ** 2 * 16
                                                                + 6 * 64 * 16 ** 2)


def test_a_repeated_peer_run_starts_from_an_empty_output(tmp_path):
    # The peer names its pickle by its start time: without clearing, the second of three
    # repeats left two pickles and read_peer() stopped ("expected one .pkl").
    for name in ("d16_run1.pkl", "d16_run2.pkl", "per_sample.npz", "keep.txt"):
        (tmp_path / name).write_text("x")
    bench.fresh_peer_dir(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_requote_rewrites_performance_md_with_the_new_report_alone(tmp_path):
    # `scripts/benchmark.sh --simuformer-only` regenerates simuformer.md and then rewrites
    # performance.md from its JSON with that report quoted anew: the new targets table in,
    # the old one out, every other figure the full run's, and the requoting said.
    import json
    # The full run's JSON as a full run leaves it (results/ may hold earlier requotings).
    original = json.loads((ROOT / "results" / "performance.json").read_text())
    original.pop("requoted", None)
    (tmp_path / "performance.json").write_text(json.dumps(original))
    report = tmp_path / "simuformer.md"
    report.write_text("# simuformer\n\nGenerated by `bench/simuformer.py --samples 3`.\n\n"
                      "Targets of the peer's experiment (issue 25):\n\n"
                      "| target | measured | |\n|---|---|---|\n"
                      "| nadyn in float at least 10x the peer (issue 38: like for like) "
                      "| 12.5x | met |\n\nafter\n")
    out = tmp_path / "performance.md"
    bench_py = str(ROOT / "bench" / "benchmark.py")
    done = subprocess.run(["/usr/bin/python3", bench_py, "--requote", "--out", str(out),
                           "--simuformer", str(report)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "| nadyn in float at least 10x the peer (issue 38: like for like) | 12.5x | met |" in text
    assert "8.5x (runs allow" not in text.split("## simuformer")[1].split("\n## ")[0]
    assert "**Requoted:** the sections quoting simuformer.md (on " in text
    assert f"date {original['machine']['date']}" in text  # the run's machine line, unchanged
    rewritten = json.loads((tmp_path / "performance.json").read_text())
    assert rewritten["gemm"] == original["gemm"]
    assert [entry["report"] for entry in rewritten["requoted"]] == ["simuformer.md"]
    # A second requoting (observables.md) keeps the first one's note.
    tables = tmp_path / "observables.md"
    tables.write_text("# observables\n\nGenerated by `bench/observables.py --tiny`.\n\n"
                      "Whole `nadyn` processes, a test table.\n\n## One run\n\n| a | b |\n")
    again = subprocess.run(["/usr/bin/python3", bench_py, "--requote", "--out", str(out),
                            "--observables", str(tables)], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    text = out.read_text()
    assert "simuformer.md (on " in text and "observables.md (on " in text
    assert "Whole `nadyn` processes, a test table." in text
    assert "| nadyn in float at least 10x the peer (issue 38: like for like) | 12.5x | met |" in text
    # Without its JSON, or without a report to quote: one line, status 2, nothing written.
    missing = subprocess.run(["/usr/bin/python3", bench_py, "--requote", "--out",
                              str(tmp_path / "none" / "performance.md"), "--simuformer",
                              str(report)], capture_output=True, text=True)
    assert missing.returncode == 2 and "needs" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    bare = subprocess.run(["/usr/bin/python3", bench_py, "--requote", "--out", str(out)],
                          capture_output=True, text=True)
    assert bare.returncode == 2 and "--simuformer" in bare.stderr


def test_the_floor_counts_every_exponential_of_the_sweep():
    # 20 betas x 40 samples x 500 layers, each 8 heads x 64^2 exponentials.
    assert bench.exponentials(40) == 20 * 40 * 500 * 8 * 64 * 64


def test_floor_note_says_how_much_faster_the_exponential_would_have_to_be():
    # Roofline 10 s: 1.3x is 13 s. Exponentials of 2 s: the floor (12 s) allows it.
    assert bench.floor_note(20.0, 10.0, 12.0, 2.0, "double") is None
    # Exponentials of 6 s: the floor is 16 s, 1.6x the roofline; 1.3x leaves them 3 s, so
    # they would have to run 2x faster. The dynamics' 24 s are 1.5x that floor.
    text = bench.floor_note(24.0, 10.0, 16.0, 6.0, "float")
    assert "In float, 1.3x the roofline is 13.00 s" in text
    assert "the floor with them, 16.00 s, is 1.60x the roofline" in text
    assert "an exponential 2.0x faster than nadyn's" in text
    assert "24.00 s, 1.50x that floor" in text
