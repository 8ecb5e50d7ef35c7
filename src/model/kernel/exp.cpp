// detail::exp_in_place() in double and float, and the float softmax rows' exponential
// detail::exp_nonpositive_in_place() (include/nadyn/model/attention.hpp).
#include "exp.hpp"

#include "nadyn/model/attention.hpp"

#include <algorithm>
#include <cstring>

namespace nadyn {

using kernel::exp_lanes;
#if defined(__AVX512F__)
using kernel::exp_groups;
using kernel::group;
using kernel::group_vector;
#endif

namespace detail {

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

namespace detail {

void exp_in_place(float* values, std::size_t count) {
    constexpr float log2e = 1.44269504f;
    // ln 2 = ln2_hi + ln2_lo with ln2_hi exact in 12 bits: k ln2_hi is exact for |k| < 2^11.
    constexpr float ln2_hi = 0.693359375f;
    constexpr float ln2_lo = -2.12194440e-4f;
    // Adding 1.5 * 2^23 rounds to an integer and leaves it in the low mantissa bits.
    constexpr float shifter = 0x1.8p23f;
    // 1/m!, m = 7 .. 2: the remainder r^8/8! is below 6e-9 for |r| <= ln2/2.
    constexpr float c7 = 1.0f / 5040.0f, c6 = 1.0f / 720.0f, c5 = 1.0f / 120.0f, c4 = 1.0f / 24.0f,
                    c3 = 1.0f / 6.0f, c2 = 0.5f;
    // Below this, exp(x) is subnormal in float: flushed to 0 (subnormals are slow in GEMMs).
    constexpr float lowest = -87.0f;
#if defined(__FMA__)
    auto madd = [](float a, float b, float c) { return std::fma(a, b, c); };
#else
    auto madd = [](float a, float b, float c) { return a * b + c; };
#endif
    for (std::size_t i = 0; i < count; ++i) {
        const float x = values[i];
        const float clamped = std::min(std::max(x, lowest), 88.0f);
        const float shifted = madd(clamped, log2e, shifter);
        const float k = shifted - shifter;
        float r = clamped - k * ln2_hi;
        r = r - k * ln2_lo;
        float p = madd(c7, r, c6);
        p = madd(p, r, c5);
        p = madd(p, r, c4);
        p = madd(p, r, c3);
        p = madd(p, r, c2);
        p = madd(p, r, 1.0f);
        p = madd(p, r, 1.0f);
        // 2^k: k + 127 (in [2, 254] here) into the exponent field.
        const std::uint32_t bits = (std::bit_cast<std::uint32_t>(shifted) + 127) << 23;
        const float result = p * std::bit_cast<float>(bits);
        values[i] = x < lowest ? 0.0f : result;
    }
}

void exp_nonpositive_in_place(float* values, std::size_t count) {
    std::size_t i = 0;
#if defined(__AVX512F__)
    constexpr std::size_t lanes = sizeof(kernel::float_group_vector) / sizeof(float);
    for (; i + 4 * lanes <= count; i += 4 * lanes) {
        kernel::float_group_vector x[4];
        std::memcpy(&x, values + i, sizeof x);
        kernel::exp_groups_nonpositive(x);
        std::memcpy(values + i, &x, sizeof x);
    }
#endif
    exp_in_place(values + i, count - i);
}

} // namespace detail

} // namespace nadyn
