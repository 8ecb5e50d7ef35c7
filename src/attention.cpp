#include "nadyn/attention.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace nadyn {

namespace {

using row_map = Eigen::Map<matrix>;
using const_row_map = Eigen::Map<const matrix>;

// About 4 MiB of logits per thread: large enough for GEMM efficiency, small enough that
// n = 65,536 needs 4 MiB (not 32 GiB) per thread.
std::size_t default_block(std::size_t n) {
    const std::size_t target =
        (std::size_t{4} << 20) / sizeof(double) / std::max<std::size_t>(n, 1);
    return std::clamp<std::size_t>(target, 16, 256);
}

// X M^T for a row-major token matrix X (one row a token): the projection M theta_k of
// every token.
void project(const const_row_map& tokens, const matrix& m, matrix& out) {
    out.noalias() = tokens * m.transpose();
}

} // namespace

attention_kernel::attention_kernel(std::size_t n, std::size_t d, std::size_t block)
    : m_n(n), m_d(d), m_block(block == 0 ? default_block(n) : block) {}

void attention_kernel::compute(const double* theta, const attention_weights& weights,
                               const attention_options& options, double* out) {
    const auto n = static_cast<Eigen::Index>(m_n);
    const auto d = static_cast<Eigen::Index>(m_d);
    const auto block = static_cast<Eigen::Index>(m_block);
    const const_row_map tokens(theta, n, d);
    row_map result(out, n, d);
    result.setZero();

    const auto threads = static_cast<std::size_t>(omp_get_max_threads());
    if (m_logits.size() < threads) m_logits.resize(threads);

    for (const attention_head& head : weights.heads) {
        // Identity matrices are skipped: the maps then point at the tokens themselves.
        const double* q_data = theta;
        const double* k_data = theta;
        const double* v_data = theta;
        if (head.Q.size() != 0) {
            project(tokens, head.Q, m_queries);
            q_data = m_queries.data();
        }
        if (head.K.size() != 0) {
            project(tokens, head.K, m_keys);
            k_data = m_keys.data();
        }
        if (head.V.size() != 0) {
            project(tokens, head.V, m_values);
            v_data = m_values.data();
        }
        const const_row_map queries(q_data, n, d), keys(k_data, n, d), values(v_data, n, d);
        const Eigen::Index blocks = (n + block - 1) / block;

#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1)
        for (Eigen::Index b = 0; b < blocks; ++b) {
            const Eigen::Index first = b * block;
            const Eigen::Index rows = std::min(block, n - first);
            // Causal: no query in this block sees a key beyond the block's last token.
            const Eigen::Index cols = options.causal ? first + rows : n;
            matrix& logits = m_logits[static_cast<std::size_t>(omp_get_thread_num())];
            if (logits.rows() < block || logits.cols() < n) logits.resize(block, n);
            auto s = logits.topLeftCorner(rows, cols);
            s.noalias() = queries.middleRows(first, rows) * keys.topRows(cols).transpose();

            for (Eigen::Index i = 0; i < rows; ++i) {
                const Eigen::Index visible = options.causal ? first + i + 1 : cols;
                double* row = &s(i, 0);
                // Max subtraction (log-sum-exp): beta up to 1e4 stays finite.
                double largest = -std::numeric_limits<double>::infinity();
                for (Eigen::Index j = 0; j < visible; ++j)
                    largest = std::max(largest, options.beta * row[j]);
                double total = 0.0;
                for (Eigen::Index j = 0; j < visible; ++j) {
                    row[j] = std::exp(options.beta * row[j] - largest);
                    total += row[j];
                }
                const double inverse_total = 1.0 / total;
                for (Eigen::Index j = 0; j < visible; ++j)
                    row[j] *= inverse_total;
                for (Eigen::Index j = visible; j < cols; ++j)
                    row[j] = 0.0;
            }
            result.middleRows(first, rows).noalias() += s * values.topRows(cols);
        }
    }
}

void reference_attention(const double* theta, std::size_t n, std::size_t d,
                         const attention_weights& weights, const attention_options& options,
                         double* out) {
    std::fill(out, out + n * d, 0.0);
    std::vector<double> q(d), k(d), v(d), logits(n);
    auto apply = [d](const matrix& m, const double* x, std::vector<double>& y) {
        for (std::size_t a = 0; a < d; ++a) {
            if (m.size() == 0) {
                y[a] = x[a];
                continue;
            }
            double sum = 0.0;
            for (std::size_t b = 0; b < d; ++b)
                sum += m(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) * x[b];
            y[a] = sum;
        }
    };
    for (const attention_head& head : weights.heads) {
        for (std::size_t i = 0; i < n; ++i) {
            apply(head.Q, theta + i * d, q);
            const std::size_t visible = options.causal ? i + 1 : n;
            double largest = -std::numeric_limits<double>::infinity();
            for (std::size_t j = 0; j < visible; ++j) {
                apply(head.K, theta + j * d, k);
                double dot = 0.0;
                for (std::size_t a = 0; a < d; ++a)
                    dot += q[a] * k[a];
                logits[j] = options.beta * dot;
                largest = std::max(largest, logits[j]);
            }
            double total = 0.0;
            for (std::size_t j = 0; j < visible; ++j)
                total += std::exp(logits[j] - largest);
            for (std::size_t j = 0; j < visible; ++j) {
                apply(head.V, theta + j * d, v);
                const double w = std::exp(logits[j] - largest) / total;
                for (std::size_t a = 0; a < d; ++a)
                    out[i * d + a] += w * v[a];
            }
        }
    }
}

} // namespace nadyn
