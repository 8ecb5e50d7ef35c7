#pragma once
// The ODE right-hand side on (directions, magnitudes), docs/model.md §2:
//
//     d theta_k / dt = (A_k - <theta_k, A_k> theta_k) / s_k(t)
//     d r_k / dt     = radial rate of the scheme
//
// A_k is the attention of the directions, or of the tokens r_j theta_j for a scheme whose
// attention reads tokens (no-norm, docs/model.md §9). Under --norm layernorm (docs/model.md
// §10) A_k is the centred attention Pi A_k of y_j = a ⊙ theta_j + b, and the directions
// live on S^{d-1} ∩ U (U the hyperplane orthogonal to (1, ..., 1)).
//
// The state is one contiguous vector: the n x d directions row-major (one row a token,
// so a frame is one block), then the n magnitudes. It is an Odeint system, a callable
// sys(x, dxdt, t); it owns workspaces, so pass it to Odeint with std::ref.
#include "nadyn/model/attention.hpp"
#include "nadyn/model/attention_observables.hpp"
#include "nadyn/model/norm.hpp"
#include "nadyn/model/precision.hpp"
#include "nadyn/model/scheme.hpp"
#include "nadyn/model/token_exchange.hpp"
#include "nadyn/model/weights.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace nadyn {

using state_type = std::vector<double>;

struct model_parameters {
    std::size_t n = 0;
    std::size_t d = 0;
    double beta = 1.0;
    bool causal = false;
    scheme_parameters scheme;
    precision arithmetic = precision::double_precision; // of the attention kernel
    int threads = 0; // OpenMP threads of every evaluation (0: omp_get_max_threads() then)
    // Softmax or unnormalised weights (docs/model.md §8). Unnormalised attention can overflow:
    // attend(), and so every evaluation, then throws numerical_fault (integrate.hpp) instead
    // of returning an Inf.
    attention_kind attention = attention_kind::softmax;
    norm_kind norm = norm_kind::rms; // the layers' LN (docs/model.md §10)
    layer_norm_affine affine = {};   // layernorm's gain and bias (empty: a = 1, b = 0)
    bool qkv_norm = false; // QKV-Norm of q, k, v after the linear maps (docs/model.md §11)
    // QKV-Norm: the norm of a normalised value, the head's share 1/H under the heads' mean.
    double value_norm = 1.0;
};

class attention_system {
  public:
    attention_system(const model_parameters& model, attention_weights weights,
                     std::size_t block = 0);

    void operator()(const state_type& x, state_type& dxdt, double t);

    // The integrators announce the start of each step (see rates() in scheme.hpp); a
    // single evaluation outside a step treats its own time as the start.
    void begin_step(double t) {
        m_step_start = t;
        m_time = t;
        m_frame_attention.reset();
    }
    // begin_step(t) again within the same step (the step-doubling probe, between a frame's
    // evaluation and its observer): the frame's attention observables taken at t are kept,
    // since the probe's evaluations do not observe (without this every probed frame ran the
    // observables' own pass again).
    void restart_step(double t) {
        m_step_start = t;
        m_time = t;
    }

    // A frame's attention observables from the frame's own evaluation: the integrator asks
    // before the step's first evaluation at a frame, and the frame's observer takes them with
    // frame_attention(t), which holds them (bitwise what attention_observables gives for the
    // same input) when the kernel could take them there (attention_kernel::observe_next_call),
    // until the next begin_step. Otherwise the observer runs attention_observables itself.
    void observe_next_evaluation() {
        m_kernel.observe_next_call();
        m_observe_pending = true;
    }
    [[nodiscard]] std::optional<attention_summary> frame_attention(double t) const {
        if (m_frame_attention && m_frame_time == t) return m_frame_attention;
        return std::nullopt;
    }

    [[nodiscard]] const model_parameters& model() const { return m_model; }
    [[nodiscard]] const attention_weights& weights() const { return m_weights; }
    void set_weights(attention_weights weights) { m_weights = std::move(weights); }
    [[nodiscard]] std::uint64_t evaluations() const { return m_evaluations; }
    // A of the last evaluation (n x d row-major).
    [[nodiscard]] const std::vector<double>& attention() const { return m_attention; }
    // Applies the attention of the current weights to arbitrary directions.
    void attend(const double* theta, double* out);
    // The attention the scheme reads at state x: of the directions theta_k, or of the tokens
    // r_k theta_k when the scheme's attention reads tokens (no-norm, docs/model.md §9); under
    // layernorm of a ⊙ theta_k + b, centred (Pi A_k, docs/model.md §10).
    void attend_state(const state_type& x, double* out);
    // The rows attention reads at state x (theta_k, r_k theta_k or a ⊙ theta_k + b): the
    // directions themselves or a workspace of the system, valid until the next call.
    const double* attention_input(const state_type& x);
    // Shares the evaluations among the processes of `exchange` (token_exchange.hpp): this
    // process computes the attention of its own tokens, the exchange brings the others'. Every
    // evaluation is then collective. nullptr: all tokens here (the default).
    void share_tokens(token_exchange* exchange) { m_exchange = exchange; }
    // The kernel's options for this model (beta, mask, arithmetic, threads, QKV-Norm, and
    // whether the attention input is the unit directions).
    [[nodiscard]] attention_options kernel_options() const;
    // The flops of one evaluation of the attention with the current weights, by the algorithm
    // the kernel runs for them (attention_kernel::flops).
    [[nodiscard]] double attention_flops() const {
        return m_kernel.flops(m_weights, kernel_options());
    }

  private:
    // Throws numerical_fault, naming the first token, when an unnormalised A is not finite.
    void check_unnormalized(const double* out) const;

    model_parameters m_model;
    attention_weights m_weights;
    attention_kernel m_kernel;
    token_exchange* m_exchange = nullptr; // not owned
    std::vector<double> m_attention;
    // r_k theta_k (schemes whose attention reads tokens) or a ⊙ theta_k + b (layernorm with
    // gain or bias), n x d; empty when attention reads the directions themselves.
    std::vector<double> m_tokens;
    std::uint64_t m_evaluations = 0;
    double m_step_start = std::numeric_limits<double>::quiet_NaN();
    double m_time = 0.0;            // of the current evaluation, for the message of an overflow
    bool m_observe_pending = false; // observe_next_evaluation()
    std::optional<attention_summary> m_frame_attention; // and the evaluation's time:
    double m_frame_time = 0.0;
};

// Helpers on the state layout.
inline std::size_t state_size(std::size_t n, std::size_t d) {
    return n * d + n;
}
inline double* directions(state_type& x) {
    return x.data();
}
inline const double* directions(const state_type& x) {
    return x.data();
}
inline double* magnitudes(state_type& x, std::size_t n, std::size_t d) {
    return x.data() + n * d;
}
inline const double* magnitudes(const state_type& x, std::size_t n, std::size_t d) {
    return x.data() + n * d;
}

// Rescales every direction to unit norm (the projection after each accepted step).
void project_to_sphere(double* theta, std::size_t n, std::size_t d, int threads = 0);
// The projection after each accepted step for the run's norm: onto S^{d-1} (rms) or onto
// S^{d-1} ∩ U, centring first (layernorm).
inline void project_directions(double* theta, const model_parameters& model) {
    if (model.norm == norm_kind::layernorm)
        project_to_centred_sphere(theta, model.n, model.d, model.threads);
    else
        project_to_sphere(theta, model.n, model.d, model.threads);
}

} // namespace nadyn
