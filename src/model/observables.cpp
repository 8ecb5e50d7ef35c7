#include "nadyn/model/observables.hpp"

#include "kernel/small_n.hpp"
#include "nadyn/model/detail/parallel.hpp"
#include "nadyn/model/weights.hpp"
#include "reductions.hpp"

#include <Eigen/SVD>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace nadyn {

namespace {

int find_root(std::vector<int>& parent, int k) {
    while (parent[static_cast<std::size_t>(k)] != k) {
        auto& p = parent[static_cast<std::size_t>(k)];
        p = parent[static_cast<std::size_t>(p)]; // path halving
        k = p;
    }
    return k;
}

// The recurrence G_{k+1} = a_k x G_k - b_k G_{k-1} of zonal_polynomials, k = 1 .. K-1
// (index 0 unused): a_k = (2k + d - 2) / (k + d - 2), b_k = k / (k + d - 2), computed once
// per frame so the pair loop only multiplies.
void zonal_coefficients(std::size_t K, std::size_t d, std::vector<double>& a,
                        std::vector<double>& b) {
    a.assign(K, 0.0);
    b.assign(K, 0.0);
    for (std::size_t k = 1; k < K; ++k) {
        const double kk = double(k), dd = double(d);
        a[k] = (2.0 * kk + dd - 2.0) / (kk + dd - 2.0);
        b[k] = kk / (kk + dd - 2.0);
    }
}

void unite(std::vector<int>& parent, int a, int b) {
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a == b) return;
    if (a < b) std::swap(a, b);
    parent[static_cast<std::size_t>(a)] = b; // smaller index is the root: deterministic
}

} // namespace

observables_calculator::observables_calculator(std::size_t n, std::size_t d,
                                               std::vector<double> theta_initial,
                                               double cluster_eps, std::size_t block, int threads)
    : m_n(n), m_d(d), m_block(block == 0 ? 128 : block), m_initial(std::move(theta_initial)),
      m_cluster_eps(cluster_eps), m_threads(threads) {}

frame_observables observables_calculator::compute_moments(const double* theta,
                                                          const double* dtheta) const {
    frame_observables out;
    const std::size_t n = m_n, d = m_d;
    // Offsets from the first token instead of raw coordinates: near a cluster the tokens
    // differ by ~sqrt(gap), and theta_k - theta_0 of two close vectors is exact, while
    // theta_k - S/n would carry the rounding of S (~1e-16) and limit the gap to ~1e-32 and
    // the velocity to a relative error of 1e-16 / sqrt(gap).
    const double* reference = theta;
    std::vector<double> offset_sum(d, 0.0); // D = sum_j (theta_j - theta_0)
    // Ordered sums over tokens: the same result for any thread count.
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            offset_sum[c] += theta[k * d + c] - reference[c];
    const double nn = static_cast<double>(n);
    double variance = 0.0, projection = 0.0;
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c) {
            const double offset = theta[k * d + c] - reference[c];
            const double from_mean = offset - offset_sum[c] / nn; // theta_k - m
            variance += from_mean * from_mean;
            // <S, dtheta_k> = <S - n theta_k, dtheta_k> since dtheta_k is tangent to theta_k;
            // S - n theta_k = D - n (theta_k - theta_0) stays small and exact near a cluster.
            if (dtheta) projection += (offset_sum[c] - nn * offset) * dtheta[k * d + c];
        }
    variance /= nn;
    out.variance = variance;
    if (n < 2) {
        out.mean_cos = 1.0;
        out.gap = 0.0;
        out.velocity = 0.0;
        return out;
    }
    out.gap = nn / (nn - 1.0) * variance;
    out.mean_cos = 1.0 - out.gap;
    out.velocity = dtheta ? 2.0 * projection / (nn * (nn - 1.0)) : 0.0;
    return out;
}

frame_observables observables_calculator::compute(const double* theta, const double* r,
                                                  const double* dtheta) {
    const std::size_t n = m_n, d = m_d;
    frame_observables out;
    if (m_moments) {
        out = compute_moments(theta, dtheta);
    } else {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        out.mean_cos = out.gap = out.variance = out.velocity = nan;
    }

    double displacement = 0.0, norm_error = 0.0;
    double r_sum = 0.0, r_min = std::numeric_limits<double>::infinity(), r_max = -r_min;
    for (std::size_t k = 0; k < n; ++k) {
        if (m_displacement) {
            double chord2 = 0.0, norm2 = 0.0;
            for (std::size_t c = 0; c < d; ++c) {
                const double diff = theta[k * d + c] - m_initial[k * d + c];
                chord2 += diff * diff;
                norm2 += theta[k * d + c] * theta[k * d + c];
            }
            // angle = 2 asin(chord / 2): accurate for small angles, unlike acos of a cosine.
            displacement += 2.0 * std::asin(std::min(1.0, std::sqrt(chord2) / 2.0));
            norm_error = std::max(norm_error, std::abs(std::sqrt(norm2) - 1.0));
        }
        r_sum += r[k];
        r_min = std::min(r_min, r[k]);
        r_max = std::max(r_max, r[k]);
    }
    const double nn = static_cast<double>(n);
    if (m_modes > 0) out.modes.assign(m_modes, 1.0); // n = 1: a point mass
    const double nan = std::numeric_limits<double>::quiet_NaN();
    out.displacement = m_displacement ? displacement / nn : nan;
    out.norm_error = m_displacement ? norm_error : nan;
    out.r_mean = r_sum / nn;
    out.r_min = r_min;
    out.r_max = r_max;
    m_components.assign(n, 0); // n = 1: one cluster
    if (n < 2) return out;
    // Nothing asked for needs the pairs (--observables without min_cos and clusters).
    if (!m_min_cos && !m_clusters && !m_pair_density && m_modes == 0) return out;

    // Pairwise pass over the Gram matrix in row blocks, only the lower triangle j < k:
    // each thread keeps its own minimum and its own union-find forest, merged in thread
    // order afterwards (the minimum and the partition do not depend on the order).
    const std::size_t blocks = (n + m_block - 1) / m_block;
    const int team = blocks > 1 ? detail::resolve_threads(m_threads) : 1;
    const auto threads = static_cast<std::size_t>(team);
    if (m_gram.size() < threads) m_gram.resize(threads);
    if (m_parents.size() < threads) m_parents.resize(threads);
    std::vector<double> thread_min(threads, std::numeric_limits<double>::infinity());
    const double threshold = 1.0 - m_cluster_eps;
    for (auto& parent : m_parents)
        parent.clear(); // a forest left from a previous frame
    // Links per block (pair_density): counted where the blocks are formed, a second pass
    // over n^2 / 2 cosines would cost as much as the Gram product itself.
    std::vector<std::size_t> block_links(m_pair_density ? blocks : 0, 0);
    // Spectral modes: per block, the sums over its pairs j < k of G_1 .. G_K of their cosine,
    // added in block order afterwards (the thread count does not change them).
    const std::size_t K = m_modes;
    std::vector<double> block_modes(blocks * K, 0.0), mode_a, mode_b;
    if (K > 0) zonal_coefficients(K, d, mode_a, mode_b);
    using const_map = Eigen::Map<const matrix>;
    const const_map tokens(theta, static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));

#pragma omp parallel num_threads(team) if (team > 1)
    {
        const auto me = static_cast<std::size_t>(omp_get_thread_num());
        std::vector<int>& parent = m_parents[me];
        parent.resize(n);
        std::iota(parent.begin(), parent.end(), 0);
        std::vector<double>& gram = m_gram[me];
        gram.resize(m_block * n);
        double local_min = std::numeric_limits<double>::infinity();
#pragma omp for schedule(dynamic, 1)
        for (std::size_t b = 0; b < blocks; ++b) {
            const std::size_t first = b * m_block;
            const std::size_t rows = std::min(m_block, n - first);
            const std::size_t cols = first + rows; // lower triangle
            Eigen::Map<matrix> g(gram.data(), static_cast<Eigen::Index>(rows),
                                 static_cast<Eigen::Index>(cols));
            if (blocks == 1 && detail::takes_small_n(n, d)) // one block: cols = n
                detail::small_n_logits(theta, theta, n, d, 1.0, 0, rows, gram.data(), cols);
            else
                g.noalias() = tokens.middleRows(static_cast<Eigen::Index>(first),
                                                static_cast<Eigen::Index>(rows)) *
                              tokens.topRows(static_cast<Eigen::Index>(cols)).transpose();
            if (m_min_cos || m_clusters)
                for (std::size_t i = 0; i < rows; ++i) {
                    const std::size_t k = first + i;
                    const double* row = gram.data() + i * cols;
                    // The minimum in vector lanes (NaN skipped, as std::min did), apart from
                    // the links: a union per link in the same loop kept it scalar.
                    local_min = std::min(local_min, -detail::max_of_negated(row, k));
                    // A link to a token already hanging from k's root changes nothing (its
                    // unite() would find that root and return): in a cluster, nearly every
                    // link, and one compare instead of two finds.
                    int root = find_root(parent, static_cast<int>(k));
                    for (std::size_t j = 0; j < k; ++j)
                        if (row[j] >= threshold && parent[j] != root) {
                            unite(parent, static_cast<int>(k), static_cast<int>(j));
                            root = find_root(parent, static_cast<int>(k));
                        }
                }
            if (m_pair_density) {
                std::size_t links = 0;
                for (std::size_t i = 0; i < rows; ++i) {
                    const double* row = gram.data() + i * cols;
                    for (std::size_t j = 0; j < first + i; ++j)
                        links += row[j] >= threshold ? 1 : 0;
                }
                block_links[b] = links;
            }
            if (K > 0) {
                double* sums = block_modes.data() + b * K;
                // One row's sums first: n/2 terms of size <= 1 per row, then rows added, so
                // the rounding grows with the rows of a block, not with its n^2 / 2 pairs.
                std::vector<double> row_sums(K);
                for (std::size_t i = 0; i < rows; ++i) {
                    const double* row = gram.data() + i * cols;
                    std::fill(row_sums.begin(), row_sums.end(), 0.0);
                    for (std::size_t j = 0; j < first + i; ++j) {
                        const double x = row[j];
                        double previous = 1.0, current = x;
                        row_sums[0] += current;
                        for (std::size_t k = 1; k < K; ++k) {
                            const double next = mode_a[k] * x * current - mode_b[k] * previous;
                            previous = current;
                            current = next;
                            row_sums[k] += current;
                        }
                    }
                    for (std::size_t k = 0; k < K; ++k)
                        sums[k] += row_sums[k];
                }
            }
        }
        thread_min[me] = local_min;
    }
    std::vector<int>& merged = m_parents[0];
    for (std::size_t t = 1; t < threads; ++t) {
        if (m_parents[t].size() != n) continue; // a thread of the team that got no block
        for (std::size_t k = 0; k < n; ++k)
            if (m_parents[t][k] != static_cast<int>(k))
                unite(merged, static_cast<int>(k), m_parents[t][k]);
    }
    std::size_t roots = 0;
    for (std::size_t k = 0; k < n; ++k) {
        // unite() keeps the smallest index as the root: the cluster's smallest token.
        m_components[k] = find_root(merged, static_cast<int>(k));
        if (m_components[k] == static_cast<int>(k)) ++roots;
    }
    out.min_cos = *std::min_element(thread_min.begin(), thread_min.end());
    out.clusters = static_cast<double>(roots);
    if (m_pair_density) {
        const std::size_t links =
            std::accumulate(block_links.begin(), block_links.end(), std::size_t{0});
        out.pair_density = static_cast<double>(links) / (0.5 * nn * (nn - 1.0));
    }
    if (K > 0) {
        // sum_{i,j} G_k(<theta_i, theta_j>) = n G_k(1) + 2 sum_{j < k}: the diagonal is exact.
        for (std::size_t k = 0; k < K; ++k) {
            double pairs = 0.0;
            for (std::size_t b = 0; b < blocks; ++b)
                pairs += block_modes[b * K + k];
            out.modes[k] = (nn + 2.0 * pairs) / (nn * nn);
        }
    }
    return out;
}

void observables_calculator::set_previous_frame(const double* theta) {
    m_previous.assign(theta, theta + m_n * m_d);
}

void observables_calculator::compute_motion(const double* theta, bool pair_change,
                                            frame_observables& out) {
    const std::size_t n = m_n, d = m_d;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    out.angle = nan;
    out.pair_change = nan;
    if (m_previous.size() == n * d && n > 0) {
        double angle = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
            double chord2 = 0.0;
            for (std::size_t c = 0; c < d; ++c) {
                const double diff = theta[k * d + c] - m_previous[k * d + c];
                chord2 += diff * diff;
            }
            angle += 2.0 * std::asin(std::min(1.0, std::sqrt(chord2) / 2.0));
        }
        out.angle = angle / static_cast<double>(n);
        if (pair_change && n >= 2) {
            // Both Gram matrices in the same row blocks as compute(); one partial sum per
            // block, added in block order, so the thread count does not change the result.
            const std::size_t blocks = (n + m_block - 1) / m_block;
            const int team = blocks > 1 ? detail::resolve_threads(m_threads) : 1;
            const auto threads = static_cast<std::size_t>(team);
            if (m_gram.size() < threads) m_gram.resize(threads);
            if (m_previous_gram.size() < threads) m_previous_gram.resize(threads);
            std::vector<double> block_sum(blocks, 0.0);
            using const_map = Eigen::Map<const matrix>;
            const auto rows_n = static_cast<Eigen::Index>(n), cols_d = static_cast<Eigen::Index>(d);
            const const_map now(theta, rows_n, cols_d), before(m_previous.data(), rows_n, cols_d);
#pragma omp parallel num_threads(team) if (team > 1)
            {
                const auto me = static_cast<std::size_t>(omp_get_thread_num());
                std::vector<double>& gram = m_gram[me];
                std::vector<double>& previous_gram = m_previous_gram[me];
                gram.resize(m_block * n);
                previous_gram.resize(m_block * n);
#pragma omp for schedule(dynamic, 1)
                for (std::size_t b = 0; b < blocks; ++b) {
                    const std::size_t first = b * m_block;
                    const std::size_t rows = std::min(m_block, n - first);
                    const std::size_t cols = first + rows; // lower triangle
                    const auto r0 = static_cast<Eigen::Index>(first);
                    const auto r = static_cast<Eigen::Index>(rows);
                    const auto c = static_cast<Eigen::Index>(cols);
                    Eigen::Map<matrix> g(gram.data(), r, c), p(previous_gram.data(), r, c);
                    g.noalias() = now.middleRows(r0, r) * now.topRows(c).transpose();
                    p.noalias() = before.middleRows(r0, r) * before.topRows(c).transpose();
                    double sum = 0.0;
                    for (std::size_t i = 0; i < rows; ++i)
                        for (std::size_t j = 0; j < first + i; ++j)
                            sum += std::abs(gram[i * cols + j] - previous_gram[i * cols + j]);
                    block_sum[b] = sum;
                }
            }
            double total = 0.0;
            for (const double sum : block_sum)
                total += sum;
            const double nn = static_cast<double>(n);
            out.pair_change = total / (0.5 * nn * (nn - 1.0));
        }
    }
    set_previous_frame(theta);
}

double interaction_energy(const double* inputs, std::size_t n, std::size_t d, double beta,
                          const attention_weights& weights, std::vector<double>& workspace,
                          int threads) {
    const std::size_t heads = weights.heads.size();
    if (n == 0 || heads == 0) return std::numeric_limits<double>::quiet_NaN();
    const auto rows_n = static_cast<Eigen::Index>(n), cols_d = static_cast<Eigen::Index>(d);
    using const_map = Eigen::Map<const matrix>;
    const const_map y(inputs, rows_n, cols_d);
    // Row i of `queries` is (Q y_i)^T, row j of `keys` (K y_j)^T, as the kernel projects.
    std::vector<matrix> queries(heads), keys(heads);
    double bound = 0.0; // max over heads of max_i |Q y_i| max_j |K y_j| >= every |logit / beta|
    for (std::size_t h = 0; h < heads; ++h) {
        const attention_head& head = weights.heads[h];
        queries[h] = head.Q.size() == 0 ? matrix(y) : matrix(y * head.Q.transpose());
        keys[h] = head.K.size() == 0 ? matrix(y) : matrix(y * head.K.transpose());
        bound = std::max(bound, queries[h].rowwise().norm().maxCoeff() *
                                    keys[h].rowwise().norm().maxCoeff());
    }
    const std::size_t block = std::min<std::size_t>(128, n);
    const std::size_t blocks = (n + block - 1) / block;
    const double pairs = static_cast<double>(n) * static_cast<double>(n);
    // Near beta = 0, exp(beta G) = 1 + beta G + ...: the shifted log-sum-exp would lose the
    // term beta G to the rounding of 1 and leave (1 / beta) log(...) with an absolute error of
    // about 1e-16 / beta. When no |beta G| exceeds 1 nothing can overflow, and the mean of
    // expm1(beta G), then log1p, keep the relative accuracy down to beta = 0.
    const bool small = std::abs(beta) * bound <= 1.0;
    // Per (head, block): the block's largest beta G and its sum of exp(beta G - largest) (or
    // of expm1(beta G), of G at beta = 0, when small). The blocks are computed in parallel
    // and folded in order afterwards, so the thread count does not change a bit.
    std::vector<double> block_max(heads * blocks), block_sum(heads * blocks);
    const int team = heads * blocks > 1 ? detail::resolve_threads(threads) : 1;
    workspace.resize(static_cast<std::size_t>(team) * block * n);
#pragma omp parallel num_threads(team) if (team > 1)
    {
        double* logits =
            workspace.data() + static_cast<std::size_t>(omp_get_thread_num()) * block * n;
#pragma omp for schedule(dynamic, 1)
        for (std::size_t task = 0; task < heads * blocks; ++task) {
            const std::size_t h = task / blocks, first = (task % blocks) * block;
            const std::size_t rows = std::min(block, n - first);
            Eigen::Map<matrix> g(logits, static_cast<Eigen::Index>(rows), rows_n);
            g.noalias() = queries[h].middleRows(static_cast<Eigen::Index>(first),
                                                static_cast<Eigen::Index>(rows)) *
                          keys[h].transpose();
            // Each row summed alone, then the rows: a running sum over the block's rows * n
            // equal-signed terms would carry a rounding error growing with their number (about
            // 1e-13 relative at n = 256).
            double largest = 0.0, part = 0.0;
            if (small) {
                for (std::size_t i = 0; i < rows; ++i) {
                    double row = 0.0;
                    for (std::size_t j = 0; j < n; ++j)
                        row +=
                            beta == 0.0 ? logits[i * n + j] : std::expm1(beta * logits[i * n + j]);
                    part += row;
                }
            } else {
                largest = -std::numeric_limits<double>::infinity();
                for (std::size_t i = 0; i < rows * n; ++i)
                    largest = std::max(largest, beta * logits[i]);
                for (std::size_t i = 0; i < rows; ++i) {
                    double row = 0.0;
                    for (std::size_t j = 0; j < n; ++j)
                        row += std::exp(beta * logits[i * n + j] - largest);
                    part += row;
                }
            }
            block_max[task] = largest;
            block_sum[task] = part;
        }
    }
    const double share = 1.0 / static_cast<double>(heads);
    if (small) {
        double sum = 0.0; // over heads of the mean of expm1(beta G), or of G at beta = 0
        for (std::size_t h = 0; h < heads; ++h) {
            double plain = 0.0;
            for (std::size_t b = 0; b < blocks; ++b)
                plain += block_sum[h * blocks + b];
            sum += plain / pairs;
        }
        return beta == 0.0 ? sum * share : std::log1p(sum * share) / beta;
    }
    // Per head, the blocks' (largest, sum) folded in block order into the log of the mean of
    // exp(beta G); then the heads' logs likewise.
    std::vector<double> head_logs(heads);
    double head_log_max = -std::numeric_limits<double>::infinity();
    for (std::size_t h = 0; h < heads; ++h) {
        double largest = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (std::size_t b = 0; b < blocks; ++b) {
            const double m = block_max[h * blocks + b], part = block_sum[h * blocks + b];
            if (m > largest) {
                sum = sum * std::exp(largest - m) + part;
                largest = m;
            } else {
                sum += part * std::exp(m - largest);
            }
        }
        head_logs[h] = largest + std::log(sum / pairs);
        head_log_max = std::max(head_log_max, head_logs[h]);
    }
    double total = 0.0;
    for (const double log_mean : head_logs)
        total += std::exp(log_mean - head_log_max);
    return (head_log_max + std::log(total * share)) / beta;
}

void zonal_polynomials(std::size_t K, std::size_t d, double x, double* out) {
    if (K == 0) return;
    std::vector<double> a, b;
    zonal_coefficients(K, d, a, b);
    double previous = 1.0, current = x;
    out[0] = current;
    for (std::size_t k = 1; k < K; ++k) {
        const double next = a[k] * x * current - b[k] * previous;
        previous = current;
        current = next;
        out[k] = current;
    }
}

double effective_rank(const double* theta, std::size_t n, std::size_t d) {
    const Eigen::Map<const matrix> tokens(theta, static_cast<Eigen::Index>(n),
                                          static_cast<Eigen::Index>(d));
    // The SVD of the n x d matrix itself: backward stable, so a singular value that is zero
    // comes out at ~1e-16 s_max and a single cluster gives 1 to ~1e-14; the eigenvalues of
    // Theta^T Theta would put it at sqrt(1e-16) s_max and the rank at 1 + ~1e-6. Values
    // only (no U, V): O(n d^2), like one Gram product of d columns.
    const Eigen::MatrixXd columns = tokens; // BDCSVD's own (column-major) storage
    const Eigen::BDCSVD<Eigen::MatrixXd> svd(columns);
    const auto& s = svd.singularValues();
    const double total = s.sum();
    if (!(total > 0.0)) return 0.0;
    double entropy = 0.0;
    for (Eigen::Index i = 0; i < s.size(); ++i) {
        const double p = s[i] / total;
        if (p > 0.0) entropy -= p * std::log(p); // p log p -> 0 as p -> 0
    }
    return std::exp(entropy);
}

} // namespace nadyn
