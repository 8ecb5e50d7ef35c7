#include "nadyn/attention.hpp"

#include "nadyn/detail/parallel.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace nadyn {

namespace detail {

void exp_in_place(double* values, std::size_t count) {
    constexpr double log2e = 1.4426950408889634;
    // ln 2 = ln2_hi + ln2_lo with 21 trailing zero bits in ln2_hi (fdlibm's split): k ln2_hi
    // is exact, and so is x - k ln2_hi, for every k of the domain.
    constexpr double ln2_hi = 6.93147180369123816490e-01;
    constexpr double ln2_lo = 1.90821492927058770002e-10;
    // Adding 1.5 * 2^52 rounds to an integer and leaves it in the low mantissa bits.
    constexpr double shifter = 0x1.8p52;
    // 1/m!, m = 13 .. 2: the Taylor remainder r^14/14! is below 5e-18 for |r| <= ln2/2.
    constexpr double c13 = 1.0 / 6227020800.0, c12 = 1.0 / 479001600.0, c11 = 1.0 / 39916800.0,
                     c10 = 1.0 / 3628800.0, c9 = 1.0 / 362880.0, c8 = 1.0 / 40320.0,
                     c7 = 1.0 / 5040.0, c6 = 1.0 / 720.0, c5 = 1.0 / 120.0, c4 = 1.0 / 24.0,
                     c3 = 1.0 / 6.0, c2 = 0.5;
#if defined(__FMA__)
    auto madd = [](double a, double b, double c) { return std::fma(a, b, c); };
#else
    auto madd = [](double a, double b, double c) { return a * b + c; };
#endif
    // Written as a plain loop over independent elements so that the compiler vectorises it
    // (SSE2 by default, AVX-512 with NADYN_NATIVE); max/min keep a NaN a NaN.
    for (std::size_t i = 0; i < count; ++i) {
        const double x = values[i];
        const double clamped = std::min(std::max(x, -708.0), 709.0);
        const double shifted = madd(clamped, log2e, shifter);
        const double k = shifted - shifter;
        double r = clamped - k * ln2_hi;
        r = r - k * ln2_lo;
        double p = madd(c13, r, c12);
        p = madd(p, r, c11);
        p = madd(p, r, c10);
        p = madd(p, r, c9);
        p = madd(p, r, c8);
        p = madd(p, r, c7);
        p = madd(p, r, c6);
        p = madd(p, r, c5);
        p = madd(p, r, c4);
        p = madd(p, r, c3);
        p = madd(p, r, c2);
        p = madd(p, r, 1.0);
        p = madd(p, r, 1.0);
        // 2^k: k + 1023 (in [2, 2046] here) into the exponent field.
        const std::uint64_t bits = (std::bit_cast<std::uint64_t>(shifted) + 1023) << 52;
        const double result = p * std::bit_cast<double>(bits);
        values[i] = x < -708.0 ? 0.0 : result;
    }
}

} // namespace detail

namespace {

using row_map = Eigen::Map<matrix>;
using const_row_map = Eigen::Map<const matrix>;

// Reductions with eight partial sums in a fixed order: vectorisable without reassociating
// flags, and the same result on every call.
double sum_of(const double* x, std::size_t count) {
    double part[8] = {};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        for (std::size_t l = 0; l < 8; ++l)
            part[l] += x[j + l];
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] += x[j];
    return ((part[0] + part[4]) + (part[1] + part[5])) +
           ((part[2] + part[6]) + (part[3] + part[7]));
}

double dot_of(const double* x, const double* y, std::size_t count) {
    double part[8] = {};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        for (std::size_t l = 0; l < 8; ++l)
            part[l] += x[j + l] * y[j + l];
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] += x[j] * y[j];
    return ((part[0] + part[4]) + (part[1] + part[5])) +
           ((part[2] + part[6]) + (part[3] + part[7]));
}

double max_of(const double* x, std::size_t count) {
    constexpr double lowest = -std::numeric_limits<double>::infinity();
    double part[8] = {lowest, lowest, lowest, lowest, lowest, lowest, lowest, lowest};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        for (std::size_t l = 0; l < 8; ++l)
            part[l] = std::max(part[l], x[j + l]);
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] = std::max(part[l], x[j]);
    return std::max(std::max(std::max(part[0], part[4]), std::max(part[1], part[5])),
                    std::max(std::max(part[2], part[6]), std::max(part[3], part[7])));
}

// -min(x), the largest of -x_j. Like max_of it skips NaN entries: a NaN token still makes
// the kernel's output NaN, through its exponentials.
double max_of_negated(const double* x, std::size_t count) {
    constexpr double lowest = -std::numeric_limits<double>::infinity();
    double part[8] = {lowest, lowest, lowest, lowest, lowest, lowest, lowest, lowest};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        for (std::size_t l = 0; l < 8; ++l)
            part[l] = std::max(part[l], -x[j + l]);
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] = std::max(part[l], -x[j]);
    return std::max(std::max(std::max(part[0], part[4]), std::max(part[1], part[5])),
                    std::max(std::max(part[2], part[6]), std::max(part[3], part[7])));
}

// About 4 MiB of logits per thread: large enough for GEMM efficiency, small enough that
// n = 65,536 needs 4 MiB (not 32 GiB) per thread.
std::size_t default_block(std::size_t n) {
    const std::size_t target =
        (std::size_t{4} << 20) / sizeof(double) / std::max<std::size_t>(n, 1);
    return std::clamp<std::size_t>(target, 16, 256);
}

// Below about this many pair operations (n^2 (d + 16): products plus the exponential) a
// call runs on one thread: a few tens of microseconds gain little from a second thread,
// and a parallel region costs microseconds, or a whole scheduler time slice when another
// process holds the other core.
constexpr double parallel_work = 4e6;

bool worth_parallel(std::size_t n, std::size_t d) {
    return static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(d + 16) >
           parallel_work;
}

// Symmetric tiles of 128 x 128 (128 KiB, in L2 next to the operands): the three GEMMs of a
// tile are large enough for Eigen's kernels, and n = 1024 already gives 36 tiles to share.
constexpr std::size_t default_tile = 128;
// Lanes of the symmetric path: a fixed number (not the thread count, which must not change
// the sums); four keep two threads busy and cost four n x d accumulators.
constexpr std::size_t symmetric_lanes = 4;
// A spread of beta G_kk / 2 above this could let a_j = exp(h_j - max h) underflow.
constexpr double largest_shift_spread = 600.0;

// X M^T for a row-major token matrix X (one row a token): the projection M theta_k of
// every token.
void project(const const_row_map& tokens, const matrix& m, matrix& out) {
    out.noalias() = tokens * m.transpose();
}

bool same_projection(const matrix& a, const matrix& b) {
    if (a.size() != b.size()) return false;
    return a.size() == 0 || a == b;
}

// Below this dimension the symmetric path skips the GEMMs (Eigen's kernels are built for
// depths much larger than 3) for plain vector loops: add_tile_small().
constexpr std::size_t small_dimension = 16;

struct small_operands {
    std::size_t n, d;
    double minus_half_beta;
    const double* queries;         // n x d
    const double* queries_t;       // d x n
    const double* scaled_values_t; // d x n: a_j V theta_j, transposed
    const double* key_weight;      // a_j
};

// Row i of a tile of E, e[j] = E_{i, j0 + j} for j < count, added to the lane's sums twice:
// to token i (dot products) and, E being symmetric, to the tokens j0 + j (axpys).
void add_row(const small_operands& op, const double* e, std::size_t i, std::size_t j0,
             std::size_t count, double* sum_t, double* norm) {
    const std::size_t n = op.n;
    norm[i] += dot_of(e, op.key_weight + j0, count);
    const double w = op.key_weight[i];
    double* norm_j = norm + j0;
    for (std::size_t j = 0; j < count; ++j)
        norm_j[j] += w * e[j];
    for (std::size_t c = 0; c < op.d; ++c) {
        const double* values_c = op.scaled_values_t + c * n;
        double* sum_c = sum_t + c * n;
        sum_c[i] += dot_of(e, values_c + j0, count);
        const double v = values_c[i];
        double* sum_j = sum_c + j0;
        for (std::size_t j = 0; j < count; ++j)
            sum_j[j] += v * e[j];
    }
}

// The dimension as a compile-time constant D (common small d), or op.d when D = 0: with D
// known the loops over the components unroll and the loops over tokens carry them in
// registers.
template <std::size_t D> std::size_t dimension(const small_operands& op) {
    return D == 0 ? op.d : D;
}

// out[j] = -beta/2 ‖q_i - q_{j0 + j}‖^2 for j < count: the exponent of E_ij, computed from the
// difference (no cancellation between beta G_ij and h_i + h_j).
template <std::size_t D>
void exponents(const small_operands& op, std::size_t i, std::size_t j0, std::size_t count,
               double* __restrict out) {
    const std::size_t d = dimension<D>(op), n = op.n;
    const double* q = op.queries + i * d;
    const double* __restrict columns = op.queries_t + j0;
    if constexpr (D != 0) {
        for (std::size_t j = 0; j < count; ++j) {
            double distance2 = 0.0;
            for (std::size_t c = 0; c < D; ++c) {
                const double diff = q[c] - columns[c * n + j];
                distance2 += diff * diff;
            }
            out[j] = op.minus_half_beta * distance2;
        }
    } else {
        std::fill(out, out + count, 0.0);
        for (std::size_t c = 0; c < d; ++c) {
            const double q_c = q[c];
            for (std::size_t j = 0; j < count; ++j) {
                const double diff = q_c - columns[c * n + j];
                out[j] += diff * diff;
            }
        }
        for (std::size_t j = 0; j < count; ++j)
            out[j] *= op.minus_half_beta;
    }
}

// norm[dst + i] += a_src e[i] and sum_t(c, dst + i) += (a V)_{src, c} e[i] for i < count.
template <std::size_t D>
void scatter(const small_operands& op, const double* __restrict e, std::size_t src, std::size_t dst,
             std::size_t count, double* sum_t, double* norm) {
    const std::size_t d = dimension<D>(op), n = op.n;
    const double w = op.key_weight[src];
    double* __restrict norm_dst = norm + dst;
    if constexpr (D != 0) {
        double v[D];
        double* __restrict sum_dst[D];
        for (std::size_t c = 0; c < D; ++c) {
            v[c] = op.scaled_values_t[c * n + src];
            sum_dst[c] = sum_t + c * n + dst;
        }
        for (std::size_t i = 0; i < count; ++i) {
            norm_dst[i] += w * e[i];
            for (std::size_t c = 0; c < D; ++c)
                sum_dst[c][i] += v[c] * e[i];
        }
    } else {
        for (std::size_t i = 0; i < count; ++i)
            norm_dst[i] += w * e[i];
        for (std::size_t c = 0; c < d; ++c) {
            const double v = op.scaled_values_t[c * n + src];
            double* __restrict sum_dst = sum_t + c * n + dst;
            for (std::size_t i = 0; i < count; ++i)
                sum_dst[i] += v * e[i];
        }
    }
}

// A diagonal tile of up to this many rows is mirrored into a full square (it stays in L1),
// so that every contribution is an axpy: short rows make dot products (horizontal sums)
// the expensive part of small systems.
constexpr std::size_t mirrored_tile = 64;

// The tile (I, J) of E for small d, added to a lane's sums; `buffer` holds 2 tile x tile.
// All exponentials of the tile in one exp call. A diagonal tile computes only its strict
// lower triangle (packed rows), with E_ii = exp(0) = 1.
template <std::size_t D>
void add_tile_small(const small_operands& op, std::size_t i0, std::size_t rows, std::size_t j0,
                    std::size_t cols, double* buffer, double* sum_t, double* norm) {
    const bool diagonal = i0 == j0;
    auto offset = [&](std::size_t i) { return diagonal ? i * (i - 1) / 2 : i * cols; };
    auto length = [&](std::size_t i) { return diagonal ? i : cols; };
    for (std::size_t i = 0; i < rows; ++i)
        exponents<D>(op, i0 + i, j0, length(i), buffer + offset(i));
    detail::exp_in_place(buffer, offset(rows));
    if (diagonal && rows <= mirrored_tile) {
        // E (rows x rows) after the packed triangle. E is symmetric, so
        // sum_j E_ij (a V)_j = sum_j (a V)_j E_j. : axpys over the rows of E.
        double* square = buffer + offset(rows);
        for (std::size_t i = 0; i < rows; ++i) {
            const double* packed = buffer + offset(i);
            for (std::size_t j = 0; j < i; ++j) {
                square[i * rows + j] = packed[j];
                square[j * rows + i] = packed[j];
            }
            square[i * rows + i] = 1.0;
        }
        for (std::size_t j = 0; j < rows; ++j)
            scatter<D>(op, square + j * rows, i0 + j, i0, rows, sum_t, norm);
        return;
    }
    for (std::size_t i = 0; i < rows; ++i)
        add_row(op, buffer + offset(i), i0 + i, j0, length(i), sum_t, norm);
    if (!diagonal) return;
    for (std::size_t i = i0; i < i0 + rows; ++i) {
        norm[i] += op.key_weight[i];
        for (std::size_t c = 0; c < op.d; ++c)
            sum_t[c * op.n + i] += op.scaled_values_t[c * op.n + i];
    }
}

using small_tile_function = void (*)(const small_operands&, std::size_t, std::size_t, std::size_t,
                                     std::size_t, double*, double*, double*);

small_tile_function small_tile_for(std::size_t d) {
    switch (d) {
    case 2:
        return add_tile_small<2>;
    case 3:
        return add_tile_small<3>;
    case 4:
        return add_tile_small<4>;
    case 8:
        return add_tile_small<8>;
    default:
        return add_tile_small<0>;
    }
}

} // namespace

attention_kernel::attention_kernel(std::size_t n, std::size_t d, std::size_t block)
    : m_n(n), m_d(d), m_block(block == 0 ? default_block(n) : block),
      m_tile(std::min(std::max<std::size_t>(n, 1), block == 0 ? default_tile : block)),
      m_lanes(symmetric_lanes) {}

void attention_kernel::compute(const double* theta, const attention_weights& weights,
                               const attention_options& options, double* out) {
    if (options.arithmetic == precision::single_precision) {
        compute_single(theta, weights, options, out);
        return;
    }
    const auto n = static_cast<Eigen::Index>(m_n);
    const auto d = static_cast<Eigen::Index>(m_d);
    const const_row_map tokens(theta, n, d);
    row_map(out, n, d).setZero();

    for (const attention_head& head : weights.heads) {
        // Identity matrices are skipped: the maps then point at the tokens themselves.
        const double* q_data = theta;
        const double* k_data = theta;
        const double* v_data = theta;
        const bool symmetric = same_projection(head.Q, head.K);
        if (head.Q.size() != 0) {
            project(tokens, head.Q, m_queries);
            q_data = m_queries.data();
        }
        if (symmetric) {
            k_data = q_data;
        } else if (head.K.size() != 0) {
            project(tokens, head.K, m_keys);
            k_data = m_keys.data();
        }
        if (head.V.size() != 0) {
            project(tokens, head.V, m_values);
            v_data = m_values.data();
        }
        if (symmetric && !options.causal && options.beta >= 0.0 &&
            add_symmetric(q_data, v_data, options.beta, out)) {
            m_last_path = path::symmetric;
            continue;
        }
        add_general(q_data, k_data, v_data, options, out);
        m_last_path = path::general;
    }
}

void attention_kernel::add_general(const double* q_data, const double* k_data, const double* v_data,
                                   const attention_options& options, double* out) {
    const auto n = static_cast<Eigen::Index>(m_n);
    const auto d = static_cast<Eigen::Index>(m_d);
    const auto block = static_cast<Eigen::Index>(m_block);
    const const_row_map queries(q_data, n, d), keys(k_data, n, d), values(v_data, n, d);
    row_map result(out, n, d);
    const auto threads = static_cast<std::size_t>(omp_get_max_threads());
    if (m_logits.size() < threads) m_logits.resize(threads);
    const Eigen::Index blocks = (n + block - 1) / block;
    const double beta = options.beta;

    const bool parallel = blocks > 1 && threads > 1 && worth_parallel(m_n, m_d);
    detail::for_each_dynamic(static_cast<std::size_t>(blocks), parallel, [&](std::size_t item) {
        const auto b = static_cast<Eigen::Index>(item);
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
            const auto count = static_cast<std::size_t>(visible);
            double* row = &s(i, 0);
            for (std::size_t j = 0; j < count; ++j)
                row[j] *= beta;
            // Max subtraction (log-sum-exp): beta up to 1e4 stays finite.
            const double largest = max_of(row, count);
            for (std::size_t j = 0; j < count; ++j)
                row[j] -= largest;
            detail::exp_in_place(row, count);
            const double inverse_total = 1.0 / sum_of(row, count);
            for (std::size_t j = 0; j < count; ++j)
                row[j] *= inverse_total;
            for (Eigen::Index j = visible; j < cols; ++j)
                row[j] = 0.0;
        }
        result.middleRows(first, rows).noalias() += s * values.topRows(cols);
    });
}

bool attention_kernel::add_symmetric(const double* q_data, const double* v_data, double beta,
                                     double* out) {
    const std::size_t n = m_n, d = m_d;
    m_half_diagonal.resize(n);
    m_key_weight.resize(n);
    double* h = m_half_diagonal.data();
    double* a = m_key_weight.data();
    const auto ni = static_cast<Eigen::Index>(n), di = static_cast<Eigen::Index>(d);
    const const_row_map queries(q_data, ni, di), values(v_data, ni, di);
    // Small d: the operands and the lane sums are held transposed (d x n), see
    // add_tile_small(); otherwise n x d for the GEMMs.
    const bool small = d <= small_dimension;
    if (small) {
        m_queries_t.resize(di, ni);
        m_queries_t.noalias() = queries.transpose();
        const double* q_t = m_queries_t.data();
        std::fill(h, h + n, 0.0);
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t k = 0; k < n; ++k)
                h[k] += q_t[c * n + k] * q_t[c * n + k];
        for (std::size_t k = 0; k < n; ++k)
            h[k] *= 0.5 * beta;
    } else {
        for (std::size_t k = 0; k < n; ++k)
            h[k] = 0.5 * beta * dot_of(q_data + k * d, q_data + k * d, d);
    }
    const double h_max = max_of(h, n);
    const double spread = h_max + max_of_negated(h, n);
    if (!(spread <= largest_shift_spread)) return false; // also NaN: the general path reports it
    for (std::size_t k = 0; k < n; ++k)
        a[k] = h[k] - h_max;
    detail::exp_in_place(a, n);

    const Eigen::Index sum_rows = small ? di : ni, sum_cols = small ? ni : di;
    const auto weight = Eigen::Map<const Eigen::VectorXd>(a, ni).asDiagonal();
    if (small) {
        m_scaled_values.resize(di, ni);
        m_scaled_values.noalias() = values.transpose() * weight;
    } else {
        m_scaled_values.resize(ni, di);
        m_scaled_values.noalias() = weight * values;
    }

    const std::size_t tile = m_tile;
    const std::size_t tiles = (n + tile - 1) / tile;
    const std::size_t pairs = tiles * (tiles + 1) / 2;
    const std::size_t lanes = std::min(m_lanes, pairs);
    if (m_lane_sum.size() < lanes) {
        m_lane_sum.resize(lanes);
        m_lane_norm.resize(lanes);
    }
    const auto threads = static_cast<std::size_t>(omp_get_max_threads());
    if (m_tiles.size() < threads) m_tiles.resize(threads);
    const matrix& scaled = m_scaled_values;
    const small_operands operands{
        n, d, -0.5 * beta, q_data, m_queries_t.data(), m_scaled_values.data(), a};
    const small_tile_function small_tile = small_tile_for(d);

    const bool parallel = lanes > 1 && threads > 1 && worth_parallel(n, d);
    detail::for_each_dynamic(lanes, parallel, [&](std::size_t lane) {
        matrix& sum = m_lane_sum[lane];
        std::vector<double>& norm = m_lane_norm[lane];
        if (sum.rows() != sum_rows || sum.cols() != sum_cols) sum.resize(sum_rows, sum_cols);
        norm.resize(n);
        sum.setZero();
        std::fill(norm.begin(), norm.end(), 0.0);
        matrix& buffer = m_tiles[static_cast<std::size_t>(omp_get_thread_num())];
        const auto ti = static_cast<Eigen::Index>(tile);
        if (buffer.rows() < 2 * ti || buffer.cols() < ti) buffer.resize(2 * ti, ti);

        // Tile pairs (I, J), J <= I, in row order; pair p belongs to lane p mod lanes.
        std::size_t p = 0;
        for (std::size_t I = 0; I < tiles; ++I) {
            for (std::size_t J = 0; J <= I; ++J, ++p) {
                if (p % lanes != lane) continue;
                const std::size_t i0 = I * tile, j0 = J * tile;
                const std::size_t rows = std::min(tile, n - i0), cols = std::min(tile, n - j0);
                if (small) {
                    small_tile(operands, i0, rows, j0, cols, buffer.data(), sum.data(),
                               norm.data());
                    continue;
                }
                const auto ri = static_cast<Eigen::Index>(rows),
                           ci = static_cast<Eigen::Index>(cols);
                auto e = buffer.topLeftCorner(ri, ci);
                e.noalias() = queries.middleRows(static_cast<Eigen::Index>(i0), ri) *
                              queries.middleRows(static_cast<Eigen::Index>(j0), ci).transpose();
                const double* h_i = h + i0;
                const double* h_j = h + j0;
                const double* a_i = a + i0;
                const double* a_j = a + j0;
                if (I == J) {
                    // Lower triangle only, then mirrored: E is symmetric.
                    for (std::size_t i = 0; i < rows; ++i) {
                        double* row = &e(static_cast<Eigen::Index>(i), 0);
                        for (std::size_t j = 0; j <= i; ++j)
                            row[j] = beta * row[j] - h_i[i] - h_j[j];
                        detail::exp_in_place(row, i + 1);
                        for (std::size_t j = 0; j < i; ++j)
                            e(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i)) = row[j];
                    }
                    for (std::size_t i = 0; i < rows; ++i)
                        norm[i0 + i] += dot_of(&e(static_cast<Eigen::Index>(i), 0), a_j, cols);
                    sum.middleRows(static_cast<Eigen::Index>(i0), ri).noalias() +=
                        e * scaled.middleRows(static_cast<Eigen::Index>(j0), ci);
                } else {
                    double* norm_j = norm.data() + j0;
                    for (std::size_t i = 0; i < rows; ++i) {
                        double* row = &e(static_cast<Eigen::Index>(i), 0);
                        for (std::size_t j = 0; j < cols; ++j)
                            row[j] = beta * row[j] - h_i[i] - h_j[j];
                        detail::exp_in_place(row, cols);
                        norm[i0 + i] += dot_of(row, a_j, cols);
                        for (std::size_t j = 0; j < cols; ++j)
                            norm_j[j] += a_i[i] * row[j];
                    }
                    sum.middleRows(static_cast<Eigen::Index>(i0), ri).noalias() +=
                        e * scaled.middleRows(static_cast<Eigen::Index>(j0), ci);
                    sum.middleRows(static_cast<Eigen::Index>(j0), ci).noalias() +=
                        e.transpose() * scaled.middleRows(static_cast<Eigen::Index>(i0), ri);
                }
            }
        }
    });

    // A_k = (sum over lanes of sum_j E_kj a_j v_j) / (sum over lanes of sum_j E_kj a_j),
    // lanes added in lane order (into lane 0, whose sums are reset by the next call).
    double* total = m_lane_norm[0].data();
    for (std::size_t lane = 1; lane < lanes; ++lane)
        for (std::size_t k = 0; k < n; ++k)
            total[k] += m_lane_norm[lane][k];
    for (std::size_t k = 0; k < n; ++k)
        total[k] = 1.0 / total[k];
    double* sum = m_lane_sum[0].data();
    for (std::size_t lane = 1; lane < lanes; ++lane) {
        const double* other = m_lane_sum[lane].data();
        for (std::size_t i = 0; i < n * d; ++i)
            sum[i] += other[i];
    }
    if (small) {
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t k = 0; k < n; ++k)
                out[k * d + c] += sum[c * n + k] * total[k];
    } else {
        for (std::size_t k = 0; k < n; ++k)
            for (std::size_t c = 0; c < d; ++c)
                out[k * d + c] += sum[k * d + c] * total[k];
    }
    return true;
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
