#pragma once
// The normalisation schemes as speed regulators (docs/model.md §2 and §9):
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
// Each scheme is one struct in its own file, include/nadyn/model/schemes/<name>.hpp (its row,
// rates, discrete layer, breakpoint and optional closed forms; the members a scheme struct
// has are listed in schemes/post_ln.hpp), and schemes/list.hpp lists them all once: that list
// generates scheme_table, parse_scheme() and the compiled dispatch (scheme_operations.hpp).
// This header is the vocabulary the schemes are written in and the table's interface; it
// knows no scheme by its formulas. See ARCHITECTURE.md, "How to add a scheme".
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace nadyn {

// A scheme of the library: its position in the list of schemes/list.hpp. The enumerators name
// the schemes code refers to by name (schemes/list.hpp checks that they match the list); a
// scheme added to the list needs none (scheme_id<S> in schemes/list.hpp is its id).
enum class scheme { post_ln, pre_ln, mix_ln, peri_ln, ngpt, sqrt_scaling, no_norm };

// What a scheme says about itself: the row a scheme struct declares (`static constexpr
// scheme_row row`), in designated initialisers.
struct scheme_row {
    std::string_view name;            // command-line and file name
    std::string_view layer;           // the transformer layer it models (LN = projection)
    std::string_view speed;           // s_k as a formula
    std::string_view radial_rate;     // dr_k/dt as a formula
    bool uses_magnitude = false;      // s_k or dr_k/dt reads r_k
    bool uses_attention_norm = false; // s_k or dr_k/dt reads ‖A_k‖
    // Attention reads the tokens x_k = r_k theta_k, not the directions theta_k.
    bool attention_reads_tokens = false;
    // One of the six schemes of Karagodin et al.'s tables (terminal velocity, random
    // weights); the initial-velocity table lists every scheme.
    bool in_paper_tables = false;
};

// A row of scheme_table: the scheme's own row, its id, and which of the optional parts
// (scheme_operations.hpp) it has.
struct scheme_info : scheme_row {
    scheme id{};
    bool has_breakpoint = false;       // its right-hand side jumps at some time (mix-ln)
    bool has_initial_velocity = false; // a closed form of gamma'(0) (reduced.hpp)
    bool has_clock = false;            // a clock at the uniform state (growth_rates.hpp)
    bool has_terminal_law = false;     // a terminal decay law (fit.hpp)
};

// Every scheme of the library, in --help order (generated from schemes/list.hpp).
extern const std::span<const scheme_info> scheme_table;

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

struct scheme_operations;

// The scheme-dependent scalars, evaluated per token in the right-hand side.
struct scheme_parameters {
    scheme id = scheme::peri_ln;
    double alpha = 1.0;    // ngpt step (constant schedule)
    double t_switch = 0.0; // mix-ln: post-ln before, pre-ln from t_switch on
    ngpt_layer ngpt_step = ngpt_layer::interpolate; // ngpt's discrete layer
    // A scheme outside the library's list (scheme_operations.hpp: custom_scheme<S>): its
    // compiled operations, which then replace those of `id`. nullptr: the scheme `id`.
    const scheme_operations* custom = nullptr;
};

// Per-token speed and radial rate, from <theta_k, A_k> (`along`) and ‖A_k‖ (`norm`), at
// stage time t of a step that started at `step_start`. mix-ln picks its phase from the
// step's start, not the stage time: an integrator step ending on t_switch is then pure
// post-ln, and one starting there pure pre-ln, so the kink costs no order of accuracy.
struct token_rates {
    double inverse_speed; // 1 / s_k
    double radial_rate;   // dr_k/dt
};

// One token's discrete layer (the `layers` integrator): y = base theta + weight A, then
// theta = y / ‖y‖, and r = ‖y‖ unless the layer ends with LN (`keeps_magnitude`: r stays
// r0, as in the ODE). integrate.hpp's apply_layer() applies it.
struct layer_step {
    double base = 1.0;
    double weight = 0.0;
    bool keeps_magnitude = true;
};

// The row of the scheme p names (its custom operations' row for a scheme outside the list).
const scheme_info& info(const scheme_parameters& p);

// rates() of the scheme p names, for one token (the right-hand side calls the scheme's own,
// compiled per scheme over chunks of tokens).
token_rates rates(const scheme_parameters& p, double t, double step_start, double r, double along,
                  double norm);

// Times where the right-hand side is discontinuous (mix-ln's switch): adaptive
// integrators end a step exactly there.
std::optional<double> breakpoint(const scheme_parameters& p);

} // namespace nadyn
