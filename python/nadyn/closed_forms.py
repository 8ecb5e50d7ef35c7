"""Closed forms from the library: the symmetric orthogonal start (docs/model.md §3) and the
growth rates of the uniform measure (§13, growth_rate, fastest_mode, uniform_clock).

n <= d tokens start at theta_k = e_k with Q = K = V = I and every magnitude r0; then every
pairwise cosine equals gamma(t), gamma(0) = 0, and the initial slope gamma'(0) has a closed
form per scheme. The formulas exist once, in the library (src/model/reduced.cpp); this module
calls them through the compiled module ``nadyn._core`` (``nadyn.has_core``), the code behind
``nadyn table initial``.
"""

from __future__ import annotations

__all__ = ["initial_velocity", "growth_rate", "own_weight_factor", "fastest_mode",
           "uniform_clock"]


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


def growth_rate(k: int, beta: float, d: int = 2, attention: str = "softmax") -> float:
    """lambda_k(beta): mode k of the empirical measure grows like exp(lambda_k t) around the
    uniform measure on S^{d-1} (post-ln, identity weights; docs/model.md §13).

    unnormalized: k (k + d - 2) w_k / beta, softmax: the same divided by w_0, with
    w_k = Gamma(d/2) (2/beta)^{d/2-1} I_{k+d/2-1}(beta); on the circle k^2 I_k(beta) / beta
    (/ I_0(beta)). The modes observable m_k, a squared amplitude, grows like
    exp(2 lambda_k t).
    """
    return _core().closed_forms.growth_rate(k, beta, d, attention)


def own_weight_factor(n: int, beta: float, d: int = 2, attention: str = "softmax") -> float:
    """The factor on every lambda_k for n tokens drawn independently from the uniform
    measure (docs/model.md §13.5): a token's own atom adds e^beta to its softmax denominator
    and nothing to its velocity, so the rates are lambda_k (n - 1) w_0 / ((n - 1) w_0 +
    e^beta) (softmax; (n - 1) / n unnormalised), w_0 = Gamma(d/2) (2/beta)^{d/2-1}
    I_{d/2-1}(beta)."""
    return _core().closed_forms.own_weight_factor(n, beta, d, attention)


def fastest_mode(beta: float, d: int = 2) -> int:
    """k_max(beta) = argmax_k lambda_k(beta) (the same for softmax and unnormalised)."""
    return _core().closed_forms.fastest_mode(beta, d)


def uniform_clock(scheme: str, t: float, beta: float, d: int = 2, attention: str = "softmax", *,
                  r0: float = 1.0, alpha: float = 1.0, t_switch: float = 0.0) -> float:
    """tau(t): the scheme's clock at the uniform state, amplitudes grow like
    exp(lambda_k tau(t)) (docs/model.md §13.3). With a = <theta, A> at the uniform state:

    post-ln t, sqrt-scaling 2 (sqrt(t + 1) - 1), pre-ln ln(1 + a t / r0) / a,
    mix-ln post-ln's then pre-ln's from t_switch, peri-ln ln(1 + t / r0) / a, ngpt alpha t / a.
    """
    return _core().closed_forms.uniform_clock(scheme, t, beta, d, attention, r0=r0, alpha=alpha,
                                              t_switch=t_switch)
