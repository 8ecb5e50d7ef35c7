// The small-d tiles of the symmetric path (src/model/kernel/small_d.hpp), in double and in float.
#include "small_d.hpp"

#include "../reductions.hpp"
#include "dimension.hpp"
#include "nadyn/model/attention.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace nadyn::kernel {

namespace {

// The dimension as a compile-time constant D (common small d), or op.d when D = 0: with D
// known the loops over the components unroll and the sums stay in registers.
template <std::size_t D, class Scalar> std::size_t dimension(const small_operands<Scalar>& op) {
    return D == 0 ? op.d : D;
}

using detail::load;
using detail::store;

// The helpers on group vectors are always inlined: a call would spill the sums held in
// vector registers across it.
// sums[l] += v[l] for l < count: a whole vector, or the lanes that a partial group owns. The
// sums are double; a float vector is widened first.
template <class Vector>
[[gnu::always_inline]] inline void add_to(double* sums, const Vector& v, std::size_t count) {
    constexpr std::size_t lanes = sizeof(Vector) / sizeof(v[0]);
    if (count == lanes) {
        if constexpr (std::is_same_v<Vector, group_vector>) {
            group_vector s;
            load(s, sums);
            store(sums, s + v);
        } else {
            for (std::size_t l = 0; l < lanes; ++l)
                sums[l] += static_cast<double>(v[l]);
        }
        return;
    }
    for (std::size_t l = 0; l < count; ++l)
        sums[l] += static_cast<double>(v[l]);
}

// The lane numbers 0, 1, ..., G - 1 as a vector (a constant: one initialiser list).
template <class Scalar, std::size_t... L>
[[gnu::always_inline]] inline typename simd<Scalar>::vector
lane_numbers(std::index_sequence<L...>) {
    return typename simd<Scalar>::vector{static_cast<Scalar>(L)...};
}

template <class Scalar> [[gnu::always_inline]] inline typename simd<Scalar>::vector lane_numbers() {
    return lane_numbers<Scalar>(std::make_index_sequence<simd<Scalar>::group>{});
}

// t[l][r] = e[r][l] for the group x group sub-block e: three rounds of shuffles, pairs of
// rows, then of 128-bit and 256-bit halves.
[[gnu::always_inline]] inline void transpose(const group_vector (&e)[group],
                                             group_vector (&t)[group]) {
    static_assert(group == 8);
    group_vector a[group], b[group];
    for (std::size_t k = 0; k < group; k += 2) {
        a[k] = __builtin_shufflevector(e[k], e[k + 1], 0, 8, 2, 10, 4, 12, 6, 14);
        a[k + 1] = __builtin_shufflevector(e[k], e[k + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    }
    for (std::size_t k = 0; k < group; k += 4)
        for (std::size_t h = 0; h < 2; ++h) {
            b[k + h] = __builtin_shufflevector(a[k + h], a[k + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            b[k + h + 2] =
                __builtin_shufflevector(a[k + h], a[k + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    // b[k] holds columns k and k + 4 of rows 0-3, b[k + 4] the same of rows 4-7 (k < 4).
    for (std::size_t k = 0; k < 4; ++k) {
        t[k] = __builtin_shufflevector(b[k], b[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        t[k + 4] = __builtin_shufflevector(b[k], b[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

// The same for any group G (16 floats): the H x H blocks off the diagonal of each 2H x 2H
// block swapped, for H = 1, 2, ..., G / 2 (one shuffle per row and round).
template <class Vector, std::size_t G, std::size_t H, std::size_t... L>
[[gnu::always_inline]] inline void swap_blocks(Vector (&x)[G], std::index_sequence<L...>) {
    for (std::size_t k = 0; k < G; ++k) {
        if ((k & H) != 0) continue;
        const Vector a = x[k], b = x[k + H];
        x[k] = __builtin_shufflevector(a, b, ((L & H) != 0 ? G + L - H : L)...);
        x[k + H] = __builtin_shufflevector(a, b, ((L & H) != 0 ? G + L : L + H)...);
    }
}

template <class Vector, std::size_t G>
[[gnu::always_inline]] inline void transpose(const Vector (&e)[G], Vector (&t)[G]) {
    for (std::size_t k = 0; k < G; ++k)
        t[k] = e[k];
    [&]<std::size_t... H>(std::index_sequence<H...>) {
        (swap_blocks<Vector, G, std::size_t{1} << H>(t, std::make_index_sequence<G>{}), ...);
    }
    (std::make_index_sequence<std::bit_width(G) - 1>{});
}

// e[r][l] = exp(-beta/2 ‖q_{i + r} - q_{j + l}‖^2) for r, l < group: a sub-block of E, from
// the differences (no cancellation between beta G_ij and h_i + h_j), exponentiated while in
// registers. Rows or columns past the tile's end read other tokens or the padding: finite,
// never added.
template <class Scalar, std::size_t D, class Vector = typename simd<Scalar>::vector>
[[gnu::always_inline]] inline void exponentials(const small_operands<Scalar>& op, std::size_t i,
                                                std::size_t j, Vector (&e)[simd<Scalar>::group]) {
    constexpr std::size_t most = D == 0 ? small_dimension : D;
    const std::size_t d = dimension<D>(op), stride = op.stride;
    const Scalar* q_t = op.queries_t;
    Vector q_j[most];
    for (std::size_t c = 0; c < d; ++c)
        load(q_j[c], q_t + c * stride + j);
#pragma GCC unroll 16
    for (std::size_t r = 0; r < simd<Scalar>::group; ++r) {
        Vector distance2 = {};
        for (std::size_t c = 0; c < d; ++c) {
            // q_j - q_i, not q_i - q_j: the scalar can be an operand broadcast from memory.
            const Vector diff = q_j[c] - q_t[c * stride + i + r];
            distance2 += diff * diff;
        }
        e[r] = op.minus_half_beta * distance2;
    }
    exp_groups(e);
}

// The diagonal sub-block at token i (as exponentials()), and with `pair` the upper triangle
// replaced by that of the next diagonal sub-block, at i + group.
template <class Scalar, std::size_t D, class Vector = typename simd<Scalar>::vector>
[[gnu::always_inline]] inline void diagonal_exponentials(const small_operands<Scalar>& op,
                                                         std::size_t i, bool pair,
                                                         Vector (&y)[simd<Scalar>::group]) {
    constexpr std::size_t group = simd<Scalar>::group;
    constexpr std::size_t most = D == 0 ? small_dimension : D;
    const std::size_t d = dimension<D>(op), stride = op.stride, next = pair ? group : 0;
    const Scalar* q_t = op.queries_t;
    const Vector lane = lane_numbers<Scalar>();
    Vector q_a[most], q_b[most];
    for (std::size_t c = 0; c < d; ++c) {
        load(q_a[c], q_t + c * stride + i);
        load(q_b[c], q_t + c * stride + i + next);
    }
#pragma GCC unroll 16
    for (std::size_t r = 0; r < group; ++r) {
        Vector distance_a = {}, distance_b = {};
        for (std::size_t c = 0; c < d; ++c) {
            const Vector diff_a = q_a[c] - q_t[c * stride + i + r];
            const Vector diff_b = q_b[c] - q_t[c * stride + i + next + r];
            distance_a += diff_a * diff_a;
            distance_b += diff_b * diff_b;
        }
        const Vector distance2 = lane > static_cast<Scalar>(r) ? distance_b : distance_a;
        y[r] = op.minus_half_beta * distance2;
    }
    exp_groups(y);
}

// sums[c][j + l] += sum_{r < row_count} w_c(i + r) e[r][l] for l < col_count: the sub-block
// e (rows i + r, columns j + l) added down its columns, to the tokens j + l. The sums over
// c are sum_j E_kj a_j V theta_j, then sum_j E_kj a_j.
template <class Scalar, std::size_t D, class Vector = typename simd<Scalar>::vector>
[[gnu::always_inline]] inline void
add_down_columns(const small_operands<Scalar>& op, const Vector (&e)[simd<Scalar>::group],
                 std::size_t i, std::size_t row_count, std::size_t j, std::size_t col_count,
                 double* sums) {
    constexpr std::size_t group = simd<Scalar>::group;
    constexpr std::size_t most = (D == 0 ? small_dimension : D) + 1;
    const std::size_t m = dimension<D>(op) + 1, stride = op.stride;
    Vector col_sums[most] = {};
    if (row_count == group) {
        // A whole sub-block (the common case) with a constant count: e stays in registers.
#pragma GCC unroll 16
        for (std::size_t r = 0; r < group; ++r)
            for (std::size_t c = 0; c < m; ++c)
                col_sums[c] += op.weighted_t[c * stride + i + r] * e[r];
    } else {
        for (std::size_t r = 0; r < row_count; ++r)
            for (std::size_t c = 0; c < m; ++c)
                col_sums[c] += op.weighted_t[c * stride + i + r] * e[r];
    }
    for (std::size_t c = 0; c < m; ++c)
        add_to(sums + c * stride + j, col_sums[c], col_count);
}

// row_sums[c][r] += sum_{l < col_count} w_c(j + l) e[r][l]: the sub-block e added along its
// rows, to the tokens i + r, as vector sums down the columns of its transpose.
template <class Scalar, std::size_t D, class Vector = typename simd<Scalar>::vector>
[[gnu::always_inline]] inline void
add_along_rows(const small_operands<Scalar>& op, const Vector (&e)[simd<Scalar>::group],
               std::size_t j, std::size_t col_count, Vector* row_sums) {
    constexpr std::size_t group = simd<Scalar>::group;
    const std::size_t m = dimension<D>(op) + 1, stride = op.stride;
    Vector e_t[group];
    transpose(e, e_t);
    if (col_count == group) {
#pragma GCC unroll 16
        for (std::size_t l = 0; l < group; ++l)
            for (std::size_t c = 0; c < m; ++c)
                row_sums[c] += op.weighted_t[c * stride + j + l] * e_t[l];
        return;
    }
    for (std::size_t l = 0; l < col_count; ++l)
        for (std::size_t c = 0; c < m; ++c)
            row_sums[c] += op.weighted_t[c * stride + j + l] * e_t[l];
}

// For d = 3 the token-major matrices (n x 3) are converted to and from the transposed ones
// a group of tokens (three vectors) at a time, with shuffles: the loops over tokens with a
// stride of 3 stay scalar otherwise, and at a few dozen tokens they are a good part of a call.
// x[c][k] = row[3 k + c] for k < group.
[[gnu::always_inline]] inline void split_three(const double* row, group_vector (&x)[3]) {
    group_vector in[3];
    for (std::size_t v = 0; v < 3; ++v)
        load(in[v], row + v * group);
    const group_vector t0 = __builtin_shufflevector(in[0], in[1], 0, 3, 6, 9, 12, 15, 0, 0);
    const group_vector t1 = __builtin_shufflevector(in[0], in[1], 1, 4, 7, 10, 13, 0, 0, 0);
    const group_vector t2 = __builtin_shufflevector(in[0], in[1], 2, 5, 8, 11, 14, 0, 0, 0);
    x[0] = __builtin_shufflevector(t0, in[2], 0, 1, 2, 3, 4, 5, 10, 13);
    x[1] = __builtin_shufflevector(t1, in[2], 0, 1, 2, 3, 4, 8, 11, 14);
    x[2] = __builtin_shufflevector(t2, in[2], 0, 1, 2, 3, 4, 9, 12, 15);
}

// row[3 k + c] += x[c][k] for k < group: the inverse of split_three(), added.
[[gnu::always_inline]] inline void add_joined_three(const group_vector (&x)[3], double* row) {
    const group_vector t0 = __builtin_shufflevector(x[0], x[1], 0, 8, 0, 1, 9, 1, 2, 10);
    const group_vector t1 = __builtin_shufflevector(x[0], x[1], 3, 3, 11, 3, 4, 12, 4, 5);
    const group_vector t2 = __builtin_shufflevector(x[0], x[1], 13, 13, 6, 14, 6, 7, 15, 7);
    const group_vector out[3] = {__builtin_shufflevector(t0, x[2], 0, 1, 8, 3, 4, 9, 6, 7),
                                 __builtin_shufflevector(t1, x[2], 10, 1, 2, 11, 4, 5, 12, 7),
                                 __builtin_shufflevector(t2, x[2], 0, 13, 2, 3, 14, 5, 6, 15)};
    for (std::size_t v = 0; v < 3; ++v) {
        group_vector sum;
        load(sum, row + v * group);
        store(row + v * group, sum + out[v]);
    }
}

// q_t (d x stride, then a zero row) from the n x d queries, zero-padded, and
// h_k = beta/2 ‖q_k‖^2 (in double, from the double queries, in both arithmetics).
template <class Scalar, std::size_t D>
void transpose_queries(std::size_t d, std::size_t n, std::size_t stride, const double* queries,
                       double beta, Scalar* q_t, double* h) {
    if constexpr (D != 0) d = D;
    std::size_t first = 0;
    if constexpr (D == 3 && std::is_same_v<Scalar, double>) {
        for (; first + group <= n; first += group) {
            group_vector q[3];
            split_three(queries + 3 * first, q);
            for (std::size_t c = 0; c < 3; ++c)
                store(q_t + c * stride + first, q[c]);
            store(h + first, (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]) * (0.5 * beta));
        }
    }
    for (std::size_t k = first; k < n; ++k) {
        double norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
            const double q = queries[k * d + c];
            q_t[c * stride + k] = static_cast<Scalar>(q);
            norm2 += q * q;
        }
        h[k] = norm2 * (0.5 * beta);
    }
    for (std::size_t c = 0; c < d; ++c)
        std::fill(q_t + c * stride + n, q_t + (c + 1) * stride, Scalar(0));
    std::fill(q_t + d * stride, q_t + (d + 1) * stride, Scalar(0));
}

// w_t ((d + 1) x stride, zero-padded): a_k V theta_k transposed, then a_k (each product in
// double, rounded to Scalar once).
template <class Scalar, std::size_t D>
void weight_values(std::size_t d, std::size_t n, std::size_t stride, const double* values,
                   const double* a, Scalar* w_t) {
    if constexpr (D != 0) d = D;
    std::size_t first = 0;
    if constexpr (D == 3 && std::is_same_v<Scalar, double>) {
        for (; first + group <= n; first += group) {
            group_vector v[3], weight;
            split_three(values + 3 * first, v);
            load(weight, a + first);
            for (std::size_t c = 0; c < 3; ++c)
                store(w_t + c * stride + first, v[c] * weight);
        }
    }
    for (std::size_t k = first; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            w_t[c * stride + k] = static_cast<Scalar>(values[k * d + c] * a[k]);
    for (std::size_t k = 0; k < n; ++k)
        w_t[d * stride + k] = static_cast<Scalar>(a[k]);
    for (std::size_t c = 0; c <= d; ++c)
        std::fill(w_t + c * stride + n, w_t + (c + 1) * stride, Scalar(0));
}

// out += A: the sums over j of E_kj a_j V theta_j (transposed) over sum_j E_kj a_j.
// `inverse_total` is room for n values.
template <std::size_t D>
void add_quotient(std::size_t d, std::size_t n, std::size_t stride, const double* sums,
                  double* inverse_total, double* out) {
    if constexpr (D != 0) d = D;
    std::size_t first = 0;
    if constexpr (D == 3) {
        for (; first + group <= n; first += group) {
            group_vector total, quotient[3];
            load(total, sums + 3 * stride + first);
            const group_vector inverse = 1.0 / total;
            for (std::size_t c = 0; c < 3; ++c) {
                load(quotient[c], sums + c * stride + first);
                quotient[c] *= inverse;
            }
            add_joined_three(quotient, out + 3 * first);
        }
    }
    for (std::size_t k = first; k < n; ++k)
        inverse_total[k] = 1.0 / sums[d * stride + k];
    for (std::size_t k = first; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            out[k * d + c] += sums[c * stride + k] * inverse_total[k];
}

// A tile (I, J) of E: rows i0 .. i0 + rows, columns j0 .. j0 + cols.
struct tile_extent {
    std::size_t i0, rows, j0, cols;
    [[nodiscard]] bool diagonal() const { return i0 == j0; }
};

// The tile of E for small d is taken in sub-blocks of group x group, added to a lane's sums
// ((d + 1) x stride: sum_j E_kj a_j V theta_j transposed, then sum_j E_kj a_j) as vector sums
// over whole groups: short rows make horizontal sums the expensive part of small systems.
// Each sub-block below a diagonal tile's diagonal, or of an off-diagonal tile, is added down
// its columns and along its rows. Diagonal sub-blocks are symmetric: two of them (A below B)
// share one exponential block X, A's lower triangle and B's upper one. With Y = exp(X),
// E_A[r][l] is Y[r][l] for l < r and Y[l][r] otherwise, E_B the other way round; both
// diagonals are exp(0) = 1. Their column sums are their row sums.
// Rows of sub-blocks are taken two at a time (a batch, starting at row bi of the tile), for
// the pairs of diagonal sub-blocks. Each sub-block's exponentials stay in registers from the
// exponents to the sums.

// Sub-blocks off the diagonal in row bi of the tile: left of it in a diagonal tile, all
// in another tile.
std::size_t row_width(const tile_extent& tile, std::size_t bi) {
    return tile.diagonal() ? bi : tile.cols;
}

template <class Scalar> std::size_t batch_rows(const tile_extent& tile, std::size_t bi) {
    return tile.rows - bi > simd<Scalar>::group ? 2 : 1;
}

// The batch's sub-blocks, each exponentiated in registers and added to the sums at once:
// no round trip of the exponents through memory.
template <class Scalar, std::size_t D>
void add_batch(const small_operands<Scalar>& op, const tile_extent& tile, std::size_t bi,
               double* sums) {
    using vector = typename simd<Scalar>::vector;
    constexpr std::size_t group = simd<Scalar>::group;
    constexpr std::size_t most = (D == 0 ? small_dimension : D) + 1;
    const std::size_t m = dimension<D>(op) + 1, stride = op.stride;
    const std::size_t batch = batch_rows<Scalar>(tile, bi);
    for (std::size_t k = 0; k < batch; ++k) {
        const std::size_t i = tile.i0 + bi + k * group;
        const std::size_t row_count = std::min(group, tile.i0 + tile.rows - i);
        vector row_sums[most] = {};
        for (std::size_t bj = 0; bj < row_width(tile, bi + k * group); bj += group) {
            const std::size_t col_count = std::min(group, tile.cols - bj);
            vector e[group];
            exponentials<Scalar, D>(op, i, tile.j0 + bj, e);
            add_down_columns<Scalar, D>(op, e, i, row_count, tile.j0 + bj, col_count, sums);
            add_along_rows<Scalar, D>(op, e, tile.j0 + bj, col_count, row_sums);
        }
        for (std::size_t c = 0; c < m; ++c)
            add_to(sums + c * stride + i, row_sums[c], row_count);
    }
    if (!tile.diagonal()) return;
    vector y[group];
    const std::size_t i = tile.i0 + bi, row_count = std::min(group, tile.rows - bi);
    diagonal_exponentials<Scalar, D>(op, i, batch == 2, y);
    if (batch == 1) {
        add_down_columns<Scalar, D>(op, y, i, row_count, i, row_count, sums);
    } else {
        const vector lane = lane_numbers<Scalar>();
        vector y_t[group], e[group];
        transpose(y, y_t);
        for (std::size_t r = 0; r < group; ++r)
            e[r] = lane < static_cast<Scalar>(r) ? y[r] : y_t[r];
        add_down_columns<Scalar, D>(op, e, i, group, i, group, sums);
        const std::size_t lower_count = std::min(group, tile.rows - bi - group);
        for (std::size_t r = 0; r < group; ++r)
            e[r] = lane < static_cast<Scalar>(r) ? y_t[r] : y[r];
        add_down_columns<Scalar, D>(op, e, i + group, lower_count, i + group, lower_count, sums);
    }
}

// The tile (I, J) of E for small d added to a lane's sums, batch by batch.
template <class Scalar, std::size_t D>
void add_tile_small(const small_operands<Scalar>& op, std::size_t i0, std::size_t rows,
                    std::size_t j0, std::size_t cols, double* sums) {
    const tile_extent tile{i0, rows, j0, cols};
    for (std::size_t bi = 0; bi < rows; bi += 2 * simd<Scalar>::group)
        add_batch<Scalar, D>(op, tile, bi, sums);
}

// The sums of all of E for n tokens in one tile; a holds h_k - max h and receives the
// values' weights a_k = exp(h_k - max h) (weighted_t is written here).
template <class Scalar, std::size_t D>
void add_single_tile(const small_operands<Scalar>& op, std::size_t n, double* a,
                     const double* values, Scalar* weighted_t, double* sums) {
    const tile_extent tile{0, n, 0, n};
    detail::exp_in_place(a, n);
    weight_values<Scalar, D>(op.d, n, op.stride, values, a, weighted_t);
    std::fill(sums, sums + (op.d + 1) * op.stride, 0.0);
    for (std::size_t bi = 0; bi < n; bi += 2 * simd<Scalar>::group)
        add_batch<Scalar, D>(op, tile, bi, sums);
}

template <class Scalar, std::size_t D>
constexpr small_path<Scalar> small_path_of{transpose_queries<Scalar, D>, weight_values<Scalar, D>,
                                           add_tile_small<Scalar, D>, add_quotient<D>,
                                           add_single_tile<Scalar, D>};

} // namespace

template <class Scalar> const small_path<Scalar>& small_path_for(std::size_t d) {
    return dispatch_dimension<small_dimensions>(d, [](auto constant) -> const small_path<Scalar>& {
        return small_path_of<Scalar, decltype(constant)::value>;
    });
}

template const small_path<double>& small_path_for<double>(std::size_t);
template const small_path<float>& small_path_for<float>(std::size_t);

} // namespace nadyn::kernel
