"""Each peer's update rule, written out literally in numpy, matches nadyn's run to round-off.

The peers (docs/from-peers.md):
- simuformer (github.com/nikitus20/simuformer, simuxform.py): tokens are the rows of M, one
  step of size eta computes, for each head, SM = softmax(beta M B M^T) row by row and adds
  SM M V' / H; post-ln then sets M <- normalize(M + eta A), ngpt M <- normalize(M + eta 0.2
  A / |A|).
- sphere.py of Geshkovski, Letrouit, Polyanskiy and Rigollet (github.com/borjanG/
  2023-transformers-rotf): z <- normalize(z + dt attention (V z)), attention = softmax of
  beta <A z_i, A z_j> (or exp(...) / n without the denominator).

The functions below are our own code from those descriptions, in the peers' conventions
(row tokens, B and V' as the peers hold them); the test converts nadyn's recorded weights
with the mapping of docs/from-peers.md (B = Q^T K, V' = V^T) and checks that the peer's
trajectory from nadyn's recorded start equals nadyn's frames to 1e-12. The runs are small
(n = 16, a few dozen layers): seconds in all.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import tomllib

import h5py
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NADYN = os.environ.get("NADYN_CLI", os.path.join(ROOT, "build", "bin", "nadyn"))
EXAMPLES = os.path.join(ROOT, "examples")
TOL = 1e-12


# ---------------------------------------------------------------------------------------
# The peers' update rules, literally

def _normalize_rows(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    # torch.softmax subtracts the row maximum too; the result is the same to round-off.
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def simuformer_step(M, Bs, Vps, beta, eta, norm, eps=0.0):
    """One SimuXForm.step: M (n, d) rows; Bs, Vps the per-head B and V' (d, d).

    eps is the peer's 1e-9 added to |A| (ngpt); 0 here, see docs/from-peers.md."""
    A = np.zeros_like(M)
    for B, Vp in zip(Bs, Vps):
        SM = _softmax_rows(beta * (M @ B @ M.T))
        A += SM @ (M @ Vp) / len(Bs)
    if norm == "postln":
        return _normalize_rows(M + eta * A)
    if norm == "ngpt":
        A_normalized = A / (np.linalg.norm(A, axis=1, keepdims=True) + eps)
        return _normalize_rows(M + eta * 0.2 * A_normalized)
    raise ValueError(norm)


def simuformer_preln_step(M, r, Bs, Vps, beta, eta):
    """The peer's --norm preln step: r <- r + eta r sum_c A_c, M <- normalize(M + eta P(A)/r)."""
    A = np.zeros_like(M)
    for B, Vp in zip(Bs, Vps):
        A += _softmax_rows(beta * (M @ B @ M.T)) @ (M @ Vp) / len(Bs)
    r = r + eta * r * A.sum(axis=1)
    A_tangent = A - (M * A).sum(axis=1, keepdims=True) * M
    return _normalize_rows(M + eta * A_tangent / r[:, None]), r


def pre_ln_layer(M, r, Bs, Vps, beta, h):
    """nadyn's pre-ln layer (docs/model.md section 4): y = r theta + h A, theta <- y/|y|, r <- |y|."""
    A = np.zeros_like(M)
    for B, Vp in zip(Bs, Vps):
        A += _softmax_rows(beta * (M @ B @ M.T)) @ (M @ Vp) / len(Bs)
    y = r[:, None] * M + h * A
    r = np.linalg.norm(y, axis=1)
    return y / r[:, None], r


def sphere_py_step(z, Amat, V, beta, dt, denominator=True):
    """One Euler step of sphere.py: z (n, d) rows, Amat the matrix inside the logits."""
    Az = Amat @ z.T
    exp_beta_dot = np.exp(beta * (Az.T @ Az))
    if denominator:
        attention = exp_beta_dot / exp_beta_dot.sum(axis=1)[:, None]
    else:
        attention = exp_beta_dot / z.shape[0]
    return _normalize_rows(z + dt * (attention @ (V @ z.T).T))


# ---------------------------------------------------------------------------------------
# nadyn's side

def simulate(tmp_path, name, flags):
    out = tmp_path / f"{name}.h5"
    command = [NADYN, "simulate", *flags, "--every", "1", "--positions", "all", "--quiet",
               "--threads", "1", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, shlex.join(command) + "\n" + result.stderr
    with h5py.File(out, "r") as f:
        p = f["parameters"]
        heads = int(p.attrs["heads"])
        d = int(p.attrs["d"])

        def weights(name):
            if name not in p:  # the identity is not recorded
                return np.broadcast_to(np.eye(d), (heads, d, d))
            w = p[name][()]
            return w.reshape(heads, d, d)

        return {
            "theta0": p["theta0"][()],
            "Q": weights("Q"), "K": weights("K"), "V": weights("V"),
            "positions": f["particles/tokens/position/value"][()],
            "alpha": float(p.attrs["alpha"]),
        }


def peer_weights(run):
    """nadyn's Q, K, V as the peer holds them: B = Q^T K (logits theta_k^T B theta_j) and
    V' = V^T (the peer's value of token j is the row theta_j^T V')."""
    Bs = [Q.T @ K for Q, K in zip(run["Q"], run["K"])]
    Vps = [V.T for V in run["V"]]
    return Bs, Vps


def run_flags(toml_path, **overrides):
    """The [run] table of a shipped experiment as nadyn simulate flags, with overrides."""
    with open(toml_path, "rb") as f:
        table = dict(tomllib.load(f)["run"])
    table.update(overrides)
    table.pop("every", None)
    table.pop("positions", None)
    return [a for k, v in table.items() for a in (f"--{k.replace('_', '-')}", str(v))]


def max_deviation(peer_frames, nadyn_frames):
    return float(np.max(np.abs(np.asarray(peer_frames) - nadyn_frames)))


# ---------------------------------------------------------------------------------------
# simuformer

SIMUFORMER = os.path.join(EXAMPLES, "simuformer.toml")


@pytest.mark.parametrize("beta", [0.1, 15.0])
def test_simuformer_postln_is_the_shipped_experiment(tmp_path, beta):
    # The shipped experiment's own parameters (8 interaction-product heads, d = 16, h = 0.1),
    # fewer tokens and layers: the peer's post-ln steps from nadyn's start and weights.
    flags = run_flags(SIMUFORMER, n=16, T=3, beta=beta, seed=7)
    run = simulate(tmp_path, "simuformer", flags)
    Bs, Vps = peer_weights(run)
    assert len(Bs) == 8 and Bs[0].shape == (16, 16)
    # interaction-product puts B in K (Q = I) and keeps V = I: the peer's randomKQ = 1, randomV = 0
    np.testing.assert_array_equal(run["Q"], np.broadcast_to(np.eye(16), (8, 16, 16)))
    np.testing.assert_array_equal(run["V"], np.broadcast_to(np.eye(16), (8, 16, 16)))
    M, frames = run["theta0"], [run["theta0"]]
    for _ in range(30):
        M = simuformer_step(M, Bs, Vps, beta, 0.1, "postln")
        frames.append(M)
    assert run["positions"].shape[0] == 31
    assert max_deviation(frames, run["positions"]) < TOL


def test_simuformer_value_interaction_is_random_v_2(tmp_path):
    # The peer's randomV = 2 with randomKQ = 1: V' = B / sqrt(d), i.e. nadyn's --value
    # interaction (V = B^T / sqrt(d)); 3 heads, beta = 5.
    d = 8
    run = simulate(tmp_path, "value", [
        "--scheme", "post-ln", "--integrator", "layers", "--dt", "0.1", "--T", "2",
        "--n", "12", "--d", str(d), "--heads", "3", "--weights", "interaction-product",
        "--value", "interaction", "--beta", "5", "--seed", "3"])
    Bs, Vps = peer_weights(run)
    for B, Vp in zip(Bs, Vps):
        np.testing.assert_allclose(Vp, B / np.sqrt(d), rtol=0, atol=1e-15)
    M, frames = run["theta0"], [run["theta0"]]
    for _ in range(20):
        M = simuformer_step(M, Bs, Vps, 5.0, 0.1, "postln")
        frames.append(M)
    assert max_deviation(frames, run["positions"]) < TOL


def test_simuformer_ngpt_with_mapped_alpha(tmp_path):
    # The peer's ngpt step theta + h 0.2 A/|A| is nadyn's theta + h alpha (A/|A| - theta)
    # rescaled by 1/(1 - h alpha), so alpha = 0.2 / (1 + 0.2 h) = 0.2 / 1.02 for h = 0.1.
    h = 0.1
    alpha = 0.2 / (1 + 0.2 * h)
    flags = run_flags(SIMUFORMER, n=16, T=3, beta=4, seed=5, scheme="ngpt",
                      alpha=repr(alpha))
    run = simulate(tmp_path, "ngpt", flags)
    assert run["alpha"] == alpha
    Bs, Vps = peer_weights(run)
    M, frames = run["theta0"], [run["theta0"]]
    for _ in range(30):
        M = simuformer_step(M, Bs, Vps, 4.0, h, "ngpt")
        frames.append(M)
    assert max_deviation(frames, run["positions"]) < TOL
    # ...and the unmapped alpha = 0.2 is a different trajectory (the test can fail).
    wrong = simulate(tmp_path, "ngpt_wrong", run_flags(
        SIMUFORMER, n=16, T=3, beta=4, seed=5, scheme="ngpt", alpha="0.2"))
    assert max_deviation(frames, wrong["positions"]) > 1e-4


def test_simuformer_ngpt_as_its_own_layer(tmp_path):
    # --ngpt-layer add is the peer's layer theta + h alpha A/|A| itself: alpha = 0.2 as the
    # peer has it, no mapping.
    flags = run_flags(SIMUFORMER, n=16, T=3, beta=4, seed=5, scheme="ngpt", alpha="0.2",
                      ngpt_layer="add")
    run = simulate(tmp_path, "ngpt_add", flags)
    assert run["alpha"] == 0.2
    Bs, Vps = peer_weights(run)
    M, frames = run["theta0"], [run["theta0"]]
    for _ in range(30):
        M = simuformer_step(M, Bs, Vps, 4.0, 0.1, "ngpt")
        frames.append(M)
    assert max_deviation(frames, run["positions"]) < TOL
    with h5py.File(tmp_path / "ngpt_add.h5", "r") as f:
        assert f["parameters"].attrs["ngpt_layer"] == "add"
    # The ODE integrators do not depend on it: an rk4 run is the same bit for bit.
    ode = [simulate(tmp_path, f"rk4_{layer}", ["--scheme", "ngpt", "--integrator", "rk4",
                                               "--alpha", "0.2", "--ngpt-layer", layer,
                                               "--n", "8", "--d", "4", "--T", "0.5"])
           for layer in ("add", "interpolate")]
    np.testing.assert_array_equal(ode[0]["positions"], ode[1]["positions"])


def test_simuformer_preln_is_not_nadyn_pre_ln(tmp_path):
    # nadyn's pre-ln is the layer x <- x + h Attn(LN(x)) (to round-off); the peer's preln
    # moves the magnitude by r sum_c A_c instead of <theta, A> and drifts away at first order
    # (docs/from-peers.md gives these numbers).
    flags = run_flags(SIMUFORMER, n=64, T=3, beta=1, seed=5, scheme="pre-ln")
    run = simulate(tmp_path, "preln", flags)
    with h5py.File(tmp_path / "preln.h5", "r") as f:
        magnitudes = f["particles/tokens/magnitude/value"][()]
    Bs, Vps = peer_weights(run)
    M = P = run["theta0"]
    r = rp = np.ones(64)
    ours, ours_r, peer, peer_r = [M], [r], [P], [rp]
    for _ in range(30):
        M, r = pre_ln_layer(M, r, Bs, Vps, 1.0, 0.1)
        P, rp = simuformer_preln_step(P, rp, Bs, Vps, 1.0, 0.1)
        ours.append(M), ours_r.append(r), peer.append(P), peer_r.append(rp)
    assert max_deviation(ours, run["positions"]) < TOL
    assert max_deviation(ours_r, magnitudes) < TOL
    assert max_deviation(peer, run["positions"]) > 0.1
    assert max_deviation(peer_r, magnitudes) > 1.0

    # The peer's rate depends on the frame: rotate the tokens and the matrices (B -> R B R^T,
    # V' -> R V' R^T), and its magnitudes change while nadyn's do not.
    R, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((16, 16)))
    Bs_R = [R @ B @ R.T for B in Bs]
    Vps_R = [R @ Vp @ R.T for Vp in Vps]
    start = run["theta0"]
    _, r1 = simuformer_preln_step(start, np.ones(64), Bs, Vps, 1.0, 0.1)
    _, r1_R = simuformer_preln_step(start @ R.T, np.ones(64), Bs_R, Vps_R, 1.0, 0.1)
    assert np.max(np.abs(r1 - r1_R)) > 1e-3
    _, s1 = pre_ln_layer(start, np.ones(64), Bs, Vps, 1.0, 0.1)
    _, s1_R = pre_ln_layer(start @ R.T, np.ones(64), Bs_R, Vps_R, 1.0, 0.1)
    assert np.max(np.abs(s1 - s1_R)) < TOL


def test_simuformer_density_is_pair_density(tmp_path):
    # The shipped sweep (reduced), its positions kept: the peer's density, the fraction of
    # ordered pairs k != l with <theta_k, theta_l> > 0.999, recomputed from the positions,
    # is the recorded pair_density at every frame of every run.
    out = tmp_path / "sweep.h5"
    command = [NADYN, "sweep", SIMUFORMER, "--set", "run.n=16", "--set", "run.T=20",
               "--set", 'run.positions="all"', "--set", "sweep.seed.range=[1,2]",
               "--set", "sweep.beta.linspace=[4,15,2]", "--out", str(out), "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with h5py.File(out, "r") as f:
        positions = f["positions"][()]   # (beta, seed, frame, n, d)
        recorded = f["pair_density"][()]  # (beta, seed, frame)
        time = f["time"][()]
    n = positions.shape[-2]
    gram = np.einsum("bsfkc,bsflc->bsfkl", positions, positions)
    off_diagonal = ~np.eye(n, dtype=bool)
    peer_density = (gram[..., off_diagonal] > 0.999).sum(axis=-1) / (n * (n - 1))
    np.testing.assert_allclose(recorded, peer_density, rtol=0, atol=1e-15)
    assert recorded.max() > 0.1  # the runs do cluster: the comparison is not of zeros
    np.testing.assert_allclose(time[:3], [0, 0.2, 0.4], atol=1e-12)


# ---------------------------------------------------------------------------------------
# sphere.py

SPHERE = os.path.join(EXAMPLES, "sphere.toml")


def test_sphere_py_is_the_shipped_experiment(tmp_path):
    # The shipped experiment itself, full size (64 tokens, 150 steps: milliseconds).
    out = tmp_path / "sphere.h5"
    result = subprocess.run([NADYN, "sweep", SPHERE, "--out", str(out), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with h5py.File(out, "r") as f:
        positions = f["positions"][()]
        time = f["time"][()]
    np.testing.assert_allclose(time, np.linspace(0, 15, 151), rtol=0, atol=1e-12)
    z, frames = positions[0], [positions[0]]
    for _ in range(150):
        z = sphere_py_step(z, np.eye(3), np.eye(3), 1.0, 0.1)
        frames.append(z)
    assert max_deviation(frames, positions) < TOL


@pytest.mark.parametrize("denominator", [True, False])
def test_sphere_py_with_weights(tmp_path, denominator):
    # sphere.py with matrices other than the identity (its A inside the logits is nadyn's
    # Q = K = A: --weights symmetric; V: --value gaussian) and without the denominator
    # (--attention unnormalized).
    flags = ["--scheme", "post-ln", "--integrator", "layers", "--dt", "0.1", "--T", "3",
             "--n", "20", "--d", "5", "--beta", "2", "--weights", "symmetric",
             "--value", "gaussian", "--seed", "11",
             "--attention", "softmax" if denominator else "unnormalized"]
    run = simulate(tmp_path, f"sphere_{denominator}", flags)
    Amat, V = run["Q"][0], run["V"][0]
    np.testing.assert_array_equal(run["K"][0], Amat)
    z, frames = run["theta0"], [run["theta0"]]
    for _ in range(30):
        z = sphere_py_step(z, Amat, V, 2.0, 0.1, denominator)
        frames.append(z)
    assert max_deviation(frames, run["positions"]) < TOL
