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
// every token.
void project(const const_row_map& tokens, const matrix& m, matrix& out) {
    if (detail::small_n_project(tokens.data(), static_cast<std::size_t>(tokens.rows()),
                                static_cast<std::size_t>(tokens.cols()), m, out))
        return;
    out.noalias() = tokens * m.transpose();
}

// One operand of a head: the tokens projected by m (the tokens themselves when m is the
// identity), then shaped (QKV-Norm, norm-noise factors `scale`, docs/model.md §11) in
// `buffer` when that applies.
const double* operand(const const_row_map& tokens, const matrix& m,
                      const attention_options& options, const std::vector<double>& scale,
                      matrix& buffer, double length = 1.0) {
    const double* data = tokens.data();
    if (m.size() != 0) {
        project(tokens, m, buffer);
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

    // One loop over the heads for both arithmetics: each head takes the symmetric path when it
    // can (its tiles have a float variant), else the general one.
    for (const attention_head& head : weights.heads) {
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
        kernel::head_operands& shaped = work.head;
        const double* q_data = operand(tokens, head.Q, options, head.query_norm, shaped.queries);
        const double* k_data =
            same_keys ? q_data : operand(tokens, head.K, options, head.key_norm, shaped.keys);
        const double* v_data =
            operand(tokens, head.V, options, head.value_norm, shaped.values, options.value_norm);
        // Per head: a head with Q = K takes the symmetric path whatever the others take.
        if (symmetric && kernel::add_symmetric(work.symmetric, shape, q_data, v_data, options.beta,
                                               detail::resolve_threads(options.threads),
                                               options.kind, options.arithmetic, out)) {
            m_last_path = single ? path::single_precision_symmetric : path::symmetric;
            continue;
        }
        if (single) { // the spread of h is too large for the shared shift
            kernel::add_head_single(work.single, work.head, shape, theta, head, options);
            m_last_path = path::single_precision;
            continue;
        }
        kernel::add_general(work.general, shape, q_data, k_data, v_data, options, out);
        m_last_path = path::general;
    }
    if (single) kernel::end_single(work.single, shape, out);
}

} // namespace nadyn
