#pragma once
// Reductions over a row of doubles for the kernel and the right-hand side
// (src/kernel/, src/system.cpp).
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

inline reduction_lanes load_lanes(const double* x) {
    reduction_lanes v;
    std::memcpy(&v, x, sizeof v);
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
