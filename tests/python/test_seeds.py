"""Seeds by purpose: --init-seed, --weights-seed and --noise-seed each drive one draw, and
unset they follow --seed (so every run made before they existed is unchanged)."""

import subprocess
import textwrap

import h5py
import numpy as np
import pytest

import nadyn

RUN = ("--n", "12", "--d", "4", "--T", "1", "--dt", "0.05", "--weights", "random",
       "--norm-noise", "0.2")


def positions(path):
    with h5py.File(path, "r") as f:
        return f["particles/tokens/position/value"][:]


def parameters(path):
    with h5py.File(path, "r") as f:
        return {k: v for k, v in f["parameters"].attrs.items()}


def test_unset_purposes_follow_seed_and_are_recorded(simulate):
    plain = simulate("plain.h5", *RUN, "--seed", "3")
    explicit = simulate("explicit.h5", *RUN, "--seed", "3", "--init-seed", "3",
                        "--weights-seed", "3", "--noise-seed", "3")
    assert np.array_equal(positions(plain), positions(explicit))
    recorded = parameters(plain)
    assert [recorded[k] for k in ("seed", "init_seed", "weights_seed", "noise_seed")] == [3] * 4


def test_each_draw_reads_the_seed_of_its_purpose(simulate):
    # Start from seed 1, weights and noise from seed 7, two ways round.
    a = simulate("a.h5", *RUN, "--seed", "1", "--weights-seed", "7", "--noise-seed", "7")
    b = simulate("b.h5", *RUN, "--seed", "7", "--init-seed", "1")
    assert np.array_equal(positions(a), positions(b))
    # The start is seed 1's, the motion is not.
    one = simulate("one.h5", *RUN, "--seed", "1")
    assert np.array_equal(positions(a)[0], positions(one)[0])
    assert not np.array_equal(positions(a)[-1], positions(one)[-1])
    # Only the noise differs: same start, same weights, another path.
    noise = simulate("noise.h5", *RUN, "--seed", "1", "--noise-seed", "2")
    assert np.array_equal(positions(noise)[0], positions(one)[0])
    assert not np.array_equal(positions(noise)[-1], positions(one)[-1])
    assert parameters(noise)["noise_seed"] == 2 and parameters(noise)["weights_seed"] == 1


def test_a_sweep_holds_the_weights_while_the_start_varies(cli, tmp_path):
    experiment = tmp_path / "shared.toml"
    experiment.write_text(textwrap.dedent("""\
        [run]
        n = 12
        d = 4
        T = 1
        dt = 0.05
        weights = "random"
        weights_seed = 5
        positions = "final"
        [sweep]
        beta = [1, 2]
        seed = [1, 2]
        """))
    out = tmp_path / "shared.h5"
    subprocess.run([cli, "sweep", str(experiment), "--out", str(out), "--quiet"], check=True,
                   capture_output=True)
    data = nadyn.open(out)
    for beta in (1, 2):
        for seed in (1, 2):
            alone = tmp_path / f"alone-{beta}-{seed}.h5"
            subprocess.run([cli, "simulate", "--n", "12", "--d", "4", "--T", "1", "--dt", "0.05",
                            "--weights", "random", "--beta", str(beta), "--seed", "5",
                            "--init-seed", str(seed), "--out", str(alone), "--quiet"], check=True)
            final = data.positions.sel(beta=beta, seed=seed).values
            assert np.array_equal(final, positions(alone)[-1])
    # A weights_seed axis: fresh weights per point, the start held by seed.
    axis = tmp_path / "axis.toml"
    axis.write_text(experiment.read_text().replace("weights_seed = 5\n", "")
                    .replace("seed = [1, 2]", "weights_seed = [3, 4]"))
    subprocess.run([cli, "sweep", str(axis), "--out", str(tmp_path / "axis.h5"), "--quiet"],
                   check=True, capture_output=True)
    fresh = nadyn.open(tmp_path / "axis.h5")
    assert fresh.positions.dims[:2] == ("beta", "weights_seed")
    start_of = {w: fresh.positions.sel(beta=1, weights_seed=w).values for w in (3, 4)}
    assert not np.array_equal(start_of[3], start_of[4])


def test_the_python_keywords_match_the_command_line(simulate):
    path = simulate("cli.h5", "--n", "8", "--d", "3", "--T", "0.5", "--weights", "random",
                    "--seed", "2", "--weights-seed", "9")
    t = nadyn.simulate(n=8, d=3, T=0.5, weights="random", seed=2, weights_seed=9)
    np.testing.assert_array_equal(t.ys[-1], positions(path)[-1])


@pytest.mark.parametrize("flag,value", [("--init-seed", "-1"), ("--weights-seed", "x"),
                                        ("--noise-seed", "1.5")])
def test_bad_seeds_are_refused_before_anything_is_written(cli, tmp_path, flag, value):
    out = tmp_path / "bad.h5"
    result = subprocess.run([cli, "simulate", flag, value, "--out", str(out), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert flag.lstrip("-") in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()
