"""Closed forms of the symmetric orthogonal start (docs/model.md §3), from the library.

n <= d tokens start at theta_k = e_k with Q = K = V = I and every magnitude r0; then every
pairwise cosine equals gamma(t), gamma(0) = 0, and the initial slope gamma'(0) has a closed
form per scheme. The formulas exist once, in the library (src/reduced.cpp); this module
calls them through the compiled module ``nadyn._core`` (``nadyn.has_core``), the code behind
``nadyn table initial``.
"""

from __future__ import annotations

__all__ = ["initial_velocity"]


def _core():
    from . import _core as core  # the package's compiled module, when built

    if core is None:
        raise RuntimeError("nadyn.closed_forms needs the compiled module nadyn._core, which is "
                           "not built here (build it: bash scripts/setup.sh)")
    return core


def initial_velocity(scheme: str, n: int, beta: float, *, r0: float = 1.0, alpha: float = 1.0,
                     t_switch: float = 1.0) -> float:
    """gamma'(0) for `scheme` at the orthogonal start of n tokens.

    post-ln, sqrt-scaling: 2 / (e^beta + n - 1)
    pre-ln:                2 / (r0 (e^beta + n - 1))
    mix-ln:                post-ln's before the switch (t_switch > 0), pre-ln's otherwise
    peri-ln:               2 / (r0 sqrt(e^{2 beta} + n - 1))
    ngpt:                  2 alpha / sqrt(e^{2 beta} + n - 1)
    no-norm:               2 / (e^{beta r0^2} + n - 1)
    """
    return _core().closed_forms.initial_velocity(scheme, n, beta, r0=r0, alpha=alpha,
                                                 t_switch=t_switch)
