#include "nadyn/model/attention_observables.hpp"

#include "attention_entropy.hpp"
#include "kernel/call.hpp"
#include "kernel/small_n.hpp"
#include "nadyn/model/detail/parallel.hpp"
#include "qkv_norm.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace nadyn {

attention_observables::attention_observables(std::size_t n, std::size_t d, std::size_t block)
    : m_n(n), m_d(d),
      m_block(block != 0 ? block
                         : std::clamp<std::size_t>(
                               (std::size_t{1} << 19) / std::max<std::size_t>(n, 1), 16, 256)),
      m_flips(n), m_entropy(n) {}

attention_summary attention_observables::compute(const double* y, const attention_weights& weights,
                                                 const attention_options& options) {
    attention_summary summary;
    const std::size_t n = m_n, d = m_d;
    if (n == 0 || weights.heads.empty()) return summary;
    const auto ni = static_cast<Eigen::Index>(n), di = static_cast<Eigen::Index>(d);
    const Eigen::Map<const matrix> tokens(y, ni, di);
    const double log_n = std::log(static_cast<double>(n));
    const int threads = detail::worth_parallel(n, d) ? detail::resolve_threads(options.threads) : 1;
    if (m_logits.size() < static_cast<std::size_t>(threads))
        m_logits.resize(static_cast<std::size_t>(threads));
    const std::size_t blocks = (n + m_block - 1) / m_block;
    const double beta = options.beta; // a local: the row loops then vectorise unversioned
    const std::vector<double> no_factors;
    // A few tokens: the kernel's small-n loops for the logits (all n keys; causal rows use
    // their first ones), not a GEMM of 64 x 16 x 64 (src/model/kernel/small_n.hpp).
    const bool small = detail::takes_small_n(n, d);
    double flips_total = 0.0, entropy_total = 0.0;

    const bool small_maps = detail::takes_small_n_projection(n, d);
    for (std::size_t h = 0; h < weights.heads.size(); ++h) {
        const attention_head& head = weights.heads[h];
        // The noiseless q and key rows; the noise enters the logits as the factor
        // f^q_k f^key_j of <q_k, key_j> (the norms' factors multiply the inner product).
        const double* q = y;
        const double* k = y;
        const bool normalise_q = detail::normalises(options.qkv_norm, options.unit_inputs, head.Q);
        const bool normalise_k = detail::normalises(options.qkv_norm, options.unit_inputs, head.K);
        if (small_maps && !normalise_q && !normalise_k &&
            (head.Q.size() != 0 || head.K.size() != 0)) {
            // As the kernel does: the queries projected by K^T Q, the keys the inputs.
            detail::small_n_project_transposed(y, n, d, m_weights.folded(h, head.Q, head.K),
                                               m_queries);
            q = m_queries.data();
        } else {
            // The inputs projected by m (which: 0 Q, 1 K) unless m is the identity, then
            // normalised under QKV-Norm, in `buffer`.
            auto rows = [&](const matrix& m, std::size_t which, bool normalise, matrix& buffer) {
                const double* data = y;
                if (m.size() != 0) {
                    if (small_maps)
                        detail::small_n_project_transposed(
                            y, n, d, m_weights.transposed(h, which, m), buffer);
                    else
                        buffer.noalias() = tokens * m.transpose();
                    data = buffer.data();
                }
                return detail::shape_rows(data, n, d, normalise, no_factors, buffer);
            };
            q = rows(head.Q, 0, normalise_q, m_queries);
            k = rows(head.K, 1, normalise_k, m_keys);
        }
        const Eigen::Map<const matrix> queries(q, ni, di), keys(k, ni, di);
        const bool noisy = !head.query_norm.empty() || !head.key_norm.empty();
        const double* fq = head.query_norm.empty() ? nullptr : head.query_norm.data();
        const double* fk = head.key_norm.empty() ? nullptr : head.key_norm.data();

        detail::for_each_dynamic(blocks, threads, [&](std::size_t b) {
            const std::size_t first = b * m_block, rows = std::min(m_block, n - first);
            const std::size_t cols = options.causal ? first + rows : n;
            matrix& s = m_logits[static_cast<std::size_t>(omp_get_thread_num())];
            if (s.rows() < static_cast<Eigen::Index>(m_block) || s.cols() < ni)
                s.resize(static_cast<Eigen::Index>(m_block), ni);
            auto logits =
                s.topLeftCorner(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
            if (small) {
                detail::small_n_logits(q, k, n, d, beta, first, rows, s.data(),
                                       static_cast<std::size_t>(s.cols()));
            } else {
                logits.noalias() = queries.middleRows(static_cast<Eigen::Index>(first),
                                                      static_cast<Eigen::Index>(rows)) *
                                   keys.topRows(static_cast<Eigen::Index>(cols)).transpose();
                logits *= beta;
            }
            for (std::size_t i = 0; i < rows; ++i) {
                const std::size_t token = first + i;
                const std::size_t visible = options.causal ? token + 1 : n;
                double* row = &logits(static_cast<Eigen::Index>(i), 0);
                const std::size_t clean = detail::first_argmax(row, visible);
                if (noisy) {
                    const double query_factor = fq ? fq[token] : 1.0;
                    for (std::size_t j = 0; j < visible; ++j)
                        row[j] *= query_factor * (fk ? fk[j] : 1.0);
                    m_flips[token] = detail::first_argmax(row, visible) != clean ? 1.0 : 0.0;
                } else {
                    m_flips[token] = 0.0;
                }
                // Entropy = log Z - sum_j w_j s_j with the shifted logits s_j = l_j - max <= 0
                // (so Z >= 1 and nothing overflows; beta = 0 gives exactly log n).
                const std::size_t top = noisy ? detail::first_argmax(row, visible) : clean;
                m_entropy[token] = n > 1 ? detail::row_entropy(row, visible, top, log_n) : 0.0;
            }
        });
        for (std::size_t token = 0; token < n; ++token) {
            flips_total += m_flips[token];
            entropy_total += m_entropy[token];
        }
    }
    const double pairs = static_cast<double>(n) * static_cast<double>(weights.heads.size());
    summary.argmax_flips = flips_total / pairs;
    summary.attention_entropy = entropy_total / pairs;
    return summary;
}

} // namespace nadyn
