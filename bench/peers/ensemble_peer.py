"""Batched PyTorch ensemble of the attention dynamics: the peer of `nadyn sweep`.

Same model as nadyn (docs/model.md sections 1-2): pre-ln, d theta_k/dt = P_theta(A_k) / r_k,
d r_k/dt = <theta_k, A_k>, A_k = sum_j softmax_j(beta <Q theta_k, K theta_j>) V theta_j, with
Gaussian Q, K, V (variance 1/d) per run and H heads averaged; explicit Euler, directions
projected back to the sphere after every step. A batch of B runs is one tensor (B, n, d),
float64, on the CPU: the way a researcher batches an ensemble in PyTorch.

Prints one JSON line: seconds, flops, and the final mean cosine of run 0.
"""
import argparse
import json
import time

import torch


def run(batch, n, d, heads, beta, dt, steps, seed):
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    theta = theta / theta.norm(dim=-1, keepdim=True)
    r = torch.ones(batch, n, 1, dtype=torch.float64)
    scale = d ** -0.5
    Q = torch.randn(batch, heads, d, d, generator=g, dtype=torch.float64) * scale
    K = torch.randn(batch, heads, d, d, generator=g, dtype=torch.float64) * scale
    V = torch.randn(batch, heads, d, d, generator=g, dtype=torch.float64) * scale
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(steps):
            x = theta.unsqueeze(1)  # (B, 1, n, d)
            q = x @ Q.transpose(-1, -2)
            k = x @ K.transpose(-1, -2)
            v = x @ V.transpose(-1, -2)
            w = torch.softmax(beta * (q @ k.transpose(-1, -2)), dim=-1)
            A = (w @ v).mean(dim=1)  # (B, n, d), heads averaged
            along = (theta * A).sum(dim=-1, keepdim=True)
            theta = theta + dt * (A - along * theta) / r
            r = r + dt * along
            theta = theta / theta.norm(dim=-1, keepdim=True)
    seconds = time.perf_counter() - start
    s = theta[0].sum(dim=0)
    mean_cos = float((s @ s - n) / (n * (n - 1)))
    flops = batch * steps * heads * (4.0 * n * n * d + 6.0 * n * d * d)
    return seconds, flops, mean_cos


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--d", type=int, default=16)
    parser.add_argument("--heads", type=int, default=1)
    parser.add_argument("--beta", type=float, default=4.0)
    parser.add_argument("--dt", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    seconds, flops, mean_cos = run(args.batch, args.n, args.d, args.heads, args.beta, args.dt,
                                   args.steps, seed=1)
    print(json.dumps({"seconds": seconds, "flops": flops, "mean_cos": mean_cos,
                      "threads": torch.get_num_threads(), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
