#include "nadyn/model/system.hpp"

#include "kernel/dimension.hpp"
#include "nadyn/model/detail/parallel.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/scheme_operations.hpp"
#include "reductions.hpp"

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace nadyn {

namespace {

// Tokens per chunk of the per-token loops: the chunk's scalars live in arrays on the stack,
// and the loops over a chunk's tokens vectorise.
constexpr std::size_t token_chunk = 64;

// x = sqrt(x) for `count` values. A loop of std::sqrt stays scalar (it may set errno);
// the vector instruction rounds the same way (sqrt is correctly rounded). AVX, not AVX-512:
// GCC 12's _mm512_sqrt_pd trips -Wmaybe-uninitialized inside its own header.
void square_roots(double* x, std::size_t count) {
    std::size_t k = 0;
#if defined(__AVX__)
    for (; k + 4 <= count; k += 4)
        _mm256_storeu_pd(x + k, _mm256_sqrt_pd(_mm256_loadu_pd(x + k)));
#endif
    for (; k < count; ++k)
        x[k] = std::sqrt(x[k]);
}

// sum_c x_c y_c (detail::dot_of, eight partial sums: the loop over the components
// vectorises). Not inlined: inside a loop over tokens GCC vectorises across the tokens
// instead.
[[gnu::noinline]] double token_dot(const double* x, const double* y, std::size_t count) {
    return detail::dot_of(x, y, count);
}

// One evaluation's scheme: its parameters, the stage time, the step's start and the scheme's
// rates over a chunk of tokens (scheme_operations.hpp: compiled per scheme, so the loop
// inlines the scheme's rates and vectorises; one indirect call per chunk).
struct stage {
    const scheme_parameters& scheme;
    double t, step_start;
    decltype(scheme_operations::chunk_rates) chunk_rates;
};

// The right-hand side of `count` tokens (pointers at the chunk's first token). D > 0 fixes
// the dimension at compile time (common small d: the loops over tokens vectorise), D = 0
// reads it from d.
template <std::size_t D>
void chunk_derivative(const stage& s, std::size_t d, const double* __restrict theta,
                      const double* __restrict attention, const double* r,
                      double* __restrict dtheta, double* dr, std::size_t count) {
    if constexpr (D != 0) d = D;
    // Initialised, although only `count` entries are used: GCC cannot see that.
    double along[token_chunk] = {}, norm[token_chunk] = {}, inverse_speed[token_chunk];
    if constexpr (D != 0 && D <= 4) {
        // A few components: the loop over tokens vectorises. (D = 8 sums as any d does.)
        for (std::size_t k = 0; k < count; ++k) {
            double along_k = 0.0, norm2 = 0.0;
            for (std::size_t c = 0; c < d; ++c) {
                along_k += theta[k * d + c] * attention[k * d + c];
                norm2 += attention[k * d + c] * attention[k * d + c];
            }
            along[k] = along_k;
            norm[k] = norm2;
        }
    } else {
        for (std::size_t k = 0; k < count; ++k) {
            along[k] = token_dot(theta + k * d, attention + k * d, d);
            norm[k] = token_dot(attention + k * d, attention + k * d, d);
        }
    }
    square_roots(norm, count);
    s.chunk_rates(s.scheme, s.t, s.step_start, r, along, norm, inverse_speed, dr, count);
    for (std::size_t k = 0; k < count; ++k)
        for (std::size_t c = 0; c < d; ++c)
            dtheta[k * d + c] =
                (attention[k * d + c] - along[k] * theta[k * d + c]) * inverse_speed[k];
}

using chunk_derivative_function = void (*)(const stage&, std::size_t, const double*, const double*,
                                           const double*, double*, double*, std::size_t);

chunk_derivative_function chunk_derivative_for(std::size_t d) {
    return kernel::dispatch_dimension<kernel::small_dimensions>(
        d,
        [](auto D) -> chunk_derivative_function { return chunk_derivative<decltype(D)::value>; });
}

template <std::size_t D> void chunk_to_sphere(std::size_t d, double* theta, std::size_t count) {
    if constexpr (D != 0) d = D;
    double inverse[token_chunk];
    for (std::size_t k = 0; k < count; ++k) {
        double norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c)
            norm2 += theta[k * d + c] * theta[k * d + c];
        inverse[k] = norm2;
    }
    square_roots(inverse, count);
    for (std::size_t k = 0; k < count; ++k)
        inverse[k] = 1.0 / inverse[k];
    for (std::size_t k = 0; k < count; ++k)
        for (std::size_t c = 0; c < d; ++c)
            theta[k * d + c] *= inverse[k];
}

} // namespace

attention_system::attention_system(const model_parameters& model, attention_weights weights,
                                   std::size_t block)
    : m_model(model), m_weights(std::move(weights)), m_kernel(model.n, model.d, block),
      m_attention(model.n * model.d),
      m_tokens(info(model.scheme).attention_reads_tokens ||
                       (model.norm == norm_kind::layernorm && !model.affine.identity())
                   ? model.n * model.d
                   : 0) {}

attention_options attention_system::kernel_options() const {
    // Attention reads unit directions unless the scheme's attention reads tokens (m_tokens).
    return {m_model.beta,      m_model.causal,   m_model.arithmetic, m_model.threads,
            m_model.attention, m_model.qkv_norm, m_tokens.empty(),   m_model.value_norm};
}

void attention_system::attend(const double* theta, double* out) {
    if (m_exchange) {
        const auto started = std::chrono::steady_clock::now();
        m_kernel.compute_rows(theta, m_weights, kernel_options(), m_exchange->first_token(),
                              m_exchange->token_count(), out);
        m_exchange->add_compute_seconds(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        m_exchange->share_rows(out, m_model.d);
    } else {
        m_kernel.compute(theta, m_weights, kernel_options(), out);
    }
    // The softmax's weights are at most 1; unnormalised weights exp(beta <q, key>) / n are not
    // bounded, and an Inf must stop the run here rather than reach the state or a frame.
    if (m_model.attention == attention_kind::unnormalized) check_unnormalized(out);
}

void attention_system::check_unnormalized(const double* out) const {
    const std::size_t n = m_model.n, d = m_model.d;
    constexpr double largest = std::numeric_limits<double>::max();
    bool bad = false;
    for (std::size_t i = 0; i < n * d; ++i)
        bad |= !(std::abs(out[i]) <= largest); // false for NaN and +-Inf
    if (!bad) return;
    std::size_t token = 0;
    while (token < n && std::all_of(out + token * d, out + (token + 1) * d,
                                    [](double v) { return std::isfinite(v); }))
        ++token;
    std::ostringstream time;
    time.precision(17);
    time << m_time;
    throw numerical_fault(
        "the unnormalized attention overflowed at t = " + time.str() + " in token " +
        std::to_string(token) + " (exp(beta <q_k, key_j>) / n beyond the range of the " +
        std::string(m_model.arithmetic == precision::single_precision ? "float" : "double") +
        " arithmetic); lower --beta or use --attention softmax (docs/model.md §8)");
}

const double* attention_system::attention_input(const state_type& x) {
    const std::size_t n = m_model.n, d = m_model.d;
    const double* theta = directions(x);
    if (m_tokens.empty()) return theta;
    if (m_model.norm == norm_kind::layernorm) {
        // docs/model.md §10: attention reads the ellipsoid a ⊙ theta_k + b. (no-norm, whose
        // attention reads magnitudes, is refused with layernorm: there is nothing to centre.)
        apply_affine(m_model.affine, theta, m_tokens.data(), n, d);
        return m_tokens.data();
    }
    const double* r = magnitudes(x, n, d);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            m_tokens[k * d + c] = r[k] * theta[k * d + c];
    return m_tokens.data();
}

void attention_system::attend_state(const state_type& x, double* out) {
    attend(attention_input(x), out);
    // LayerNorm cannot see the component of the stream along (1, ..., 1): only Pi A_k moves
    // the directions (docs/model.md §10).
    if (m_model.norm == norm_kind::layernorm)
        centre_rows(out, m_model.n, m_model.d, m_model.threads);
}

void attention_system::operator()(const state_type& x, state_type& dxdt, double t) {
    ++m_evaluations;
    m_time = t;
    const std::size_t n = m_model.n, d = m_model.d;
    const double* theta = directions(x);
    const double* r = magnitudes(x, n, d);
    double* dtheta = dxdt.data();
    double* dr = dxdt.data() + n * d;
    attend_state(x, m_attention.data());
    if (m_observe_pending) {
        m_observe_pending = false;
        if (const std::optional<double> entropy = m_kernel.observed_entropy()) {
            // Without norm noise (else the kernel does not observe) no argmax moves.
            m_frame_attention = attention_summary{0.0, *entropy};
            m_frame_time = t;
        }
    }
    const double* attention = m_attention.data();
    const stage s{m_model.scheme, t, std::isnan(m_step_start) ? t : m_step_start,
                  operations(m_model.scheme).chunk_rates};
    const chunk_derivative_function derivative = chunk_derivative_for(d);
    const std::size_t chunks = (n + token_chunk - 1) / token_chunk;
    const int threads = detail::token_threads(n, d, detail::resolve_threads(m_model.threads));
    detail::for_each_static(chunks, threads, [&](std::size_t i) {
        const std::size_t k = i * token_chunk;
        derivative(s, d, theta + k * d, attention + k * d, r + k, dtheta + k * d, dr + k,
                   std::min(token_chunk, n - k));
    });
}

void project_to_sphere(double* theta, std::size_t n, std::size_t d, int threads) {
    using to_sphere_function = void (*)(std::size_t, double*, std::size_t);
    const to_sphere_function to_sphere = kernel::dispatch_dimension<kernel::small_dimensions>(
        d, [](auto D) -> to_sphere_function { return chunk_to_sphere<decltype(D)::value>; });
    const std::size_t chunks = (n + token_chunk - 1) / token_chunk;
    threads = detail::token_threads(n, d, detail::resolve_threads(threads));
    detail::for_each_static(chunks, threads, [&](std::size_t i) {
        const std::size_t k = i * token_chunk;
        to_sphere(d, theta + k * d, std::min(token_chunk, n - k));
    });
}

} // namespace nadyn
