#pragma once
// The scalar ODE of the symmetric orthogonal start (docs/model.md §3): n <= d tokens
// theta_k(0) = e_k, Q = K = V = I, all r_k(0) = r0. Every pair keeps the same cosine
// gamma(t); with Z = e^beta + (n-1) e^{beta gamma}:
//
//     g(gamma)  = 2 e^{beta gamma} (1 - gamma)(1 + (n-1) gamma) / Z
//     <theta,A> = (e^beta + (n-1) gamma e^{beta gamma}) / Z
//     ‖A‖^2     = (e^{2beta} + 2(n-1) gamma e^{beta(1+gamma)}
//                  + (n-1)(1+(n-2) gamma) e^{2 beta gamma}) / Z^2
//     d gamma/dt = g(gamma) / s(t),  dr/dt per the scheme
//
// no-norm (docs/model.md §9): attention reads the tokens r theta_k, and by symmetry every r
// is the same, so the logits are beta r^2 <theta_k, theta_j> and the values r theta_j:
// A = r * (the A above with beta replaced by beta r^2). With s = r the factors r cancel in
// the directions, and the radial rate carries one:
//
//     d gamma/dt = g(gamma; beta r^2),    dr/dt = r <theta, A>(gamma; beta r^2)
//
// so gamma'(0) = 2 / (e^{beta r0^2} + n - 1). As gamma -> 1, dr/dt -> r (r ~ e^t) and the
// softmax hardens like e^{-beta r^2 (1 - gamma)}: for beta > 0 the gap stops closing at a
// positive value (beta r^2 (1 - gamma) grows, so the decay rate of 1 - gamma is integrable).
//
// Unnormalised attention (docs/model.md §8) drops the denominator Z and divides by n: A is
// the softmax A times Z / n, so g, <theta, A> and ‖A‖ all carry the factor Z / n (for no-norm
// with beta r^2 in Z). peri-ln and ngpt divide by ‖A‖ and are unchanged; gamma'(0) = 2 / n for
// post-ln, mix-ln, sqrt-scaling and no-norm, 2 / (r0 n) for pre-ln.
//
// The state is the gap u = 1 - gamma (not gamma), so the terminal decay keeps its relative
// accuracy down to u ~ 1e-300; every exponential is written as e^{-beta u} to avoid
// overflow at large beta.
#include "nadyn/model/attention.hpp"
#include "nadyn/model/scheme.hpp"

#include <cstddef>
#include <vector>

namespace nadyn {

struct reduced_parameters {
    scheme_parameters scheme;
    double n = 2; // number of tokens (real-valued is allowed: the formula is smooth in n)
    double beta = 1;
    double r0 = 1;
    attention_kind attention = attention_kind::softmax; // unnormalized: A times Z / n
};

// The symmetric-start quantities at gap u.
struct reduced_attention {
    double rate;  // g(gamma), the post-ln d gamma/dt
    double along; // <theta, A>
    double norm;  // ‖A‖
};
reduced_attention reduced_attention_at(double n, double beta, double u);

// Right-hand side on (u, r): du/dt = -g / s, dr/dt per the scheme (step_start: see
// rates() in scheme.hpp).
struct reduced_rates {
    double du_dt, dr_dt;
};
reduced_rates reduced_rhs(const reduced_parameters& p, double t, double u, double r,
                          double step_start);

// What the closed forms of gamma'(0) are made of: the symmetric start's attention at t = 0,
// before the scheme's speed (a scheme's initial_velocity(), scheme_operations.hpp).
struct initial_attention {
    double rate;           // g(0): 2 / (e^beta + n - 1), or 2 / n unnormalised
    double rate_over_norm; // g(0) / ‖A‖: 2 / sqrt(e^{2 beta} + n - 1) (‖A‖ cancels Z / n)
};

// gamma'(0), the closed forms of docs/model.md §3.4 (the paper's initial-velocity table) and
// no-norm's 2 / (e^{beta r0^2} + n - 1) (docs/model.md §9); with unnormalised attention those
// of docs/model.md §8. Each scheme's is its initial_velocity() (schemes/<name>.hpp);
// input_error for a scheme without one.
double initial_velocity_closed_form(const reduced_parameters& p);

struct reduced_sample {
    double t, u, r, velocity; // velocity = gamma'(t) = -du/dt
};

// Integrates the scalar ODE with adaptive Dormand-Prince (Odeint) at the given tolerance,
// returning samples at the requested times (sorted, >= 0). The mix-ln switch is a step
// boundary.
std::vector<reduced_sample> integrate_reduced(const reduced_parameters& p,
                                              const std::vector<double>& times, double rtol = 1e-13,
                                              double atol = 0.0);

} // namespace nadyn
