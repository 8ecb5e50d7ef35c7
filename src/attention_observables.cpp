#include "nadyn/attention_observables.hpp"

#include "kernel/general.hpp"
#include "kernel/small_n.hpp"
#include "nadyn/detail/parallel.hpp"
#include "qkv_norm.hpp"
#include "reductions.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace nadyn {

namespace {

// The first index of the largest value (ties to the lowest index; NaN entries skipped, 0
// when every entry is NaN): the max in vectors, then the first entry equal to it (a
// compare-and-branch per entry does not vectorise).
std::size_t first_argmax(const double* row, std::size_t count) {
    const double largest = detail::max_of(row, count);
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8) {
        const auto equal = detail::load_lanes(row + j) == largest;
        for (std::size_t l = 0; l < 8; ++l)
            if (equal[l]) return j + l;
    }
    for (; j < count; ++j)
        if (row[j] == largest) return j;
    return 0;
}

// Shifts the row by its top entry in place (row[j] -= row[top], so every entry is <= 0) and
// returns rest = sum_{j != top} exp(row_j) and weighted = sum_j exp(row_j) row_j (the top's
// term is 1 x 0). One pass in L1-sized pieces, with eight partial sums per quantity: a
// separate pass each for the shift, the exponentials and the two sums cost three times the
// arithmetic at the few tokens of an ensemble run.
void shifted_exponential_sums(double* row, std::size_t count, std::size_t top, double& rest,
                              double& weighted) {
    constexpr std::size_t piece = 32;
    const double largest = row[top];
    detail::reduction_lanes rest_lanes = {}, weighted_lanes = {};
    alignas(64) double shifted[piece], e[piece];
    for (std::size_t j0 = 0; j0 < count; j0 += piece) {
        const std::size_t m = std::min(piece, count - j0);
        for (std::size_t i = 0; i < m; ++i) {
            row[j0 + i] -= largest;
            shifted[i] = e[i] = row[j0 + i];
        }
        std::fill(shifted + m, shifted + piece, 0.0);
        std::fill(e + m, e + piece, 0.0);
        detail::exp_in_place(e, m);
        if (top >= j0 && top < j0 + m) e[top - j0] = 0.0;
        for (std::size_t i = 0; i < piece; i += 8) {
            const detail::reduction_lanes w = detail::load_lanes(e + i);
            rest_lanes += w;
            weighted_lanes += w * detail::load_lanes(shifted + i);
        }
    }
    rest = detail::combine_sums(rest_lanes);
    weighted = detail::combine_sums(weighted_lanes);
}

} // namespace

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
    // their first ones), not a GEMM of 64 x 16 x 64 (src/kernel/small_n.hpp).
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
            if (head.Q.size() != 0) {
                if (small_maps)
                    detail::small_n_project_transposed(y, n, d, m_weights.transposed(h, 0, head.Q),
                                                       m_queries);
                else
                    m_queries.noalias() = tokens * head.Q.transpose();
                q = m_queries.data();
            }
            q = detail::shape_rows(q, n, d, normalise_q, no_factors, m_queries);
            if (head.K.size() != 0) {
                if (small_maps)
                    detail::small_n_project_transposed(y, n, d, m_weights.transposed(h, 1, head.K),
                                                       m_keys);
                else
                    m_keys.noalias() = tokens * head.K.transpose();
                k = m_keys.data();
            }
            k = detail::shape_rows(k, n, d, normalise_k, no_factors, m_keys);
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
                const std::size_t clean = first_argmax(row, visible);
                if (noisy) {
                    const double query_factor = fq ? fq[token] : 1.0;
                    for (std::size_t j = 0; j < visible; ++j)
                        row[j] *= query_factor * (fk ? fk[j] : 1.0);
                    m_flips[token] = first_argmax(row, visible) != clean ? 1.0 : 0.0;
                } else {
                    m_flips[token] = 0.0;
                }
                // Entropy = log Z - sum_j w_j s_j with the shifted logits s_j = l_j - max <= 0
                // (so Z >= 1 and nothing overflows; beta = 0 gives exactly log n).
                const std::size_t top = noisy ? first_argmax(row, visible) : clean;
                // Z = 1 + rest (the top key's term is exactly 1, kept out of rest): log1p keeps
                // the entropy's relative accuracy when one key dominates and rest is far below
                // 1e-16.
                double rest = 0.0, weighted = 0.0;
                shifted_exponential_sums(row, visible, top, rest, weighted);
                // log(1 + rest) once rest is large: for beta = 0 it is then log n exactly,
                // the same rounding as log_n, so uniform rows give exactly 1.
                const double log_z = rest < 0.5 ? std::log1p(rest) : std::log(1.0 + rest);
                const double entropy = log_z - weighted / (1.0 + rest);
                m_entropy[token] = n > 1 ? std::max(entropy, 0.0) / log_n : 0.0;
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
