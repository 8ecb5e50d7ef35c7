#pragma once
// The vectorised exponentials of the attention kernel: the portable loop exp_lanes() and, on
// whole groups of doubles held in registers, exp_groups() (AVX-512: a table of 2^(j/16) and a
// degree-6 polynomial). detail::exp_in_place() (include/nadyn/model/attention.hpp) is built from
// them in src/model/kernel/exp.cpp; the small-d tiles (src/model/kernel/small_d.cpp) call
// exp_groups() on the sub-blocks they keep in registers.
#include "../reductions.hpp"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace nadyn::kernel {

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
// One group of doubles as a GCC/Clang vector, the lanes of the reductions
// (src/model/reductions.hpp): the compiler splits it into the target's SIMD registers.
// Auto-vectorisation of the sub-block loops is fragile (GCC vectorises them across the
// components instead, through the stack), and the transpose needs explicit shuffles.
using group_vector = detail::reduction_lanes;
static_assert(group == detail::lane_count);

#if defined(__AVX512F__)
// AVX-512: exp(x) = 2^(k/16) exp(r), |r| <= ln2/32, with 2^(j/16) (j = k mod 16) from a
// 16-entry table held in two registers (one permute): a degree-6 polynomial suffices
// (Chebyshev fit of (e^r - 1)/r, relative error below 1.4e-17 before rounding) instead of
// degree 11. Each entry is stored with j << 48 subtracted from its bits, so that adding
// k << 48 (the low bits of `shifted`, moved up) gives the bits of 2^(k/16) directly.
inline constexpr double two_to_sixteenths[16] = {
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

// Sixteen floats: the group of the float small-d tiles (src/model/kernel/small_d.hpp).
using float_group_vector = float __attribute__((vector_size(64)));

// The core of the float exponentials below, for N groups of arguments a in their range:
// shifted[v] = a log2e + 1.5 2^23 (k = round(a log2e) in its low mantissa bits) and p[v] =
// exp(a - k ln2) by the Cody-Waite reduction and the degree-7 Taylor polynomial, each step for
// all N groups before the next (independent chains keep the FMA units busy).
template <std::size_t N>
[[gnu::always_inline]] inline void float_exp_reduced(const float_group_vector (&a)[N],
                                                     float_group_vector (&shifted)[N],
                                                     float_group_vector (&p)[N]) {
    using vector = float_group_vector;
    constexpr float log2e = 1.44269504f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    constexpr float shifter = 0x1.8p23f;
    constexpr float c7 = 1.0f / 5040.0f, c6 = 1.0f / 720.0f, c5 = 1.0f / 120.0f, c4 = 1.0f / 24.0f,
                    c3 = 1.0f / 6.0f, c2 = 0.5f;
    const vector zero = {};
#if defined(__AVX512F__)
    auto madd = [](vector x, vector y, vector z) {
        return reinterpret_cast<vector>(_mm512_fmadd_ps(
            reinterpret_cast<__m512>(x), reinterpret_cast<__m512>(y), reinterpret_cast<__m512>(z)));
    };
#else
    auto madd = [](vector x, vector y, vector z) { return x * y + z; };
#endif
    vector r[N];
    for (std::size_t v = 0; v < N; ++v)
        shifted[v] = madd(a[v], zero + log2e, zero + shifter);
    for (std::size_t v = 0; v < N; ++v) {
        const vector k = shifted[v] - shifter;
        r[v] = a[v] - k * ln2_hi;
        r[v] = r[v] - k * ln2_lo;
    }
    for (std::size_t v = 0; v < N; ++v)
        p[v] = madd(zero + c7, r[v], zero + c6);
    for (const float c : {c5, c4, c3, c2, 1.0f, 1.0f})
        for (std::size_t v = 0; v < N; ++v)
            p[v] = madd(p[v], r[v], zero + c);
}

// x[v] = exp(x[v]) in place for N groups of floats: the algorithm of the float
// detail::exp_in_place() (src/model/kernel/exp.cpp: clamp to [-87, 88], Cody-Waite reduction,
// degree-7 Taylor polynomial, 2^k from the exponent bits, 0 below -87).
template <std::size_t N> [[gnu::always_inline]] inline void exp_groups(float_group_vector (&x)[N]) {
    using vector = float_group_vector;
    using bits_vector = std::int32_t __attribute__((vector_size(64)));
    constexpr float lowest = -87.0f, highest = 88.0f;
    const vector zero = {};
    vector clamped[N], shifted[N], p[N];
    for (std::size_t v = 0; v < N; ++v) {
        const vector low = x[v] < lowest ? zero + lowest : x[v];
        clamped[v] = low > highest ? zero + highest : low;
    }
    float_exp_reduced(clamped, shifted, p);
    for (std::size_t v = 0; v < N; ++v) {
        const bits_vector bits = (reinterpret_cast<bits_vector>(shifted[v]) + 127) << 23;
        const vector result = p[v] * reinterpret_cast<vector>(bits);
        x[v] = x[v] < lowest ? zero : result;
    }
}

// exp_groups() for arguments x <= 0 only (a softmax's logits minus their largest), bitwise
// the same values: the same reduction and polynomial, without the clamps (nothing is above 0,
// and below -87 the result is replaced by 0 as there) and with 2^k applied by AVX-512's
// scalef (which underflows to 0 where the exponent bits would wrap). Six instructions fewer
// a vector, a tenth of the float small-n path's work per row (src/model/kernel/small_n_float.cpp).
// A NaN stays NaN; -inf gives 0. Without AVX-512, exp_groups() itself.
template <std::size_t N>
[[gnu::always_inline]] inline void exp_groups_nonpositive(float_group_vector (&x)[N]) {
#if defined(__AVX512F__)
    using vector = float_group_vector;
    constexpr float shifter = 0x1.8p23f, lowest = -87.0f;
    const vector zero = {};
    vector shifted[N], p[N];
    float_exp_reduced(x, shifted, p);
    for (std::size_t v = 0; v < N; ++v) {
        const vector result = reinterpret_cast<vector>(_mm512_scalef_ps(
            reinterpret_cast<__m512>(p[v]), reinterpret_cast<__m512>(shifted[v] - shifter)));
        x[v] = x[v] < lowest ? zero : result;
    }
#else
    exp_groups(x);
#endif
}

} // namespace nadyn::kernel
