#pragma once
// The lane reductions over a row (sums, dot products, maxima) of the kernel, the attention
// entropy and the right-hand side (src/model/kernel/, src/model/attention_entropy.cpp,
// src/model/system.cpp, src/model/norm.cpp): one set, so that every path reduces a row in the same
// fixed order.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>

namespace nadyn::detail {

// Reductions with eight partial sums in a fixed order, the same result on every call. The
// partial sums are a GCC vector (one AVX-512 register, two AVX2 or four SSE2 ones): as an
// array of eight doubles GCC kept them in memory in some callers and reduced every
// product with scalar adds. The tail (count mod 8) goes into lanes 0, 1, ... in order.
using reduction_lanes = double __attribute__((vector_size(8 * sizeof(double))));

inline constexpr std::size_t lane_count = 8;

// A GCC vector loaded from or stored to memory of its elements (any alignment): memcpy, which
// compiles to one unaligned vector move. Always inlined: a call would spill the vectors the
// small-d and small-n loops keep in registers.
template <class Vector, class Scalar>
[[gnu::always_inline]] inline void load(Vector& v, const Scalar* from) {
    std::memcpy(&v, from, sizeof v);
}

template <class Vector, class Scalar>
[[gnu::always_inline]] inline void store(Scalar* to, const Vector& v) {
    std::memcpy(to, &v, sizeof v);
}

[[gnu::always_inline]] inline reduction_lanes load_lanes(const double* x) {
    reduction_lanes v;
    load(v, x);
    return v;
}

inline double combine_sums(const reduction_lanes& part) {
    return ((part[0] + part[4]) + (part[1] + part[5])) +
           ((part[2] + part[6]) + (part[3] + part[7]));
}

inline double combine_maxima(const reduction_lanes& part) {
    return std::max(std::max(std::max(part[0], part[4]), std::max(part[1], part[5])),
                    std::max(std::max(part[2], part[6]), std::max(part[3], part[7])));
}

inline double sum_of(const double* x, std::size_t count) {
    reduction_lanes part = {};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        part += load_lanes(x + j);
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] += x[j];
    return combine_sums(part);
}

// The same sum of float values, each widened to double (the softmax denominators of the
// float path: a float sum of n terms would add an error growing with n to every weight).
inline double sum_of(const float* x, std::size_t count) {
    reduction_lanes part = {};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        for (std::size_t l = 0; l < 8; ++l)
            part[l] += static_cast<double>(x[j + l]);
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] += static_cast<double>(x[j]);
    return combine_sums(part);
}

// The sum in another fixed order: the whole lanes combined first, then the tail (count mod
// 8) added one value at a time (the small-n rows, src/model/kernel/small_n.cpp).
inline double sum_then_tail(const double* x, std::size_t count) {
    reduction_lanes part = {};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        part += load_lanes(x + j);
    double sum = combine_sums(part);
    for (; j < count; ++j)
        sum += x[j];
    return sum;
}

inline double dot_of(const double* x, const double* y, std::size_t count) {
    reduction_lanes part = {};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        part += load_lanes(x + j) * load_lanes(y + j);
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] += x[j] * y[j];
    return combine_sums(part);
}

// The largest entry; NaN entries are skipped (std::max(part, x) keeps part when x is NaN).
inline double max_of(const double* x, std::size_t count) {
    constexpr double lowest = -std::numeric_limits<double>::infinity();
    reduction_lanes part = {lowest, lowest, lowest, lowest, lowest, lowest, lowest, lowest};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8) {
        const reduction_lanes v = load_lanes(x + j);
        part = part < v ? v : part;
    }
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] = std::max(part[l], x[j]);
    return combine_maxima(part);
}

// The largest float entry, NaN entries skipped, in sixteen lanes (one AVX-512 register).
inline float max_of(const float* x, std::size_t count) {
    using float_lanes = float __attribute__((vector_size(16 * sizeof(float))));
    constexpr float lowest = -std::numeric_limits<float>::infinity();
    float_lanes part = float_lanes{} + lowest;
    std::size_t j = 0;
    for (; j + 16 <= count; j += 16) {
        float_lanes v;
        load(v, x + j);
        part = part < v ? v : part;
    }
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] = std::max(part[l], x[j]);
    float largest = lowest;
    for (std::size_t l = 0; l < 16; ++l)
        largest = std::max(largest, part[l]);
    return largest;
}

// -min(x), the largest of -x_j. Like max_of it skips NaN entries: a NaN token still makes
// the kernel's output NaN, through its exponentials.
inline double max_of_negated(const double* x, std::size_t count) {
    constexpr double lowest = -std::numeric_limits<double>::infinity();
    reduction_lanes part = {lowest, lowest, lowest, lowest, lowest, lowest, lowest, lowest};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8) {
        const reduction_lanes v = -load_lanes(x + j);
        part = part < v ? v : part;
    }
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] = std::max(part[l], -x[j]);
    return combine_maxima(part);
}

} // namespace nadyn::detail
