// The kernel's entry points: the loop over heads, each head's q, k and v projected and
// shaped once, then handed to the path kernel::choose_path() picks for it
// (src/model/kernel/choose.hpp).
#include "heads.hpp"

#include "../qkv_norm.hpp"
#include "choose.hpp"
#include "nadyn/model/attention.hpp"
#include "nadyn/model/detail/parallel.hpp"
#include "small_n.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>

namespace nadyn {

namespace {

using row_map = Eigen::Map<matrix>;
using const_row_map = Eigen::Map<const matrix>;
using detail::same_projection;
using path = attention_kernel::path;

// out += the head's attention through the symmetric path `chosen`; false when it declines.
bool add_symmetric_head(path chosen, kernel::symmetric_workspace& work,
                        const kernel::call_shape& shape, const double* queries,
                        const double* values, const attention_options& options, int threads,
                        double* out) {
    const double beta = options.beta;
    switch (chosen) {
    case path::symmetric:
        return kernel::add_symmetric_tiles<double>(work, shape, queries, values, beta, threads,
                                                   options.kind, out);
    case path::symmetric_small_d:
        return kernel::add_symmetric_small_d<double>(work, shape, queries, values, beta, threads,
                                                     options.kind, out);
    case path::single_precision_symmetric:
        return kernel::add_symmetric_tiles<float>(work, shape, queries, values, beta, threads,
                                                  options.kind, out);
    case path::single_precision_symmetric_small_d:
        return kernel::add_symmetric_small_d<float>(work, shape, queries, values, beta, threads,
                                                    options.kind, out);
    case path::general:
    case path::small_n:
    case path::single_precision:
    case path::single_precision_small_n:
        break;
    }
    throw std::logic_error("add_symmetric_head: not a symmetric path");
}

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

// The path every head takes when the heads can be summed before one value product, else
// nothing: two heads or more, all with the same values (one V, no value noise), each folding
// Q into K (no QKV-Norm or noise shaping q or k) and all on the same small-n or general path
// (the symmetric paths, for Q = K, keep one value product per head: their tiles build each
// row's denominator with its numerator).
std::optional<path> shared_values_path(const kernel::call_shape& shape,
                                       const attention_options& options,
                                       const attention_weights& weights,
                                       std::optional<path> forced) {
    if (weights.heads.size() < 2) return std::nullopt;
    const matrix& values = weights.heads.front().V;
    std::optional<path> common;
    for (const attention_head& head : weights.heads) {
        if (!head.value_norm.empty() || !same_projection(head.V, values) ||
            !head.query_norm.empty() || !head.key_norm.empty() ||
            detail::normalises(options.qkv_norm, options.unit_inputs, head.Q) ||
            detail::normalises(options.qkv_norm, options.unit_inputs, head.K))
            return std::nullopt;
        const path p = kernel::choose_path(shape, options, same_projection(head.Q, head.K), forced);
        if (kernel::is_symmetric(p)) return std::nullopt;
        if (common && *common != p) return std::nullopt;
        common = p;
    }
    return common;
}

// out += every head's attention in double with the heads' weights summed before one value
// product (shared_values_path()) on the small-n loops or the general path's blocks: each
// head's queries projected by K^T Q, the keys the tokens, the values head 0's (V = s I: the
// tokens, s applied once to each row's sum). entropy: heads x n row entropies at a frame, or
// null (small-n only).
void add_shared_values(path p, kernel::general_workspace<double>& general,
                       kernel::head_operands& shaped, const kernel::call_shape& shape,
                       const double* theta, const attention_weights& weights,
                       const attention_options& options, double* entropy, double* out) {
    const std::size_t n = shape.n, d = shape.d, heads = weights.heads.size();
    const const_row_map tokens(theta, static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
    const bool small = detail::takes_small_n_projection(n, d);
    if (shaped.head_queries.size() < heads) shaped.head_queries.resize(heads);
    shaped.query_rows.resize(heads);
    for (std::size_t h = 0; h < heads; ++h) {
        const attention_head& head = weights.heads[h];
        if (head.Q.size() == 0 && head.K.size() == 0) {
            shaped.query_rows[h] = theta;
            continue;
        }
        // (K^T Q)^T, d x d row-major: the queries are the tokens times it.
        const double* folded = shaped.maps.folded(h, head.Q, head.K);
        matrix& queries = shaped.head_queries[h];
        if (small) {
            detail::small_n_project_transposed(theta, n, d, folded, queries);
        } else {
            queries.resize(tokens.rows(), tokens.cols());
            queries.noalias() = tokens * const_row_map(folded, tokens.cols(), tokens.cols());
        }
        shaped.query_rows[h] = queries.data();
    }
    const attention_head& first = weights.heads.front();
    const double* values = theta;
    double value_scale = 1.0;
    if (detail::normalises(options.qkv_norm, options.unit_inputs, first.V)) {
        values = operand(tokens, first.V, small ? shaped.maps.transposed(0, 2, first.V) : nullptr,
                         options, first.value_norm, shaped.values, options.value_norm);
    } else if (first.V.size() != 0) {
        value_scale = detail::identity_multiple(first.V, shaped.scaled_identity);
        if (value_scale == 0.0) {
            value_scale = 1.0;
            project(tokens, first.V, small ? shaped.maps.transposed(0, 2, first.V) : nullptr,
                    shaped.values);
            values = shaped.values.data();
        }
    }
    if (p == path::general) {
        kernel::add_general_shared_values(general, shape, shaped.query_rows.data(), heads, theta,
                                          values, value_scale, options, out);
        return;
    }
    detail::transpose_small_n_keys(theta, n, d, shaped.tokens_t);
    detail::add_small_n_shared_values(shaped.query_rows.data(), heads, shaped.tokens_t, values,
                                      value_scale, n, d, options.beta, options.causal,
                                      shape.first_row, shape.end_row, out, entropy);
}

} // namespace

double attention_flops(std::size_t n, std::size_t d, std::size_t heads, bool summed_values,
                       bool value_projection, bool query_projection) {
    const double N = double(n), D = double(d), H = double(heads);
    const double values = 2.0 * N * N * D + (value_projection ? 2.0 * N * D * D : 0.0);
    const double per_head = 2.0 * N * N * D + (query_projection ? 2.0 * N * D * D : 0.0);
    return H * per_head + (summed_values ? values : H * values);
}

double attention_kernel::flops(const attention_weights& weights,
                               const attention_options& options) const {
    const kernel::call_shape shape{m_n, m_d, m_block, m_tile, 0, m_n};
    const bool summed = m_sum_shared_values &&
                        shared_values_path(shape, options, weights, m_forced_path).has_value();
    bool queries = false, values = false;
    matrix kept;
    for (const attention_head& head : weights.heads) {
        queries = queries || head.Q.size() != 0 || head.K.size() != 0;
        values = values || (head.V.size() != 0 && detail::identity_multiple(head.V, kept) == 0.0);
    }
    return attention_flops(m_n, m_d, weights.heads.size(), summed, values, queries);
}

attention_kernel::attention_kernel(std::size_t n, std::size_t d, std::size_t block)
    : m_n(n), m_d(d), m_block(block == 0 ? detail::default_block(n) : block),
      m_tile(std::min(std::max<std::size_t>(n, 1), block == 0 ? kernel::default_tile : block)),
      m_work(std::make_unique<kernel::workspaces>()) {}

attention_kernel::~attention_kernel() = default;
attention_kernel::attention_kernel(attention_kernel&&) noexcept = default;
attention_kernel& attention_kernel::operator=(attention_kernel&&) noexcept = default;
attention_kernel::attention_kernel(const attention_kernel& other)
    : m_n(other.m_n), m_d(other.m_d), m_block(other.m_block), m_tile(other.m_tile),
      m_last_path(other.m_last_path), m_forced_path(other.m_forced_path),
      m_sum_shared_values(other.m_sum_shared_values),
      m_work(std::make_unique<kernel::workspaces>()) {}
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
    // the small-n loops.
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

    // Heads that share their values: their weights summed, one value product.
    m_summed_values = false;
    if (const std::optional<path> common =
            m_sum_shared_values ? shared_values_path(shape, options, weights, m_forced_path)
                                : std::nullopt) {
        const std::size_t heads = weights.heads.size();
        if (single) {
            if (*common == path::single_precision_small_n)
                kernel::add_heads_single_small_n_shared_values(work.single, shaped, shape, theta,
                                                               weights, options);
            else
                kernel::add_heads_single_shared_values(work.single, shaped, shape, theta, weights,
                                                       options);
            kernel::end_single(work.single, shape, out);
        } else {
            // The observables' pass folds Q into K through the same loops only for these
            // shapes (src/model/attention_observables.cpp); elsewhere it runs on its own.
            observing = observing && small && *common == path::small_n;
            if (observing) work.frame_entropy.resize(heads * m_n);
            add_shared_values(*common, work.general, shaped, shape, theta, weights, options,
                              observing ? work.frame_entropy.data() : nullptr, out);
            // Over heads, then tokens: the order of the loop below.
            if (observing) {
                for (const double row_entropy : work.frame_entropy)
                    entropy_total += row_entropy;
                m_observed_entropy =
                    entropy_total / (static_cast<double>(m_n) * static_cast<double>(heads));
            }
        }
        m_last_path = *common;
        m_summed_values = true;
        return;
    }

    // One loop over the heads for both arithmetics, each head through the path chosen for it.
    const int threads = detail::resolve_threads(options.threads);
    for (std::size_t h = 0; h < weights.heads.size(); ++h) {
        const attention_head& head = weights.heads[h];
        // Noise gives queries and keys their own factors: Q = K no longer makes them equal.
        const bool same_keys =
            same_projection(head.Q, head.K) && head.query_norm.empty() && head.key_norm.empty();
        path chosen = kernel::choose_path(shape, options, same_keys, m_forced_path);
        // The float paths that keep their own operands (float.hpp); false for the others.
        auto add_single = [&](path p) {
            if (p == path::single_precision_small_n)
                kernel::add_head_single_small_n(work.single, work.head, h, shape, theta, head,
                                                options);
            else if (p == path::single_precision)
                kernel::add_head_single(work.single, work.head, h, shape, theta, head, options);
            else
                return false;
            m_last_path = p;
            return true;
        };
        if (add_single(chosen)) continue;
        // Identity matrices are skipped: the maps then point at the tokens themselves.
        const double* q_data = theta;
        const double* k_data = theta;
        const detail::small_n_keys* keys_t = nullptr;
        const bool folds = !same_keys &&
                           !detail::normalises(options.qkv_norm, options.unit_inputs, head.Q) &&
                           !detail::normalises(options.qkv_norm, options.unit_inputs, head.K) &&
                           head.query_norm.empty() && head.key_norm.empty();
        if (chosen == path::small_n && small && folds) {
            // The logits need Q and K only through K^T Q: the queries projected by it, the
            // keys the tokens themselves (src/model/kernel/small_n.hpp).
            detail::small_n_project_transposed(
                theta, m_n, m_d, shaped.maps.folded(h, head.Q, head.K), shaped.queries);
            q_data = shaped.queries.data();
            if (!tokens_transposed) {
                detail::transpose_small_n_keys(theta, m_n, m_d, shaped.tokens_t);
                tokens_transposed = true;
            }
            keys_t = &shaped.tokens_t;
        } else if (chosen == path::general && folds && head.Q.size() != 0 && head.K.size() != 0) {
            // The same on the general path where both maps are given: one projection of the
            // queries, by K^T Q ((K^T Q)^T kept d x d), instead of two (issue 38).
            const double* folded = shaped.maps.folded(h, head.Q, head.K);
            shaped.queries.resize(tokens.rows(), tokens.cols());
            shaped.queries.noalias() = tokens * const_row_map(folded, tokens.cols(), tokens.cols());
            q_data = shaped.queries.data();
        } else {
            q_data = operand(tokens, head.Q, cached(h, 0, head.Q), options, head.query_norm,
                             shaped.queries);
            k_data = same_keys ? q_data
                               : operand(tokens, head.K, cached(h, 1, head.K), options,
                                         head.key_norm, shaped.keys);
        }
        const double* v_data = operand(tokens, head.V, cached(h, 2, head.V), options,
                                       head.value_norm, shaped.values, options.value_norm);
        if (kernel::is_symmetric(chosen)) {
            if (add_symmetric_head(chosen, work.symmetric, shape, q_data, v_data, options, threads,
                                   out)) {
                m_last_path = chosen;
                observing = false;
                continue;
            }
            // The spread of h is too large for the shared shift: the path the head would take
            // if its queries and keys differed.
            chosen = kernel::choose_path(shape, options, false);
            if (add_single(chosen)) continue;
        }
        m_last_path = chosen;
        if (chosen == path::small_n) {
            double* entropy = observing ? work.frame_entropy.data() : nullptr;
            if (keys_t)
                detail::add_small_n_attention(q_data, *keys_t, v_data, m_n, m_d, options.beta,
                                              options.causal, shape.first_row, shape.end_row, out,
                                              entropy);
            else
                detail::add_small_n_attention(q_data, k_data, v_data, m_n, m_d, options.beta,
                                              options.causal, shape.first_row, shape.end_row, out,
                                              entropy);
            if (entropy)
                for (const double row_entropy : work.frame_entropy)
                    entropy_total += row_entropy;
            continue;
        }
        kernel::add_general(work.general, shape, q_data, k_data, v_data, options, out);
        observing = false;
    }
    if (single) kernel::end_single(work.single, shape, out);
    if (observing)
        m_observed_entropy =
            entropy_total / (static_cast<double>(m_n) * static_cast<double>(weights.heads.size()));
}

} // namespace nadyn
