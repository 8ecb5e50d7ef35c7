#include "nadyn/attention.hpp"

#include "kernel/small_n.hpp"
#include "nadyn/detail/parallel.hpp"
#include "nadyn/error.hpp"
#include "qkv_norm.hpp"
#include "reductions.hpp"
#include "softmax_blocks.hpp"

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace nadyn {

namespace {

// exp(x) for count values, the portable algorithm of detail::exp_in_place() (see there): an
// inline loop, so that exp_groups() without AVX-512 becomes straight-line vector code.
[[gnu::always_inline]] inline void exp_lanes(double* values, std::size_t count) {
    constexpr double log2e = 1.4426950408889634;
    // ln 2 = ln2_hi + ln2_lo with 21 trailing zero bits in ln2_hi (fdlibm's split): k ln2_hi
    // is exact, and so is x - k ln2_hi, for every k of the domain.
    constexpr double ln2_hi = 6.93147180369123816490e-01;
    constexpr double ln2_lo = 1.90821492927058770002e-10;
    // Adding 1.5 * 2^52 rounds to an integer and leaves it in the low mantissa bits.
    constexpr double shifter = 0x1.8p52;
    // exp(r) ~ 1 + r (c1 + r (c2 + ... + r c11)) on |r| <= ln2/2: the minimax polynomial for
    // the relative error (Remez exchange on (e^r - 1)/r with weight r e^-r), below 2e-17
    // before rounding: two terms fewer than Taylor's for the same accuracy. The constant
    // term stays 1, so that exp(0) = 1 exactly (E_kk = 1 in the symmetric path).
    constexpr double c1 = 0x1.0000000000003p+0, c2 = 0x1.0000000000005p-1,
                     c3 = 0x1.5555555554827p-3, c4 = 0x1.55555555520f6p-5,
                     c5 = 0x1.1111111379cbdp-7, c6 = 0x1.6c16c17f33016p-10,
                     c7 = 0x1.a019f6263ff19p-13, c8 = 0x1.a019a698a225fp-16,
                     c9 = 0x1.71f60f0b72c71p-19, c10 = 0x1.28a295f2b01edp-22,
                     c11 = 0x1.8ad0e0854c435p-26;
#if defined(__FMA__)
    auto madd = [](double a, double b, double c) { return std::fma(a, b, c); };
#else
    auto madd = [](double a, double b, double c) { return a * b + c; };
#endif
    // Written as a plain loop over independent elements so that the compiler vectorises it
    // (SSE2 by default, AVX-512 with NADYN_NATIVE). No clamp of x (a tenth of the work): below
    // -708, where k leaves the exponent's range and r may be NaN, the result is replaced by 0
    // at the end; a NaN x stays NaN throughout.
    for (std::size_t i = 0; i < count; ++i) {
        const double x = values[i];
        const double shifted = madd(x, log2e, shifter);
        const double k = shifted - shifter;
        double r = x - k * ln2_hi;
        r = r - k * ln2_lo;
        double p = madd(c11, r, c10);
        p = madd(p, r, c9);
        p = madd(p, r, c8);
        p = madd(p, r, c7);
        p = madd(p, r, c6);
        p = madd(p, r, c5);
        p = madd(p, r, c4);
        p = madd(p, r, c3);
        p = madd(p, r, c2);
        p = madd(p, r, c1);
        p = madd(p, r, 1.0);
        // p 2^k: k added to p's exponent field (one integer add instead of building 2^k and
        // multiplying); the result is normal for x >= -708. The low bits of `shifted` hold k,
        // so shifting them up by 52 gives k << 52 (two's complement, modulo 2^64).
        const std::uint64_t scale = std::bit_cast<std::uint64_t>(shifted) << 52;
        const double result = std::bit_cast<double>(std::bit_cast<std::uint64_t>(p) + scale);
        values[i] = x < -708.0 ? 0.0 : result;
    }
}

// Tokens per sub-block of a small-d tile: a whole number of SIMD vectors of doubles (one
// AVX-512, two AVX2 or four SSE2 vectors), so that no loop over tokens has a scalar remainder.
constexpr std::size_t group = 8;
// One group of doubles as a GCC/Clang vector: the compiler splits it into the target's SIMD
// registers. Auto-vectorisation of the sub-block loops is fragile (GCC vectorises them across
// the components instead, through the stack), and the transpose needs explicit shuffles.
using group_vector = double __attribute__((vector_size(group * sizeof(double))));

#if defined(__AVX512F__)
// AVX-512: exp(x) = 2^(k/16) exp(r), |r| <= ln2/32, with 2^(j/16) (j = k mod 16) from a
// 16-entry table held in two registers (one permute): a degree-6 polynomial suffices
// (Chebyshev fit of (e^r - 1)/r, relative error below 1.4e-17 before rounding) instead of
// degree 11. Each entry is stored with j << 48 subtracted from its bits, so that adding
// k << 48 (the low bits of `shifted`, moved up) gives the bits of 2^(k/16) directly.
constexpr double two_to_sixteenths[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

constexpr double table_entry(std::size_t j) {
    return std::bit_cast<double>(std::bit_cast<std::uint64_t>(two_to_sixteenths[j]) -
                                 (std::uint64_t{j} << 48));
}

// x[v] = exp(x[v]) in place for N groups, each step of the algorithm for all N before the
// next: the exp of one group is a chain of about 14 dependent operations, and only
// independent neighbours keep the FMA units busy (with one group at a time the out-of-order
// window holds too few of them). Arrays, not vectors by value: that would change the ABI
// without AVX-512 (GCC warns).
template <std::size_t N> [[gnu::always_inline]] inline void exp_groups(group_vector (&x)[N]) {
    constexpr double log2e_16 = 16.0 * 1.4426950408889634;
    // fdlibm's split of ln 2 over 16 (a power of two: still exact products k ln2_hi / 16).
    constexpr double ln2_hi_16 = 6.93147180369123816490e-01 / 16.0;
    constexpr double ln2_lo_16 = 1.90821492927058770002e-10 / 16.0;
    constexpr double shifter = 0x1.8p52;
    constexpr double c1 = 0x1.0000000000003p+0, c2 = 0x1.0000000000001p-1,
                     c3 = 0x1.555555547d216p-3, c4 = 0x1.55555554e93b7p-5,
                     c5 = 0x1.11123d01366d4p-7, c6 = 0x1.6c17ed5c1f49ep-10;
    const __m512d table_low =
        _mm512_setr_pd(table_entry(0), table_entry(1), table_entry(2), table_entry(3),
                       table_entry(4), table_entry(5), table_entry(6), table_entry(7));
    const __m512d table_high =
        _mm512_setr_pd(table_entry(8), table_entry(9), table_entry(10), table_entry(11),
                       table_entry(12), table_entry(13), table_entry(14), table_entry(15));
    __m512d shifted[N], r[N], p[N];
    for (std::size_t v = 0; v < N; ++v)
        shifted[v] = _mm512_fmadd_pd(x[v], _mm512_set1_pd(log2e_16), _mm512_set1_pd(shifter));
    for (std::size_t v = 0; v < N; ++v)
        p[v] = _mm512_sub_pd(shifted[v], _mm512_set1_pd(shifter)); // k
    for (std::size_t v = 0; v < N; ++v)
        r[v] = _mm512_fnmadd_pd(p[v], _mm512_set1_pd(ln2_hi_16), x[v]);
    for (std::size_t v = 0; v < N; ++v)
        r[v] = _mm512_fnmadd_pd(p[v], _mm512_set1_pd(ln2_lo_16), r[v]);
    for (std::size_t v = 0; v < N; ++v)
        p[v] = _mm512_fmadd_pd(_mm512_set1_pd(c6), r[v], _mm512_set1_pd(c5));
    for (const double c : {c4, c3, c2, c1, 1.0}) // the last with 1: exp(0) = 1 exactly
        for (std::size_t v = 0; v < N; ++v)
            p[v] = _mm512_fmadd_pd(p[v], r[v], _mm512_set1_pd(c));
    for (std::size_t v = 0; v < N; ++v) {
        // The permute reads the low 4 bits of each index, k mod 16; 2^(k/16) stays normal
        // for x >= -708. A NaN x gives a NaN p, so the product stays NaN.
        const __m512i bits = _mm512_castpd_si512(shifted[v]);
        const __m512d entry = _mm512_permutex2var_pd(table_low, bits, table_high);
        // Integer vector arithmetic, not _mm512_slli_epi64: GCC 12's version of that trips
        // -Wmaybe-uninitialized inside its own header.
        using lanes_bits = std::uint64_t __attribute__((vector_size(sizeof(__m512i))));
        const __m512d scale = reinterpret_cast<__m512d>(reinterpret_cast<lanes_bits>(entry) +
                                                        (reinterpret_cast<lanes_bits>(bits) << 48));
        const __mmask8 flushed = _mm512_cmp_pd_mask(x[v], _mm512_set1_pd(-708.0), _CMP_LT_OQ);
        x[v] = _mm512_maskz_mul_pd(static_cast<__mmask8>(~flushed), p[v], scale);
    }
}
#else
template <std::size_t N> [[gnu::always_inline]] inline void exp_groups(group_vector (&x)[N]) {
    double lanes[N * group];
    std::memcpy(lanes, &x, sizeof x);
    exp_lanes(lanes, N * group);
    std::memcpy(&x, lanes, sizeof x);
}
#endif

} // namespace

namespace detail {

void exp_in_place_portable(double* values, std::size_t count) {
    exp_lanes(values, count);
}

void exp_in_place(double* values, std::size_t count) {
#if defined(__AVX512F__)
    std::size_t i = 0;
    for (; i + 4 * group <= count; i += 4 * group) {
        group_vector x[4];
        std::memcpy(&x, values + i, sizeof x);
        exp_groups(x);
        std::memcpy(values + i, &x, sizeof x);
    }
    // The rest with the portable loop: short rows (diagonal tiles of the GEMM path) are
    // common, and for a few values its vectorised loop with a scalar tail is faster than
    // whole groups. Both are within a few 1e-16 of exp.
    exp_lanes(values + i, count - i);
#else
    exp_lanes(values, count);
#endif
}

} // namespace detail

namespace {

using row_map = Eigen::Map<matrix>;
using const_row_map = Eigen::Map<const matrix>;

using detail::dot_of;
using detail::max_of;
using detail::max_of_negated;
using detail::sum_of;

// About 4 MiB of logits per thread: large enough for GEMM efficiency, small enough that
// n = 65,536 needs 4 MiB (not 32 GiB) per thread.
std::size_t default_block(std::size_t n) {
    const std::size_t target =
        (std::size_t{4} << 20) / sizeof(double) / std::max<std::size_t>(n, 1);
    return std::clamp<std::size_t>(target, 16, 256);
}

using detail::worth_parallel;

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
    if (detail::small_n_project(tokens.data(), std::size_t(tokens.rows()),
                                std::size_t(tokens.cols()), m, out))
        return;
    out.noalias() = tokens * m.transpose();
}

using detail::same_projection;

// Below this dimension the symmetric path skips the GEMMs (Eigen's kernels are built for
// depths much larger than 3) for plain vector loops: add_tile_small().
constexpr std::size_t small_dimension = 16;

// n rounded up to whole groups: the stride of the transposed operands and sums.
std::size_t padded(std::size_t n) {
    return (n + group - 1) / group * group;
}

struct small_operands {
    std::size_t d, stride;
    double minus_half_beta;
    // d x stride, then a zero row: a group read from any token stays inside the matrix.
    const double* queries_t;
    // (d + 1) x stride: a_j V theta_j transposed, then a_j (the norm's weights).
    const double* weighted_t;
};

// The dimension as a compile-time constant D (common small d), or op.d when D = 0: with D
// known the loops over the components unroll and the sums stay in registers.
template <std::size_t D> std::size_t dimension(const small_operands& op) {
    return D == 0 ? op.d : D;
}

// The helpers on group vectors are always inlined: a call would spill the sums held in
// vector registers across it.
[[gnu::always_inline]] inline void load(group_vector& v, const double* from) {
    std::memcpy(&v, from, sizeof v);
}

[[gnu::always_inline]] inline void store(double* to, const group_vector& v) {
    std::memcpy(to, &v, sizeof v);
}

// sums[l] += v[l] for l < count: a whole vector, or the lanes that a partial group owns.
[[gnu::always_inline]] inline void add_to(double* sums, const group_vector& v, std::size_t count) {
    if (count == group) {
        group_vector s;
        load(s, sums);
        store(sums, s + v);
        return;
    }
    for (std::size_t l = 0; l < count; ++l)
        sums[l] += v[l];
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

// e[r][l] = exp(-beta/2 ‖q_{i + r} - q_{j + l}‖^2) for r, l < group: a sub-block of E, from
// the differences (no cancellation between beta G_ij and h_i + h_j), exponentiated while in
// registers. Rows or columns past the tile's end read other tokens or the padding: finite,
// never added.
template <std::size_t D>
[[gnu::always_inline]] inline void exponentials(const small_operands& op, std::size_t i,
                                                std::size_t j, group_vector (&e)[group]) {
    constexpr std::size_t most = D == 0 ? small_dimension : D;
    const std::size_t d = dimension<D>(op), stride = op.stride;
    const double* q_t = op.queries_t;
    group_vector q_j[most];
    for (std::size_t c = 0; c < d; ++c)
        load(q_j[c], q_t + c * stride + j);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < group; ++r) {
        group_vector distance2 = {};
        for (std::size_t c = 0; c < d; ++c) {
            // q_j - q_i, not q_i - q_j: the scalar can be an operand broadcast from memory.
            const group_vector diff = q_j[c] - q_t[c * stride + i + r];
            distance2 += diff * diff;
        }
        e[r] = op.minus_half_beta * distance2;
    }
    exp_groups(e);
}

// The diagonal sub-block at token i (as exponentials()), and with `pair` the upper triangle
// replaced by that of the next diagonal sub-block, at i + group.
template <std::size_t D>
[[gnu::always_inline]] inline void diagonal_exponentials(const small_operands& op, std::size_t i,
                                                         bool pair, group_vector (&y)[group]) {
    constexpr std::size_t most = D == 0 ? small_dimension : D;
    const std::size_t d = dimension<D>(op), stride = op.stride, next = pair ? group : 0;
    const double* q_t = op.queries_t;
    const group_vector lane = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0};
    group_vector q_a[most], q_b[most];
    for (std::size_t c = 0; c < d; ++c) {
        load(q_a[c], q_t + c * stride + i);
        load(q_b[c], q_t + c * stride + i + next);
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < group; ++r) {
        group_vector distance_a = {}, distance_b = {};
        for (std::size_t c = 0; c < d; ++c) {
            const group_vector diff_a = q_a[c] - q_t[c * stride + i + r];
            const group_vector diff_b = q_b[c] - q_t[c * stride + i + next + r];
            distance_a += diff_a * diff_a;
            distance_b += diff_b * diff_b;
        }
        const group_vector distance2 = lane > static_cast<double>(r) ? distance_b : distance_a;
        y[r] = op.minus_half_beta * distance2;
    }
    exp_groups(y);
}

// sums[c][j + l] += sum_{r < row_count} w_c(i + r) e[r][l] for l < col_count: the sub-block
// e (rows i + r, columns j + l) added down its columns, to the tokens j + l. The sums over
// c are sum_j E_kj a_j V theta_j, then sum_j E_kj a_j.
template <std::size_t D>
[[gnu::always_inline]] inline void
add_down_columns(const small_operands& op, const group_vector (&e)[group], std::size_t i,
                 std::size_t row_count, std::size_t j, std::size_t col_count, double* sums) {
    constexpr std::size_t most = (D == 0 ? small_dimension : D) + 1;
    const std::size_t m = dimension<D>(op) + 1, stride = op.stride;
    group_vector col_sums[most] = {};
    if (row_count == group) {
        // A whole sub-block (the common case) with a constant count: e stays in registers.
#pragma GCC unroll 8
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
template <std::size_t D>
[[gnu::always_inline]] inline void add_along_rows(const small_operands& op,
                                                  const group_vector (&e)[group], std::size_t j,
                                                  std::size_t col_count, group_vector* row_sums) {
    const std::size_t m = dimension<D>(op) + 1, stride = op.stride;
    group_vector e_t[group];
    transpose(e, e_t);
    if (col_count == group) {
#pragma GCC unroll 8
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
// h_k = beta/2 ‖q_k‖^2.
template <std::size_t D>
void transpose_queries(std::size_t d, std::size_t n, std::size_t stride, const double* queries,
                       double beta, double* q_t, double* h) {
    if constexpr (D != 0) d = D;
    std::size_t first = 0;
    if constexpr (D == 3) {
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
            q_t[c * stride + k] = q;
            norm2 += q * q;
        }
        h[k] = norm2 * (0.5 * beta);
    }
    for (std::size_t c = 0; c < d; ++c)
        std::fill(q_t + c * stride + n, q_t + (c + 1) * stride, 0.0);
    std::fill(q_t + d * stride, q_t + (d + 1) * stride, 0.0);
}

// w_t ((d + 1) x stride, zero-padded): a_k V theta_k transposed, then a_k.
template <std::size_t D>
void weight_values(std::size_t d, std::size_t n, std::size_t stride, const double* values,
                   const double* a, double* w_t) {
    if constexpr (D != 0) d = D;
    std::size_t first = 0;
    if constexpr (D == 3) {
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
            w_t[c * stride + k] = values[k * d + c] * a[k];
    std::copy(a, a + n, w_t + d * stride);
    for (std::size_t c = 0; c <= d; ++c)
        std::fill(w_t + c * stride + n, w_t + (c + 1) * stride, 0.0);
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

std::size_t batch_rows(const tile_extent& tile, std::size_t bi) {
    return tile.rows - bi > group ? 2 : 1;
}

// The batch's sub-blocks, each exponentiated in registers and added to the sums at once:
// no round trip of the exponents through memory.
template <std::size_t D>
void add_batch(const small_operands& op, const tile_extent& tile, std::size_t bi, double* sums) {
    constexpr std::size_t most = (D == 0 ? small_dimension : D) + 1;
    const std::size_t m = dimension<D>(op) + 1, stride = op.stride;
    const std::size_t batch = batch_rows(tile, bi);
    for (std::size_t k = 0; k < batch; ++k) {
        const std::size_t i = tile.i0 + bi + k * group;
        const std::size_t row_count = std::min(group, tile.i0 + tile.rows - i);
        group_vector row_sums[most] = {};
        for (std::size_t bj = 0; bj < row_width(tile, bi + k * group); bj += group) {
            const std::size_t col_count = std::min(group, tile.cols - bj);
            group_vector e[group];
            exponentials<D>(op, i, tile.j0 + bj, e);
            add_down_columns<D>(op, e, i, row_count, tile.j0 + bj, col_count, sums);
            add_along_rows<D>(op, e, tile.j0 + bj, col_count, row_sums);
        }
        for (std::size_t c = 0; c < m; ++c)
            add_to(sums + c * stride + i, row_sums[c], row_count);
    }
    if (!tile.diagonal()) return;
    group_vector y[group];
    const std::size_t i = tile.i0 + bi, row_count = std::min(group, tile.rows - bi);
    diagonal_exponentials<D>(op, i, batch == 2, y);
    if (batch == 1) {
        add_down_columns<D>(op, y, i, row_count, i, row_count, sums);
    } else {
        const group_vector lane = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0};
        group_vector y_t[group], e[group];
        transpose(y, y_t);
        for (std::size_t r = 0; r < group; ++r)
            e[r] = lane < static_cast<double>(r) ? y[r] : y_t[r];
        add_down_columns<D>(op, e, i, group, i, group, sums);
        const std::size_t lower_count = std::min(group, tile.rows - bi - group);
        for (std::size_t r = 0; r < group; ++r)
            e[r] = lane < static_cast<double>(r) ? y_t[r] : y[r];
        add_down_columns<D>(op, e, i + group, lower_count, i + group, lower_count, sums);
    }
}

// The tile (I, J) of E for small d added to a lane's sums, batch by batch.
template <std::size_t D>
void add_tile_small(const small_operands& op, std::size_t i0, std::size_t rows, std::size_t j0,
                    std::size_t cols, double* sums) {
    const tile_extent tile{i0, rows, j0, cols};
    for (std::size_t bi = 0; bi < rows; bi += 2 * group)
        add_batch<D>(op, tile, bi, sums);
}

// Up to this many tokens, and within one tile, the symmetric path takes one pass
// (add_single_tile()): the set-up of lanes and tiles is a good part of a few dozen tokens.
constexpr std::size_t single_tile = 64;

// The sums of all of E for n tokens in one tile; a holds h_k - max h and receives the
// values' weights a_k = exp(h_k - max h) (weighted_t is written here).
template <std::size_t D>
void add_single_tile(const small_operands& op, std::size_t n, double* a, const double* values,
                     double* weighted_t, double* sums) {
    const tile_extent tile{0, n, 0, n};
    detail::exp_in_place(a, n);
    weight_values<D>(op.d, n, op.stride, values, a, weighted_t);
    std::fill(sums, sums + (op.d + 1) * op.stride, 0.0);
    for (std::size_t bi = 0; bi < n; bi += 2 * group)
        add_batch<D>(op, tile, bi, sums);
}

// The small-d symmetric path's loops, for one dimension.
struct small_path {
    void (*transpose_queries)(std::size_t, std::size_t, std::size_t, const double*, double, double*,
                              double*);
    void (*weight_values)(std::size_t, std::size_t, std::size_t, const double*, const double*,
                          double*);
    void (*add_tile)(const small_operands&, std::size_t, std::size_t, std::size_t, std::size_t,
                     double*);
    void (*add_quotient)(std::size_t, std::size_t, std::size_t, const double*, double*, double*);
    void (*add_single_tile)(const small_operands&, std::size_t, double*, const double*, double*,
                            double*);
};

template <std::size_t D>
constexpr small_path small_path_of{transpose_queries<D>, weight_values<D>, add_tile_small<D>,
                                   add_quotient<D>, add_single_tile<D>};

const small_path& small_path_for(std::size_t d) {
    switch (d) {
    case 2:
        return small_path_of<2>;
    case 3:
        return small_path_of<3>;
    case 4:
        return small_path_of<4>;
    case 8:
        return small_path_of<8>;
    default:
        return small_path_of<0>;
    }
}

} // namespace

attention_kernel::attention_kernel(std::size_t n, std::size_t d, std::size_t block)
    : m_n(n), m_d(d), m_block(block == 0 ? default_block(n) : block),
      m_tile(std::min(std::max<std::size_t>(n, 1), block == 0 ? default_tile : block)),
      m_lanes(symmetric_lanes) {}

void attention_kernel::compute(const double* theta, const attention_weights& weights,
                               const attention_options& options, double* out) {
    compute_rows(theta, weights, options, 0, m_n, out);
}

void attention_kernel::compute_rows(const double* theta, const attention_weights& weights,
                                    const attention_options& options, std::size_t first,
                                    std::size_t count, double* out) {
    if (first > m_n || count > m_n - first)
        throw std::invalid_argument("attention_kernel::compute_rows: rows beyond n");
    m_first_row = first;
    m_end_row = first + count;
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
        // Noise gives queries and keys their own factors: Q = K no longer makes them equal.
        const bool symmetric =
            same_projection(head.Q, head.K) && head.query_norm.empty() && head.key_norm.empty();
        if (head.Q.size() != 0) {
            project(tokens, head.Q, m_queries);
            q_data = m_queries.data();
        }
        q_data = detail::shape_rows(
            q_data, m_n, m_d, detail::normalises(options.qkv_norm, options.unit_inputs, head.Q),
            head.query_norm, m_queries);
        if (symmetric) {
            k_data = q_data;
        } else {
            if (head.K.size() != 0) {
                project(tokens, head.K, m_keys);
                k_data = m_keys.data();
            }
            k_data = detail::shape_rows(
                k_data, m_n, m_d, detail::normalises(options.qkv_norm, options.unit_inputs, head.K),
                head.key_norm, m_keys);
        }
        if (head.V.size() != 0) {
            project(tokens, head.V, m_values);
            v_data = m_values.data();
        }
        v_data = detail::shape_rows(
            v_data, m_n, m_d, detail::normalises(options.qkv_norm, options.unit_inputs, head.V),
            head.value_norm, m_values, options.value_norm);
        // Per head: a head with Q = K takes the symmetric path whatever the others take.
        if (symmetric && !options.causal && options.beta >= 0.0 &&
            add_symmetric(q_data, v_data, options.beta, detail::resolve_threads(options.threads),
                          options.kind, out)) {
            m_last_path = path::symmetric;
            continue;
        }
        add_general(q_data, k_data, v_data, options, out);
        m_last_path = path::general;
    }
}

void attention_kernel::add_general(const double* q_data, const double* k_data, const double* v_data,
                                   const attention_options& options, double* out) {
    if (options.kind == attention_kind::softmax && detail::takes_small_n(m_n, m_d)) {
        detail::add_small_n_attention(q_data, k_data, v_data, m_n, m_d, options.beta,
                                      options.causal, m_first_row, m_end_row, out);
        return;
    }
    const detail::softmax_blocks_shape shape{
        m_n,
        m_d,
        m_block,
        options.causal,
        worth_parallel(m_n, m_d) ? detail::resolve_threads(options.threads) : 1,
        m_first_row,
        m_end_row};
    if (options.kind == attention_kind::unnormalized) {
        // exp(x) = exp(x - max) exp(max): exp_in_place() only covers x <= 709, and beyond
        // that the row's scale becomes Inf (a fault the caller reports), not a wrong number.
        const double log_n = std::log(static_cast<double>(m_n));
        auto unnormalized_row = [log_n](double* row, std::size_t count) {
            const double largest = max_of(row, count);
            for (std::size_t j = 0; j < count; ++j)
                row[j] -= largest;
            detail::exp_in_place(row, count);
            const double scale = std::exp(largest - log_n);
            for (std::size_t j = 0; j < count; ++j)
                row[j] *= scale;
        };
        detail::add_softmax_blocks(q_data, k_data, v_data, options.beta, shape, m_logits, out,
                                   unnormalized_row);
        return;
    }
    // Max subtraction (log-sum-exp): beta up to 1e4 stays finite.
    auto softmax_row = [](double* row, std::size_t count) {
        const double largest = max_of(row, count);
        for (std::size_t j = 0; j < count; ++j)
            row[j] -= largest;
        detail::exp_in_place(row, count);
        const double inverse_total = 1.0 / sum_of(row, count);
        for (std::size_t j = 0; j < count; ++j)
            row[j] *= inverse_total;
    };
    detail::add_softmax_blocks(q_data, k_data, v_data, options.beta, shape, m_logits, out,
                               softmax_row);
}

namespace {

// The unnormalised attention from the symmetric path's sums (docs/model.md §8): E_kj a_j =
// exp(beta G_kj - h_k - max h), so out_k += exp(h_k + max h) / n * sum_j E_kj a_j v_j. `sums`
// is token-major (n x d) or, for small d, transposed with a row stride; h is overwritten.
void add_unnormalized(std::size_t n, std::size_t d, const double* sums, std::size_t token_step,
                      std::size_t component_step, double h_max, double* h, double* out) {
    const double shift = h_max - std::log(static_cast<double>(n));
    for (std::size_t k = 0; k < n; ++k)
        h[k] = std::exp(h[k] + shift);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            out[k * d + c] += sums[k * token_step + c * component_step] * h[k];
}

} // namespace

bool attention_kernel::add_symmetric(const double* q_data, const double* v_data, double beta,
                                     int threads_requested, attention_kind kind, double* out) {
    const bool unnormalized = kind == attention_kind::unnormalized;
    const std::size_t n = m_n, d = m_d;
    m_half_diagonal.resize(n);
    m_key_weight.resize(n);
    double* h = m_half_diagonal.data();
    double* a = m_key_weight.data();
    const auto ni = static_cast<Eigen::Index>(n), di = static_cast<Eigen::Index>(d);
    const const_row_map queries(q_data, ni, di), values(v_data, ni, di);
    // Small d: the operands and the lane sums are held transposed and zero-padded to whole
    // groups (rows of `stride`), see add_tile_small(); otherwise n x d for the GEMMs.
    const bool small = d <= small_dimension;
    const std::size_t stride = padded(n);
    const small_path& small_d = small_path_for(d);
    if (small) {
        m_queries_t.resize(di + 1, static_cast<Eigen::Index>(stride));
        small_d.transpose_queries(d, n, stride, q_data, beta, m_queries_t.data(), h);
    } else {
        for (std::size_t k = 0; k < n; ++k)
            h[k] = 0.5 * beta * dot_of(q_data + k * d, q_data + k * d, d);
    }
    const double h_max = max_of(h, n);
    const double spread = h_max + max_of_negated(h, n);
    if (!(spread <= largest_shift_spread)) return false; // also NaN: the general path reports it
    if (m_lane_sum.empty()) {
        m_lane_sum.resize(1);
        m_lane_norm.resize(1);
    }
    if (small) m_scaled_values.resize(di + 1, static_cast<Eigen::Index>(stride));
    const small_operands operands{d, stride, -0.5 * beta, m_queries_t.data(),
                                  m_scaled_values.data()};
    if (small && n <= single_tile && n <= m_tile) {
        matrix& sum = m_lane_sum[0];
        sum.resize(di + 1, static_cast<Eigen::Index>(stride));
        for (std::size_t k = 0; k < n; ++k)
            a[k] = h[k] - h_max;
        small_d.add_single_tile(operands, n, a, v_data, m_scaled_values.data(), sum.data());
        if (unnormalized)
            add_unnormalized(n, d, sum.data(), 1, stride, h_max, h, out);
        else
            small_d.add_quotient(d, n, stride, sum.data(), h, out); // h is spent
        return true;
    }
    for (std::size_t k = 0; k < n; ++k)
        a[k] = h[k] - h_max;
    detail::exp_in_place(a, n);

    const Eigen::Index sum_rows = small ? di + 1 : ni,
                       sum_cols = small ? static_cast<Eigen::Index>(stride) : di;
    const auto weight = Eigen::Map<const Eigen::VectorXd>(a, ni).asDiagonal();
    if (small) {
        small_d.weight_values(d, n, stride, v_data, a, m_scaled_values.data());
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
    const int threads = worth_parallel(n, d) ? std::max(threads_requested, 1) : 1;
    if (m_tiles.size() < static_cast<std::size_t>(threads))
        m_tiles.resize(static_cast<std::size_t>(threads));
    const matrix& scaled = m_scaled_values;

    detail::for_each_dynamic(lanes, threads, [&](std::size_t lane) {
        matrix& sum = m_lane_sum[lane];
        std::vector<double>& norm = m_lane_norm[lane];
        if (sum.rows() != sum_rows || sum.cols() != sum_cols) sum.resize(sum_rows, sum_cols);
        sum.setZero();
        if (!small) {
            norm.resize(n);
            std::fill(norm.begin(), norm.end(), 0.0);
        }
        matrix& buffer = m_tiles[static_cast<std::size_t>(omp_get_thread_num())];
        const auto ti = static_cast<Eigen::Index>(tile);
        // A tile of E and room for its transpose (small d keeps its sub-blocks in registers).
        if (!small && (buffer.rows() < 2 * ti || buffer.cols() < ti)) buffer.resize(2 * ti, ti);

        // Tile pairs (I, J), J <= I, in row order; pair p belongs to lane p mod lanes.
        std::size_t p = 0;
        for (std::size_t I = 0; I < tiles; ++I) {
            for (std::size_t J = 0; J <= I; ++J, ++p) {
                if (p % lanes != lane) continue;
                const std::size_t i0 = I * tile, j0 = J * tile;
                // A tile adds to the rows of I and of J only: one that touches no wanted
                // row is skipped (the wanted rows' sums keep their order, so are bitwise).
                if (!wanted_tile(i0, tile) && !wanted_tile(j0, tile)) continue;
                const std::size_t rows = std::min(tile, n - i0), cols = std::min(tile, n - j0);
                if (small) {
                    small_d.add_tile(operands, i0, rows, j0, cols, sum.data());
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
    if (small) {
        double* sum = m_lane_sum[0].data();
        for (std::size_t lane = 1; lane < lanes; ++lane) {
            const double* other = m_lane_sum[lane].data();
            for (std::size_t i = 0; i < (d + 1) * stride; ++i)
                sum[i] += other[i];
        }
        if (unnormalized)
            add_unnormalized(n, d, sum, 1, stride, h_max, h, out);
        else
            small_d.add_quotient(d, n, stride, sum, h, out); // h is spent
        return true;
    }
    if (unnormalized) {
        double* sum = m_lane_sum[0].data();
        for (std::size_t lane = 1; lane < lanes; ++lane) {
            const double* other = m_lane_sum[lane].data();
            for (std::size_t i = 0; i < n * d; ++i)
                sum[i] += other[i];
        }
        add_unnormalized(n, d, sum, d, 1, h_max, h, out);
        return true;
    }
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
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            out[k * d + c] += sum[k * d + c] * total[k];
    return true;
}

attention_kind parse_attention_kind(std::string_view name) {
    if (name == "softmax") return attention_kind::softmax;
    if (name == "unnormalized") return attention_kind::unnormalized;
    throw input_error("unknown attention '" + std::string(name) +
                      "'; valid choices: " + attention_kind_names());
}

std::string_view to_string(attention_kind kind) {
    return kind == attention_kind::unnormalized ? "unnormalized" : "softmax";
}

std::string attention_kind_names() {
    return "softmax, unnormalized";
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
    // QKV-Norm and norm noise (docs/model.md §11), written out for one vector: always
    // normalised under QKV-Norm (unit inputs or not), then the factor of token `token`.
    auto shape = [&](std::vector<double>& y, const std::vector<double>& factors, std::size_t token,
                     double length = 1.0) {
        double factor = factors.empty() ? 1.0 : factors[token];
        if (options.qkv_norm) {
            double norm2 = 0.0;
            for (std::size_t a = 0; a < d; ++a)
                norm2 += y[a] * y[a];
            factor *= length / std::sqrt(norm2);
        }
        for (std::size_t a = 0; a < d; ++a)
            y[a] *= factor;
    };
    for (const attention_head& head : weights.heads) {
        for (std::size_t i = 0; i < n; ++i) {
            apply(head.Q, theta + i * d, q);
            shape(q, head.query_norm, i);
            const std::size_t visible = options.causal ? i + 1 : n;
            double largest = -std::numeric_limits<double>::infinity();
            for (std::size_t j = 0; j < visible; ++j) {
                apply(head.K, theta + j * d, k);
                shape(k, head.key_norm, j);
                double dot = 0.0;
                for (std::size_t a = 0; a < d; ++a)
                    dot += q[a] * k[a];
                logits[j] = options.beta * dot;
                largest = std::max(largest, logits[j]);
            }
            double total = 0.0;
            for (std::size_t j = 0; j < visible; ++j)
                total += std::exp(logits[j] - largest);
            const bool unnormalized = options.kind == attention_kind::unnormalized;
            for (std::size_t j = 0; j < visible; ++j) {
                apply(head.V, theta + j * d, v);
                shape(v, head.value_norm, j, options.value_norm);
                const double w = unnormalized ? std::exp(logits[j]) / static_cast<double>(n)
                                              : std::exp(logits[j] - largest) / total;
                for (std::size_t a = 0; a < d; ++a)
                    out[i * d + a] += w * v[a];
            }
        }
    }
}

} // namespace nadyn
