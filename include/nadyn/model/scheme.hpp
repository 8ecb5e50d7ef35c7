#pragma once
// The seven normalisation schemes as speed regulators (docs/model.md §2 and §9):
//
//     d theta_k / dt = P_{theta_k}(A_k) / s_k(t),    P_theta(v) = v - <theta, v> theta
//     d r_k / dt     = radial rate
//
// | scheme        | speed divisor s_k      | dr_k/dt                |
// |---------------|------------------------|------------------------|
// | post-ln       | 1                      | 0                      |
// | pre-ln        | r_k                    | <theta_k, A_k>         |
// | mix-ln        | 1, then r_k (t >= t_s) | 0, then <theta_k, A_k> |
// | peri-ln       | r_k ‖A_k‖              | <theta_k, A_k> / ‖A_k‖ |
// | ngpt          | ‖A_k‖ / alpha(t)       | 0                      |
// | sqrt-scaling  | sqrt(t + 1)            | 0                      |
// | no-norm       | r_k                    | <theta_k, A_k>         |
//
// Six schemes normalise what attention reads: A_k is computed from the directions theta_j.
// no-norm (x <- x + Attn(x)) does not: attention reads the tokens x_j = r_j theta_j, so the
// logits are beta r_k r_j <Q theta_k, K theta_j> and the values r_j V theta_j
// (`attention_reads_tokens`); its speed and radial rate are then pre-ln's.
//
// A new scheme is one enumerator, one row of scheme_table and one case in each switch on
// `scheme` (rates() here, chunk_rates() in src/model/system.cpp, breakpoint(), apply_layer(),
// initial_velocity_closed_form(), predicted_law(); -Wswitch names the places). See
// ARCHITECTURE.md.
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace nadyn {

enum class scheme { post_ln, pre_ln, mix_ln, peri_ln, ngpt, sqrt_scaling, no_norm };

struct scheme_info {
    scheme id;
    std::string_view name;        // command-line and file name
    std::string_view layer;       // the transformer layer it models (LN = projection)
    std::string_view speed;       // s_k as a formula
    std::string_view radial_rate; // dr_k/dt as a formula
    bool uses_magnitude;          // s_k or dr_k/dt reads r_k
    bool uses_attention_norm;     // s_k or dr_k/dt reads ‖A_k‖
    // Attention reads the tokens x_k = r_k theta_k, not the directions theta_k.
    bool attention_reads_tokens;
    // One of the six schemes of Karagodin et al.'s tables (terminal velocity, random
    // weights); the initial-velocity table lists every scheme.
    bool in_paper_tables;
};

inline constexpr std::array<scheme_info, 7> scheme_table{{
    {scheme::post_ln, "post-ln", "x <- LN(x + Attn(x))", "1", "0", false, false, false, true},
    {scheme::pre_ln, "pre-ln", "x <- x + Attn(LN(x))", "r_k", "<theta_k, A_k>", true, false, false,
     true},
    {scheme::mix_ln, "mix-ln", "post-ln for t < t_switch, then pre-ln", "1, then r_k",
     "0, then <theta_k, A_k>", true, false, false, true},
    {scheme::peri_ln, "peri-ln", "x <- x + LN(Attn(LN(x)))", "r_k ‖A_k‖", "<theta_k, A_k> / ‖A_k‖",
     true, true, false, true},
    {scheme::ngpt, "ngpt", "x <- LN(x + alpha (LN(Attn(LN(x))) - x))", "‖A_k‖ / alpha", "0", false,
     true, false, true},
    {scheme::sqrt_scaling, "sqrt-scaling", "post-ln with the update scaled by 1/sqrt(t+1)",
     "sqrt(t + 1)", "0", false, false, false, true},
    {scheme::no_norm, "no-norm", "x <- x + Attn(x) (attention reads r_k theta_k)", "r_k",
     "<theta_k, A_k>", true, false, true, false},
}};

const scheme_info& info(scheme s);
// Parses a scheme name; throws input_error listing the valid names when unknown.
scheme parse_scheme(std::string_view name);
// "post-ln, pre-ln, ..." for messages and --help.
std::string scheme_names();

// ngpt's discrete layer (the `layers` integrator; the ODE is the same for both):
// interpolate, nGPT's theta <- LN(theta + h alpha (A/‖A‖ - theta)); add, theta <- LN(theta + h
// alpha A/‖A‖), the update of peers that leave out the - theta (simuformer). LN removes the
// factor 1 - h alpha, so add with alpha is interpolate with alpha / (1 + h alpha).
enum class ngpt_layer { interpolate, add };
std::string_view to_string(ngpt_layer layer);
// Parses interpolate | add; throws input_error listing both otherwise.
ngpt_layer parse_ngpt_layer(std::string_view name);

// The scheme-dependent scalars, evaluated per token in the right-hand side.
struct scheme_parameters {
    scheme id = scheme::peri_ln;
    double alpha = 1.0;    // ngpt step (constant schedule)
    double t_switch = 0.0; // mix-ln: post-ln before, pre-ln from t_switch on
    ngpt_layer ngpt_step = ngpt_layer::interpolate; // ngpt's discrete layer
};

// Per-token speed and radial rate, from <theta_k, A_k> (`along`) and ‖A_k‖ (`norm`), at
// stage time t of a step that started at `step_start`. mix-ln picks its phase from the
// step's start, not the stage time: an integrator step ending on t_switch is then pure
// post-ln, and one starting there pure pre-ln, so the kink costs no order of accuracy.
struct token_rates {
    double inverse_speed; // 1 / s_k
    double radial_rate;   // dr_k/dt
};

inline token_rates rates(const scheme_parameters& p, double t, double step_start, double r,
                         double along, double norm) {
    switch (p.id) {
    case scheme::post_ln:
        return {1.0, 0.0};
    case scheme::pre_ln:
    case scheme::no_norm: // A_k itself differs: it is computed from r_j theta_j
        return {1.0 / r, along};
    case scheme::mix_ln:
        if (step_start < p.t_switch) return {1.0, 0.0};
        return {1.0 / r, along};
    case scheme::peri_ln:
        return {1.0 / (r * norm), along / norm};
    case scheme::ngpt:
        return {p.alpha / norm, 0.0};
    case scheme::sqrt_scaling:
        return {1.0 / std::sqrt(t + 1.0), 0.0};
    }
    return {1.0, 0.0};
}

// Times where the right-hand side is discontinuous (mix-ln's switch): adaptive
// integrators end a step exactly there.
std::optional<double> breakpoint(const scheme_parameters& p);

} // namespace nadyn
