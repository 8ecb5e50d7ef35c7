"""The optional observable `energy` (docs/model.md §5.1) against numpy from the recorded
positions, magnitudes and weights; at beta = 0 (the limit), at beta = 1e3 (where exp
overflows naively); in sweep files, `nadyn.open` and `nadyn inspect`."""
from __future__ import annotations

import subprocess

import h5py
import numpy as np
import pytest

import nadyn


def numpy_energy(path, scheme):
    """(1/beta) log of the mean over heads and pairs of exp(beta <Q_h y_i, K_h y_j>), per
    frame, from the file's positions (y = theta, or r theta for no-norm) and /parameters."""
    with h5py.File(path, "r") as f:
        theta = f["particles/tokens/position/value"][()]
        r = f["particles/tokens/magnitude/value"][()]
        params = f["parameters"]
        beta = float(params.attrs["beta"])
        heads = int(params.attrs["heads"])
        d = theta.shape[2]
        eye = np.stack([np.eye(d)] * heads)
        q = params["Q"][()].reshape(heads, d, d) if "Q" in params else eye
        k = params["K"][()].reshape(heads, d, d) if "K" in params else eye
    y = theta * r[:, :, None] if scheme == "no-norm" else theta
    # logits[f, h, i, j] = <Q_h y_i, K_h y_j>
    logits = np.einsum("fia,hba,hbc,fjc->fhij", y, q, k, y)
    flat = logits.reshape(len(y), -1)
    if beta == 0.0:
        return flat.mean(axis=1)
    # The largest beta G subtracted: exp(1e3) overflows a double.
    top = (beta * flat).max(axis=1)
    return (top + np.log(np.exp(beta * flat - top[:, None]).mean(axis=1))) / beta


@pytest.mark.parametrize("flags", [
    ["--scheme", "pre-ln", "--beta", "2", "--weights", "gaussian", "--heads", "2",
     "--head-combine", "sum", "--T", "2"],
    ["--scheme", "no-norm", "--beta", "0.5", "--T", "1", "--r0", "0.7"],
    ["--scheme", "post-ln", "--beta", "1000", "--weights", "symmetric", "--value", "qk",
     "--T", "2"],
    ["--scheme", "peri-ln", "--beta", "0", "--weights", "orthogonal", "--T", "2"],
])
def test_energy_matches_numpy_from_the_positions(simulate, flags):
    path = simulate("energy.h5", "--n", "12", "--d", "4", "--dt", "0.01",
                    "--observe", "energy", "--positions", "all", *flags)
    scheme = flags[1]
    expected = numpy_energy(path, scheme)
    with h5py.File(path, "r") as f:
        energy = f["observables/energy/value"][()]
        assert f["observables/energy"].attrs["unit"] in (b"1", "1")
        assert "interaction energy" in str(f["observables/energy"].attrs["description"])
    assert np.isfinite(energy).all()
    np.testing.assert_allclose(energy, expected, rtol=1e-11, atol=1e-13)
    # nadyn.open reads it as a series over time.
    assert nadyn.open(path).energy.dims == ("time",)


def test_energy_rises_for_identity_weights_and_falls_for_minus_identity(simulate):
    for value, sign in (("same", 1.0), ("minus-identity", -1.0)):
        path = simulate(f"{value}.h5", "--scheme", "post-ln", "--n", "16", "--d", "3",
                        "--beta", "3", "--T", "4", "--value", value, "--observe", "energy",
                        "--positions", "none")
        energy = nadyn.open(path).energy.values
        steps = sign * np.diff(energy)
        assert (steps >= -1e-11).all() and steps.sum() > 1e-3, value


def test_energy_in_sweeps_and_inspect(cli, tmp_path):
    for observe in ("none", "energy"):
        experiment = tmp_path / f"{observe}.toml"
        experiment.write_text('[run]\nn = 8\nd = 3\nT = 2\ndt = 0.1\npositions = "none"\n'
                              f'observe = "{observe}"\n'
                              '[sweep]\nbeta = [0, 2, 1000]\nseed = [1, 2]\n')
        subprocess.run([cli, "sweep", str(experiment), "--out", str(tmp_path / f"{observe}.h5"),
                        "--quiet"], check=True, capture_output=True)
    assert "energy" not in nadyn.open(tmp_path / "none.h5")
    data = nadyn.open(tmp_path / "energy.h5")
    assert set(data.energy.dims) == {"beta", "seed", "time"}
    assert np.isfinite(data.energy.values).all()
    # Each sweep point equals the run alone (nadyn rerun repeats it bit for bit).
    rerun = tmp_path / "point.h5"
    subprocess.run([cli, "rerun", str(tmp_path / "energy.h5"), "--point", "5", "--out",
                    str(rerun)], check=True, capture_output=True)
    alone = nadyn.open(rerun).energy.values
    point = data.energy.stack(point=("beta", "seed")).transpose("point", "time").values[5]
    np.testing.assert_array_equal(alone, point[: len(alone)])
    described = subprocess.run([cli, "inspect", str(rerun), "--describe"], check=True,
                               capture_output=True, text=True).stdout
    assert "energy" in described and "interaction energy" in described


def test_energy_refused_with_qkv_norm(simulate):
    simulate("refused.h5", "--observe", "energy", "--qkv-norm", expect=2)
