"""Closed forms of the symmetric orthogonal start (docs/model.md §3).

n <= d tokens start at theta_k = e_k with Q = K = V = I and every magnitude r0; then every
pairwise cosine equals gamma(t), gamma(0) = 0, and the initial slope gamma'(0) has a closed
form per scheme. The same numbers as ``nadyn table initial`` (src/reduced.cpp).
"""

from __future__ import annotations

import math

__all__ = ["initial_velocity", "SCHEMES"]

SCHEMES = ("post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling", "no-norm")


def initial_velocity(
    scheme: str,
    n: int,
    beta: float,
    *,
    r0: float = 1.0,
    alpha: float = 1.0,
    t_switch: float = 1.0,
) -> float:
    """gamma'(0) for `scheme` at the orthogonal start of n tokens.

    post-ln, sqrt-scaling: 2 / (e^beta + n - 1)
    pre-ln:                2 / (r0 (e^beta + n - 1))
    mix-ln:                post-ln's before the switch (t_switch > 0), pre-ln's otherwise
    peri-ln:               2 / (r0 sqrt(e^{2 beta} + n - 1))
    ngpt:                  2 alpha / sqrt(e^{2 beta} + n - 1)

    Written with e^{-beta} so that any finite beta gives a finite number.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme '{scheme}'; valid schemes: {', '.join(SCHEMES)}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    eb = math.exp(-beta)
    linear = 2.0 * eb / (1.0 + (n - 1.0) * eb)
    root = 2.0 * eb / math.sqrt(1.0 + (n - 1.0) * eb * eb)
    if scheme in ("post-ln", "sqrt-scaling"):
        return linear
    if scheme == "mix-ln":
        return linear if t_switch > 0.0 else linear / r0
    if scheme == "pre-ln":
        return linear / r0
    if scheme == "peri-ln":
        return root / r0
    if scheme == "no-norm":  # the logits of the tokens r0 e_k are beta r0^2 <e_k, e_j>
        e_tokens = math.exp(-beta * r0 * r0)
        return 2.0 * e_tokens / (1.0 + (n - 1.0) * e_tokens)
    return alpha * root
