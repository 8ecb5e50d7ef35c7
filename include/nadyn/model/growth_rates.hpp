#pragma once
// Mean-field growth rates of the uniform measure (docs/model.md §13). Linearising the
// continuity equation of the tokens' empirical measure around the uniform measure sigma on
// S^{d-1}, with Q = K = V = I, the degree-k spherical harmonics grow like exp(lambda_k t)
// under post-ln, with
//
//     w_k      = Gamma(d/2) (2/beta)^{d/2-1} I_{k+d/2-1}(beta)
//                (the Funk-Hecke coefficient of exp(beta t): the eigenvalue of
//                 f -> integral exp(beta <x, y>) f(y) dsigma(y) on degree k)
//     lambda_k = k (k + d - 2) w_k / beta            unnormalised attention
//     lambda_k = k (k + d - 2) w_k / (beta w_0)      softmax (w_0 the partition function)
//
// On the circle w_k = I_k(beta): lambda_k = k^2 I_k(beta) / beta, and divided by I_0(beta)
// for softmax. The modes observable m_k is a squared amplitude, so it grows like
// exp(2 lambda_k t).
//
// Other schemes move the same paths on another clock: at the uniform state every token has
// <theta, A> = ‖A‖ = a = w_1 / w_0 (softmax) or w_1 (unnormalised), and the speed divisor is
// the same for every token, so the amplitude grows like exp(lambda_k tau(t)) with
// tau(t) = integral_0^t ds / s(s) (uniform_clock below).
#include "nadyn/model/attention.hpp"
#include "nadyn/model/scheme.hpp"

#include <cstddef>

namespace nadyn {

// w_k above, for beta in (0, 700] and d >= 2 (input_error otherwise).
double funk_hecke_exp(std::size_t k, double beta, std::size_t d);

// lambda_k(beta) of the degree-k mode, k >= 1, under post-ln (input_error for k = 0, beta <= 0
// or d < 2; unnormalised attention also for a w_k that a double does not hold, e.g. beta > 700).
// Softmax rates come from the ratios w_k / w_0 (funk_hecke.hpp), finite at any beta and d.
double growth_rate(std::size_t k, double beta, std::size_t d, attention_kind kind);

// The factor by which n tokens drawn independently from the uniform measure see every rate
// lambda_k, against the mean-field measure (docs/model.md §13.5): a token's own atom carries
// weight e^beta in its softmax denominator but moves nothing (P_theta theta = 0), so
//     softmax       (n - 1) w_0 / ((n - 1) w_0 + e^beta)
//     unnormalised  (n - 1) / n
// Close to 1 while n w_0 >> e^beta (the circle, small beta), far below it in high dimension
// (d = 64, beta = 20: w_0 e^-beta ~ 4e-8, so even n = 10^6 tokens see a tenth of the rate).
// input_error for n < 2, and where w_0 is not a finite double (the checks of funk_hecke_exp).
double own_weight_factor(std::size_t n, double beta, std::size_t d, attention_kind kind);

// argmax_k lambda_k(beta) over k >= 1, the fastest-growing mode; the same for softmax and
// unnormalised attention (their rates differ by the factor w_0).
std::size_t fastest_mode(double beta, std::size_t d);

// <theta, A> = ‖A‖ at the uniform state: w_1 / w_0 for softmax, w_1 unnormalised.
double uniform_alignment(double beta, std::size_t d, attention_kind kind);

// tau(t) = integral_0^t ds / s(s), the speed divisor of the scheme evaluated at the uniform
// state (docs/model.md §13.3): the amplitudes grow like exp(lambda_k tau(t)).
//   post-ln        t
//   sqrt-scaling   2 (sqrt(t + 1) - 1)
//   pre-ln         ln(1 + a t / r0) / a            (r grows like r0 + a t)
//   mix-ln         post-ln's up to t_switch, then pre-ln's from r0
//   peri-ln        ln(1 + t / r0) / a              (r grows like r0 + t, s = r a)
//   ngpt           alpha t / a
// no-norm has no such clock (its attention reads r theta, so beta itself changes with r):
// input_error.
double uniform_clock(const scheme_parameters& scheme, double t, double beta, std::size_t d,
                     attention_kind kind, double r0 = 1.0);

} // namespace nadyn
