// The kernel's entry points: the loop over heads, each head's q, k and v projected and
// shaped once, then handed to the symmetric path (Q = K) or the general one.
#include "../qkv_norm.hpp"
#include "general.hpp"
#include "nadyn/attention.hpp"
#include "nadyn/detail/parallel.hpp"
#include "small_d.hpp"
#include "small_n.hpp"
#include "symmetric.hpp"

#include <algorithm>
#include <stdexcept>

namespace nadyn {

namespace {

using row_map = Eigen::Map<matrix>;
using const_row_map = Eigen::Map<const matrix>;
using detail::same_projection;
using detail::small_n_project_transposed;

// X M^T for a row-major token matrix X (one row a token): the projection M theta_k of
// every token; for a few tokens through the small-n loops, M^T from the cache (m_t).
void project(const const_row_map& tokens, const matrix& m, const double* m_t, matrix& out) {
    if (m_t) {
        detail::small_n_project_transposed(tokens.data(), static_cast<std::size_t>(tokens.rows()),
                                           static_cast<std::size_t>(tokens.cols()), m_t, out);
        return;
    }
    out.noalias() = tokens * m.transpose();
}

} // namespace

attention_kernel::attention_kernel(std::size_t n, std::size_t d, std::size_t block)
    : m_n(n), m_d(d), m_block(block == 0 ? detail::default_block(n) : block),
      m_tile(std::min(std::max<std::size_t>(n, 1), block == 0 ? kernel::default_tile : block)),
      m_lanes(kernel::symmetric_lanes) {}

void attention_kernel::compute(const double* theta, const attention_weights& weights,
                               const attention_options& options, double* out) {
    compute_rows(theta, weights, options, 0, m_n, out);
}

void attention_kernel::compute_rows(const double* theta, const attention_weights& weights,
                                    const attention_options& options, std::size_t first,
                                    std::size_t count, double* out) {
    if (first > m_n || count > m_n - first)
        throw std::invalid_argument("attention_kernel::compute_rows: rows beyond n");
    m_first_row = first;
    m_end_row = first + count;
    // A frame's entropy comes from this call only with every row and each head's logits on
    // the small-n loops (add_general says whether they were).
    m_observed_entropy.reset();
    bool observing = m_observe_next && first == 0 && count == m_n && m_n > 0 &&
                     options.arithmetic == precision::double_precision &&
                     options.kind == attention_kind::softmax && !weights.has_norm_noise();
    m_observe_next = false;
    if (observing) m_entropy_rows.resize(m_n);
    double entropy_total = 0.0; // over heads and tokens, in the observables' order
    const bool single = options.arithmetic == precision::single_precision;
    const auto n = static_cast<Eigen::Index>(m_n);
    const auto d = static_cast<Eigen::Index>(m_d);
    const const_row_map tokens(theta, n, d);
    row_map(out, n, d).setZero();
    if (single) begin_single(theta);

    // A few tokens: the maps from the small-n cache (transposed once, Q folded into K).
    const bool small = detail::takes_small_n_projection(m_n, m_d);
    auto cached = [&](std::size_t h, std::size_t which, const matrix& m) -> const double* {
        return small && m.size() != 0 ? m_small_n_weights.transposed(h, which, m) : nullptr;
    };

    // One loop over the heads for both arithmetics: each head takes the symmetric path when it
    // can (its tiles have a float variant), else the general one.
    for (std::size_t h = 0; h < weights.heads.size(); ++h) {
        const attention_head& head = weights.heads[h];
        // Noise gives queries and keys their own factors: Q = K no longer makes them equal.
        const bool symmetric = same_projection(head.Q, head.K) && head.query_norm.empty() &&
                               head.key_norm.empty() && !options.causal && options.beta >= 0.0;
        if (single && !symmetric) {
            add_head_single(theta, head, options);
            continue;
        }
        const bool normalise_q = detail::normalises(options.qkv_norm, options.unit_inputs, head.Q);
        const bool normalise_k = detail::normalises(options.qkv_norm, options.unit_inputs, head.K);
        // Identity matrices are skipped: the maps then point at the tokens themselves.
        const double* q_data = theta;
        const double* k_data = theta;
        const double* v_data = theta;
        if (small && !single && !symmetric && options.kind == attention_kind::softmax &&
            !normalise_q && !normalise_k && head.query_norm.empty() && head.key_norm.empty() &&
            !same_projection(head.Q, head.K)) {
            // The logits need Q and K only through K^T Q: the queries projected by it, the
            // keys the tokens (src/kernel/small_n.hpp).
            small_n_project_transposed(theta, m_n, m_d, m_small_n_weights.folded(h, head.Q, head.K),
                                       m_queries);
            q_data = m_queries.data();
        } else {
            if (head.Q.size() != 0) {
                project(tokens, head.Q, cached(h, 0, head.Q), m_queries);
                q_data = m_queries.data();
            }
            q_data = detail::shape_rows(q_data, m_n, m_d, normalise_q, head.query_norm, m_queries);
            if (same_projection(head.Q, head.K) && head.query_norm.empty() &&
                head.key_norm.empty()) {
                k_data = q_data;
            } else {
                if (head.K.size() != 0) {
                    project(tokens, head.K, cached(h, 1, head.K), m_keys);
                    k_data = m_keys.data();
                }
                k_data = detail::shape_rows(k_data, m_n, m_d, normalise_k, head.key_norm, m_keys);
            }
        }
        if (head.V.size() != 0) {
            project(tokens, head.V, cached(h, 2, head.V), m_values);
            v_data = m_values.data();
        }
        v_data = detail::shape_rows(
            v_data, m_n, m_d, detail::normalises(options.qkv_norm, options.unit_inputs, head.V),
            head.value_norm, m_values, options.value_norm);
        // Per head: a head with Q = K takes the symmetric path whatever the others take.
        if (symmetric &&
            add_symmetric(q_data, v_data, options.beta, detail::resolve_threads(options.threads),
                          options.kind, options.arithmetic, out)) {
            m_last_path = single ? path::single_precision_symmetric : path::symmetric;
            observing = false;
            continue;
        }
        if (single) { // the spread of h is too large for the shared shift
            add_head_single(theta, head, options);
            continue;
        }
        if (add_general(q_data, k_data, v_data, options, out,
                        observing ? m_entropy_rows.data() : nullptr)) {
            for (const double entropy : m_entropy_rows)
                entropy_total += entropy;
        } else {
            observing = false;
        }
        m_last_path = path::general;
    }
    if (observing)
        m_observed_entropy =
            entropy_total / (static_cast<double>(m_n) * static_cast<double>(weights.heads.size()));
    if (single) end_single(out);
}

} // namespace nadyn
