// The symmetric path (Q = K): each tile of E_kj = exp(-beta/2 |q_k - q_j|^2) computed once
// and used for the rows of both its tokens (include/nadyn/model/attention.hpp). Large d takes
// GEMMs on 128 x 128 tiles here; small d the register sub-blocks of src/model/kernel/small_d.cpp.
#include "symmetric.hpp"

#include "../reductions.hpp"
#include "nadyn/model/attention.hpp"
#include "nadyn/model/detail/parallel.hpp"
#include "small_d.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace nadyn {

namespace {

using const_row_map = Eigen::Map<const matrix>;
using detail::dot_of;
using detail::max_of;
using detail::max_of_negated;
using detail::worth_parallel;
using kernel::largest_shift_spread;
using kernel::single_tile;

// The unnormalised attention from the symmetric path's sums (docs/model.md §8): E_kj a_j =
// exp(beta G_kj - h_k - max h), so out_k += exp(h_k + max h) / n * sum_j E_kj a_j v_j. `sums`
// is token-major (n x d) or, for small d, transposed with a row stride; h is overwritten.
// `largest` is the largest weight scale of the arithmetic: the float tiles' scales are Inf
// beyond float's range, as the float general path's (the run then stops with a fault, at the
// same beta in every float path).
template <class Sum>
void add_unnormalized(std::size_t n, std::size_t d, const Sum* sums, std::size_t token_step,
                      std::size_t component_step, double h_max, double* h, double* out,
                      double largest = std::numeric_limits<double>::max()) {
    const double shift = h_max - std::log(static_cast<double>(n));
    for (std::size_t k = 0; k < n; ++k) {
        h[k] = std::exp(h[k] + shift);
        if (h[k] > largest) h[k] = std::numeric_limits<double>::infinity();
    }
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            out[k * d + c] += static_cast<double>(sums[k * token_step + c * component_step]) * h[k];
}

// sum_j row_j a_j: in double for float rows too (the denominators' sums).
double row_dot(const double* row, const double* a, std::size_t count) {
    return dot_of(row, a, count);
}
double row_dot(const float* row, const double* a, std::size_t count) {
    double total = 0.0;
    for (std::size_t j = 0; j < count; ++j)
        total += static_cast<double>(row[j]) * a[j];
    return total;
}

// The lanes of one call: a fixed number (never the thread count), fewer only when there are
// fewer tile pairs (one at the least: lane 0 holds the sums).
std::size_t lanes_of(const kernel::call_shape& shape) {
    const std::size_t tiles = (shape.n + shape.tile - 1) / shape.tile;
    return std::clamp<std::size_t>(tiles * (tiles + 1) / 2, 1, kernel::symmetric_lanes);
}

// f(i0, rows, j0, cols) for the tiles of `lane`: the tile pairs (I, J), J <= I, in row order,
// pair p belonging to lane p mod lanes. A tile adds to the rows of I and of J only: one that
// touches no wanted row is skipped (the wanted rows' sums keep their order, so are bitwise).
template <class TileBody>
void for_each_tile_of_lane(const kernel::call_shape& shape, std::size_t lane, std::size_t lanes,
                           const TileBody& body) {
    const std::size_t n = shape.n, tile = shape.tile;
    const std::size_t tiles = (n + tile - 1) / tile;
    std::size_t p = 0;
    for (std::size_t I = 0; I < tiles; ++I) {
        for (std::size_t J = 0; J <= I; ++J, ++p) {
            if (p % lanes != lane) continue;
            const std::size_t i0 = I * tile, j0 = J * tile;
            if (!shape.wanted(i0, tile) && !shape.wanted(j0, tile)) continue;
            body(i0, std::min(tile, n - i0), j0, std::min(tile, n - j0));
        }
    }
}

// The lanes' sums added into lane 0's, in lane order (lane 0's are reset by the next call).
template <class Scalar>
Scalar* add_lanes(std::vector<detail::row_major_matrix<Scalar>>& lane_sums, std::size_t lanes) {
    Scalar* sum = lane_sums[0].data();
    const auto count = static_cast<std::size_t>(lane_sums[0].size());
    for (std::size_t lane = 1; lane < lanes; ++lane) {
        const auto* other = lane_sums[lane].data();
        for (std::size_t i = 0; i < count; ++i)
            sum[i] += other[i];
    }
    return sum;
}

} // namespace

// The small-d symmetric path (src/model/kernel/small_d.hpp): the operands and the lane sums are
// held transposed and zero-padded to whole groups (rows of `stride`); the tiles' arithmetic
// is Scalar (float with --precision float), h, a and the sums are double.
template <class Scalar>
bool kernel::add_symmetric_small_d(symmetric_workspace& work, const call_shape& shape,
                                   const double* q_data, const double* v_data, double beta,
                                   int threads_requested, attention_kind kind, double* out) {
    const bool unnormalized = kind == attention_kind::unnormalized;
    const std::size_t n = shape.n, d = shape.d;
    work.half_diagonal.resize(n);
    work.key_weight.resize(n);
    double* h = work.half_diagonal.data();
    double* a = work.key_weight.data();
    const auto di = static_cast<Eigen::Index>(d);
    const std::size_t stride = kernel::padded<Scalar>(n);
    const auto stride_i = static_cast<Eigen::Index>(stride);
    const kernel::small_path<Scalar>& small_d = kernel::small_path_for<Scalar>(d);
    kernel::symmetric_operands<Scalar>& operand = work.operands<Scalar>();
    auto& queries_t = operand.queries;
    auto& weighted_t = operand.scaled_values;
    queries_t.resize(di + 1, stride_i);
    small_d.transpose_queries(d, n, stride, q_data, beta, queries_t.data(), h);
    const double h_max = max_of(h, n);
    const double spread = h_max + max_of_negated(h, n);
    if (!(spread <= largest_shift_spread)) return false; // also NaN: the general path reports it
    std::vector<matrix>& lane_sums = work.small_lane_sums;
    if (lane_sums.empty()) lane_sums.resize(1);
    weighted_t.resize(di + 1, stride_i);
    const kernel::small_operands<Scalar> operands{d, stride, static_cast<Scalar>(-0.5 * beta),
                                                  queries_t.data(), weighted_t.data()};
    if (n <= single_tile && n <= shape.tile) {
        matrix& sum = lane_sums[0];
        sum.resize(di + 1, stride_i);
        for (std::size_t k = 0; k < n; ++k)
            a[k] = h[k] - h_max;
        small_d.add_single_tile(operands, n, a, v_data, weighted_t.data(), sum.data());
        if (unnormalized)
            add_unnormalized(n, d, sum.data(), 1, stride, h_max, h, out,
                             std::numeric_limits<Scalar>::max());
        else
            small_d.add_quotient(d, n, stride, sum.data(), h, out); // h is spent
        return true;
    }
    for (std::size_t k = 0; k < n; ++k)
        a[k] = h[k] - h_max;
    detail::exp_in_place(a, n);
    small_d.weight_values(d, n, stride, v_data, a, weighted_t.data());

    const std::size_t lanes = lanes_of(shape);
    if (lane_sums.size() < lanes) lane_sums.resize(lanes);
    const int threads = worth_parallel(n, d) ? std::max(threads_requested, 1) : 1;
    detail::for_each_dynamic(lanes, threads, [&](std::size_t lane) {
        matrix& sum = lane_sums[lane];
        if (sum.rows() != di + 1 || sum.cols() != stride_i) sum.resize(di + 1, stride_i);
        sum.setZero();
        for_each_tile_of_lane(
            shape, lane, lanes,
            [&](std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) {
                small_d.add_tile(operands, i0, rows, j0, cols, sum.data());
            });
    });

    // A_k = (sum over lanes of sum_j E_kj a_j V theta_j) / (sum over lanes of sum_j E_kj a_j).
    const double* sum = add_lanes(lane_sums, lanes);
    if (unnormalized)
        add_unnormalized(n, d, sum, 1, stride, h_max, h, out, std::numeric_limits<Scalar>::max());
    else
        small_d.add_quotient(d, n, stride, sum, h, out); // h is spent
    return true;
}

// The symmetric path for d > 16: GEMMs on tiles of E in Scalar (float with --precision
// float), the denominators and h, a in double; the lane sums n x d in Scalar.
template <class Scalar>
bool kernel::add_symmetric_tiles(symmetric_workspace& work, const call_shape& shape,
                                 const double* q_data, const double* v_data, double beta,
                                 int threads_requested, attention_kind kind, double* out) {
    using tile_matrix = detail::row_major_matrix<Scalar>;
    const bool unnormalized = kind == attention_kind::unnormalized;
    const std::size_t n = shape.n, d = shape.d;
    work.half_diagonal.resize(n);
    work.key_weight.resize(n);
    double* h = work.half_diagonal.data();
    double* a = work.key_weight.data();
    const auto ni = static_cast<Eigen::Index>(n), di = static_cast<Eigen::Index>(d);
    const const_row_map queries(q_data, ni, di), values(v_data, ni, di);
    for (std::size_t k = 0; k < n; ++k)
        h[k] = 0.5 * beta * dot_of(q_data + k * d, q_data + k * d, d);
    const double h_max = max_of(h, n);
    const double spread = h_max + max_of_negated(h, n);
    if (!(spread <= largest_shift_spread)) return false; // also NaN: the general path reports it
    kernel::symmetric_operands<Scalar>& operand = work.operands<Scalar>();
    std::vector<tile_matrix>& lane_sums = operand.lane_sums;
    for (std::size_t k = 0; k < n; ++k)
        a[k] = h[k] - h_max;
    detail::exp_in_place(a, n);

    const auto weight = Eigen::Map<const Eigen::VectorXd>(a, ni).asDiagonal();
    tile_matrix& scaled = operand.scaled_values;
    const Scalar* q_tiles = nullptr;
    if constexpr (std::is_same_v<Scalar, double>) {
        q_tiles = q_data; // the tiles read the head's queries themselves
        scaled.resize(ni, di);
        scaled.noalias() = weight * values;
    } else {
        operand.queries = queries.cast<float>();
        q_tiles = operand.queries.data();
        scaled = (weight * values).cast<float>();
    }
    const Eigen::Map<const tile_matrix> tile_queries(q_tiles, ni, di);

    const std::size_t lanes = lanes_of(shape);
    const std::size_t tiles = (n + shape.tile - 1) / shape.tile;
    if (lane_sums.size() < lanes) lane_sums.resize(lanes);
    if (work.lane_norms.size() < lanes) work.lane_norms.resize(lanes);
    if (work.lane_zeroed.size() < lanes) work.lane_zeroed.resize(lanes);
    const int threads = worth_parallel(n, d) ? std::max(threads_requested, 1) : 1;
    std::vector<tile_matrix>& tile_buffers = operand.tiles;
    if (tile_buffers.size() < static_cast<std::size_t>(threads))
        tile_buffers.resize(static_cast<std::size_t>(threads));

    const auto add_lane = [&](std::size_t lane) {
        tile_matrix& sum = lane_sums[lane];
        std::vector<double>& norm = work.lane_norms[lane];
        if (sum.rows() != ni || sum.cols() != di) sum.resize(ni, di);
        norm.resize(n);
        std::fill(norm.begin(), norm.end(), 0.0);
        // The sums' rows are zeroed tile by tile just before their first product (in cache,
        // not a pass over n x d), the rows no tile of the lane reaches at the end.
        std::vector<unsigned char>& zeroed = work.lane_zeroed[lane];
        zeroed.assign(tiles, 0);
        const auto rows_of = [&](std::size_t start, Eigen::Index count) {
            auto block = sum.middleRows(static_cast<Eigen::Index>(start), count);
            if (!zeroed[start / shape.tile]) {
                block.setZero();
                zeroed[start / shape.tile] = 1;
            }
            return block;
        };
        tile_matrix& buffer = tile_buffers[static_cast<std::size_t>(omp_get_thread_num())];
        const auto ti = static_cast<Eigen::Index>(shape.tile);
        // A tile of E and room for its transpose.
        if ((buffer.rows() < 2 * ti || buffer.cols() < ti)) buffer.resize(2 * ti, ti);

        for_each_tile_of_lane(
            shape, lane, lanes,
            [&](std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) {
                const auto ri = static_cast<Eigen::Index>(rows),
                           ci = static_cast<Eigen::Index>(cols);
                auto e = buffer.topLeftCorner(ri, ci);
                e.noalias() =
                    tile_queries.middleRows(static_cast<Eigen::Index>(i0), ri) *
                    tile_queries.middleRows(static_cast<Eigen::Index>(j0), ci).transpose();
                const double* h_i = h + i0;
                const double* h_j = h + j0;
                const double* a_i = a + i0;
                const double* a_j = a + j0;
                if (i0 == j0) {
                    // Lower triangle only, then mirrored: E is symmetric.
                    for (std::size_t i = 0; i < rows; ++i) {
                        Scalar* row = &e(static_cast<Eigen::Index>(i), 0);
                        for (std::size_t j = 0; j <= i; ++j)
                            row[j] = beta * row[j] - h_i[i] - h_j[j];
                        detail::exp_in_place(row, i + 1);
                        for (std::size_t j = 0; j < i; ++j)
                            e(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i)) = row[j];
                    }
                    for (std::size_t i = 0; i < rows; ++i)
                        norm[i0 + i] += row_dot(&e(static_cast<Eigen::Index>(i), 0), a_j, cols);
                    rows_of(i0, ri).noalias() +=
                        e * scaled.middleRows(static_cast<Eigen::Index>(j0), ci);
                    return;
                }
                double* norm_j = norm.data() + j0;
                for (std::size_t i = 0; i < rows; ++i) {
                    Scalar* row = &e(static_cast<Eigen::Index>(i), 0);
                    for (std::size_t j = 0; j < cols; ++j)
                        row[j] = beta * row[j] - h_i[i] - h_j[j];
                    detail::exp_in_place(row, cols);
                    norm[i0 + i] += row_dot(row, a_j, cols);
                    for (std::size_t j = 0; j < cols; ++j)
                        norm_j[j] += a_i[i] * row[j];
                }
                rows_of(i0, ri).noalias() +=
                    e * scaled.middleRows(static_cast<Eigen::Index>(j0), ci);
                rows_of(j0, ci).noalias() +=
                    e.transpose() * scaled.middleRows(static_cast<Eigen::Index>(i0), ri);
            });
        for (std::size_t t = 0; t < tiles; ++t)
            if (!zeroed[t])
                rows_of(t * shape.tile,
                        static_cast<Eigen::Index>(std::min(shape.tile, n - t * shape.tile)));
    };
    detail::for_each_dynamic(lanes, threads, add_lane);

    // A_k = (sum over lanes of sum_j E_kj a_j v_j) / (sum over lanes of sum_j E_kj a_j), the
    // lanes added in lane order into lane 0's sums (reset by the next call). One pass over
    // chunks of tokens that stay in cache across the lanes, serial: another parallel region
    // would cost a time slice whenever another process holds the other core.
    Scalar* sum = lane_sums[0].data();
    double* total = work.lane_norms[0].data();
    constexpr std::size_t chunk = 64;
    for (std::size_t first = 0; first < n; first += chunk) {
        const std::size_t end = std::min(n, first + chunk);
        for (std::size_t lane = 1; lane < lanes; ++lane) {
            const Scalar* other = lane_sums[lane].data();
            for (std::size_t i = first * d; i < end * d; ++i)
                sum[i] += other[i];
        }
        if (unnormalized) continue; // the sums alone (below)
        for (std::size_t lane = 1; lane < lanes; ++lane)
            for (std::size_t k = first; k < end; ++k)
                total[k] += work.lane_norms[lane][k];
        for (std::size_t k = first; k < end; ++k) {
            const double inverse = 1.0 / total[k];
            for (std::size_t c = 0; c < d; ++c)
                out[k * d + c] += static_cast<double>(sum[k * d + c]) * inverse;
        }
    }
    if (unnormalized)
        add_unnormalized(n, d, sum, d, 1, h_max, h, out, std::numeric_limits<Scalar>::max());
    return true;
}

template bool kernel::add_symmetric_small_d<double>(symmetric_workspace&, const call_shape&,
                                                    const double*, const double*, double, int,
                                                    attention_kind, double*);
template bool kernel::add_symmetric_small_d<float>(symmetric_workspace&, const call_shape&,
                                                   const double*, const double*, double, int,
                                                   attention_kind, double*);
template bool kernel::add_symmetric_tiles<double>(symmetric_workspace&, const call_shape&,
                                                  const double*, const double*, double, int,
                                                  attention_kind, double*);
template bool kernel::add_symmetric_tiles<float>(symmetric_workspace&, const call_shape&,
                                                 const double*, const double*, double, int,
                                                 attention_kind, double*);

} // namespace nadyn
