#!/usr/bin/env python3
"""The peri-ln particle system in NumPy or PyTorch (CPU), RK4 with projection: a peer
that nadyn is timed against (bench/compare_peers.py).

Same model, scheme and start as nadyn (docs/model.md §1-2, peri-ln, Q = K = V = I):

    A      = softmax(beta theta theta^T) theta          (row-wise, max subtracted)
    along  = <theta_k, A_k>,  norm = ||A_k||
    dtheta = (A - along theta) / (r norm),   dr = along / norm

classical RK4 with step dt, theta's rows projected to unit norm after every step. The
start is read from a nadyn output file (/parameters/theta0, /parameters/r_initial); the
final state is written to an .npz file, and the integration time (the loop only, no file
I/O) is printed as one JSON line.

    attention_peer.py --backend numpy|torch --start FILE.h5 --steps S --dt DT --beta B
                      --threads T --repeats R --out FINAL.npz

The thread count is set from --threads before numpy/torch are imported
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS; torch.set_num_threads).
"""
import argparse
import json
import os
import sys
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["numpy", "torch"], required=True)
    p.add_argument("--start", required=True, help="nadyn output file with /parameters/theta0")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--beta", type=float, default=4.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=1, help="timed runs; the median is printed")
    p.add_argument("--out", required=True)
    return p.parse_args()


def rk4_step(rhs, normalize):
    """One classical RK4 step of (theta, r), then theta's rows projected to unit norm; the
    same for both backends (their arrays support the same arithmetic)."""
    def step(theta, r, dt):
        k1t, k1r = rhs(theta, r)
        k2t, k2r = rhs(theta + 0.5 * dt * k1t, r + 0.5 * dt * k1r)
        k3t, k3r = rhs(theta + 0.5 * dt * k2t, r + 0.5 * dt * k2r)
        k4t, k4r = rhs(theta + dt * k3t, r + dt * k3r)
        theta = theta + (dt / 6.0) * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
        r = r + (dt / 6.0) * (k1r + 2.0 * k2r + 2.0 * k3r + k4r)
        return normalize(theta), r

    return step


def numpy_integrator(np, beta):
    def rhs(theta, r):
        logits = theta @ theta.T
        logits *= beta
        logits -= logits.max(axis=1, keepdims=True)  # max subtraction (log-sum-exp)
        np.exp(logits, out=logits)
        logits /= logits.sum(axis=1, keepdims=True)
        a = logits @ theta
        along = np.einsum("kc,kc->k", theta, a)
        norm = np.sqrt(np.einsum("kc,kc->k", a, a))
        dtheta = (a - along[:, None] * theta) / (r * norm)[:, None]
        return dtheta, along / norm

    def normalize(theta):
        theta /= np.sqrt(np.einsum("kc,kc->k", theta, theta))[:, None]
        return theta

    return rk4_step(rhs, normalize)


def torch_integrator(torch, beta):
    def rhs(theta, r):
        a = torch.softmax(beta * (theta @ theta.T), dim=1) @ theta  # softmax subtracts the max
        along = (theta * a).sum(dim=1)
        norm = torch.linalg.vector_norm(a, dim=1)
        dtheta = (a - along[:, None] * theta) / (r * norm)[:, None]
        return dtheta, along / norm

    def normalize(theta):
        return theta / torch.linalg.vector_norm(theta, dim=1, keepdim=True)

    return rk4_step(rhs, normalize)


def main():
    args = parse()
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    import h5py
    import numpy as np

    with h5py.File(args.start, "r") as f:
        theta0 = np.array(f["parameters/theta0"], dtype=np.float64)
        r0 = np.array(f["parameters/r_initial"], dtype=np.float64).reshape(-1)

    if args.backend == "numpy":
        step = numpy_integrator(np, args.beta)
        start = lambda: (theta0.copy(), r0.copy())
        finish = lambda theta, r: (theta, r)
        version = np.__version__
    else:
        import torch

        torch.set_num_threads(args.threads)
        step = torch_integrator(torch, args.beta)
        start = lambda: (torch.from_numpy(theta0.copy()), torch.from_numpy(r0.copy()))
        finish = lambda theta, r: (theta.numpy(), r.numpy())
        version = torch.__version__

    times = []
    for _ in range(args.repeats):
        theta, r = start()
        began = time.perf_counter()
        for _ in range(args.steps):
            theta, r = step(theta, r, args.dt)
        times.append(time.perf_counter() - began)
    theta, r = finish(theta, r)
    np.savez(args.out, theta=theta, r=r)
    times.sort()
    print(json.dumps({"backend": args.backend, "version": version, "threads": args.threads,
                      "steps": args.steps, "seconds": times[len(times) // 2], "all": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
