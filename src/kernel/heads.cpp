// The kernel's entry points: the loop over heads, each head's q, k and v projected and
// shaped once, then handed to the symmetric path (Q = K) or the general one.
#include "heads.hpp"

#include "../qkv_norm.hpp"
#include "nadyn/attention.hpp"
#include "nadyn/detail/parallel.hpp"
#include "small_n.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace nadyn {

namespace {

using row_map = Eigen::Map<matrix>;
using const_row_map = Eigen::Map<const matrix>;
using detail::same_projection;

// X M^T for a row-major token matrix X (one row a token): the projection M theta_k of
// every token; for a few tokens through the small-n loops, with M^T from the cache (m_t).
void project(const const_row_map& tokens, const matrix& m, const double* m_t, matrix& out) {
    if (m_t) {
        detail::small_n_project_transposed(tokens.data(), static_cast<std::size_t>(tokens.rows()),
                                           static_cast<std::size_t>(tokens.cols()), m_t, out);
        return;
    }
    out.noalias() = tokens * m.transpose();
}

// One operand of a head: the tokens projected by m (the tokens themselves when m is the
// identity; m_t: M^T from the small-n cache, or null), then shaped (QKV-Norm, norm-noise
// factors `scale`, docs/model.md §11) in `buffer` when that applies.
const double* operand(const const_row_map& tokens, const matrix& m, const double* m_t,
                      const attention_options& options, const std::vector<double>& scale,
                      matrix& buffer, double length = 1.0) {
    const double* data = tokens.data();
    if (m.size() != 0) {
        project(tokens, m, m_t, buffer);
        data = buffer.data();
    }
    return detail::shape_rows(
        data, static_cast<std::size_t>(tokens.rows()), static_cast<std::size_t>(tokens.cols()),
        detail::normalises(options.qkv_norm, options.unit_inputs, m), scale, buffer, length);
}

} // namespace

attention_kernel::attention_kernel(std::size_t n, std::size_t d, std::size_t block)
    : m_n(n), m_d(d), m_block(block == 0 ? detail::default_block(n) : block),
      m_tile(std::min(std::max<std::size_t>(n, 1), block == 0 ? kernel::default_tile : block)),
      m_work(std::make_unique<kernel::workspaces>()) {}

attention_kernel::~attention_kernel() = default;
attention_kernel::attention_kernel(attention_kernel&&) noexcept = default;
attention_kernel& attention_kernel::operator=(attention_kernel&&) noexcept = default;
attention_kernel::attention_kernel(const attention_kernel& other)
    : m_n(other.m_n), m_d(other.m_d), m_block(other.m_block), m_tile(other.m_tile),
      m_last_path(other.m_last_path), m_work(std::make_unique<kernel::workspaces>()) {}
attention_kernel& attention_kernel::operator=(const attention_kernel& other) {
    if (this != &other) *this = attention_kernel(other);
    return *this;
}

void attention_kernel::compute(const double* theta, const attention_weights& weights,
                               const attention_options& options, double* out) {
    compute_rows(theta, weights, options, 0, m_n, out);
}

void attention_kernel::compute_rows(const double* theta, const attention_weights& weights,
                                    const attention_options& options, std::size_t first,
                                    std::size_t count, double* out) {
    if (first > m_n || count > m_n - first)
        throw std::invalid_argument("attention_kernel::compute_rows: rows beyond n");
    const kernel::call_shape shape{m_n, m_d, m_block, m_tile, first, first + count};
    if (!m_work) m_work = std::make_unique<kernel::workspaces>(); // moved from: fresh buffers
    kernel::workspaces& work = *m_work;
    const bool single = options.arithmetic == precision::single_precision;
    const const_row_map tokens(theta, static_cast<Eigen::Index>(m_n),
                               static_cast<Eigen::Index>(m_d));
    row_map(out, tokens.rows(), tokens.cols()).setZero();
    if (single) kernel::begin_single(work.single, shape, theta);
    // A frame's entropy comes from this call only with every row and each head's logits on
    // the small-n loops (add_general says whether they were).
    m_observed_entropy.reset();
    bool observing = m_observe_next && first == 0 && count == m_n && m_n > 0 && !single &&
                     options.kind == attention_kind::softmax && !weights.has_norm_noise();
    m_observe_next = false;
    if (observing) work.frame_entropy.resize(m_n);
    double entropy_total = 0.0; // over heads and tokens, in the observables' order
    // A few tokens: the maps from the small-n cache (transposed once, Q folded into K).
    kernel::head_operands& shaped = work.head;
    const bool small = detail::takes_small_n_projection(m_n, m_d);
    auto cached = [&](std::size_t h, std::size_t which, const matrix& m) -> const double* {
        return small && m.size() != 0 ? shaped.maps.transposed(h, which, m) : nullptr;
    };
    bool tokens_transposed = false; // shaped.tokens_t holds this call's tokens

    // One loop over the heads for both arithmetics: each head takes the symmetric path when it
    // can (its tiles have a float variant), else the general one.
    for (std::size_t h = 0; h < weights.heads.size(); ++h) {
        const attention_head& head = weights.heads[h];
        // Noise gives queries and keys their own factors: Q = K no longer makes them equal.
        const bool same_keys =
            same_projection(head.Q, head.K) && head.query_norm.empty() && head.key_norm.empty();
        const bool symmetric = same_keys && !options.causal && options.beta >= 0.0;
        if (single && !symmetric) {
            kernel::add_head_single(work.single, work.head, shape, theta, head, options);
            m_last_path = path::single_precision;
            continue;
        }
        // Identity matrices are skipped: the maps then point at the tokens themselves.
        const double* q_data = theta;
        const double* k_data = theta;
        const detail::small_n_keys* keys_t = nullptr;
        if (small && !single && !same_keys && options.kind == attention_kind::softmax &&
            !detail::normalises(options.qkv_norm, options.unit_inputs, head.Q) &&
            !detail::normalises(options.qkv_norm, options.unit_inputs, head.K) &&
            head.query_norm.empty() && head.key_norm.empty()) {
            // The logits need Q and K only through K^T Q: the queries projected by it, the
            // keys the tokens themselves (src/kernel/small_n.hpp).
            detail::small_n_project_transposed(
                theta, m_n, m_d, shaped.maps.folded(h, head.Q, head.K), shaped.queries);
            q_data = shaped.queries.data();
            if (!tokens_transposed) {
                detail::transpose_small_n_keys(theta, m_n, m_d, shaped.tokens_t);
                tokens_transposed = true;
            }
            keys_t = &shaped.tokens_t;
        } else {
            q_data = operand(tokens, head.Q, cached(h, 0, head.Q), options, head.query_norm,
                             shaped.queries);
            k_data = same_keys ? q_data
                               : operand(tokens, head.K, cached(h, 1, head.K), options,
                                         head.key_norm, shaped.keys);
        }
        const double* v_data = operand(tokens, head.V, cached(h, 2, head.V), options,
                                       head.value_norm, shaped.values, options.value_norm);
        // Per head: a head with Q = K takes the symmetric path whatever the others take.
        if (symmetric && kernel::add_symmetric(work.symmetric, shape, q_data, v_data, options.beta,
                                               detail::resolve_threads(options.threads),
                                               options.kind, options.arithmetic, out)) {
            m_last_path = single ? path::single_precision_symmetric : path::symmetric;
            observing = false;
            continue;
        }
        if (single) { // the spread of h is too large for the shared shift
            kernel::add_head_single(work.single, work.head, shape, theta, head, options);
            m_last_path = path::single_precision;
            continue;
        }
        if (kernel::add_general(work.general, shape, q_data, k_data, v_data, options, out,
                                observing ? work.frame_entropy.data() : nullptr, keys_t)) {
            for (const double entropy : work.frame_entropy)
                entropy_total += entropy;
        } else {
            observing = false;
        }
        m_last_path = path::general;
    }
    if (single) kernel::end_single(work.single, shape, out);
    if (observing)
        m_observed_entropy =
            entropy_total / (static_cast<double>(m_n) * static_cast<double>(weights.heads.size()));
}

} // namespace nadyn
