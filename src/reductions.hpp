#pragma once
// Reductions over a row of doubles for the kernel and the right-hand side
// (src/kernel/, src/system.cpp).
#include <algorithm>
#include <cstddef>
#include <limits>

namespace nadyn::detail {

// Reductions with eight partial sums in a fixed order: vectorisable without reassociating
// flags, and the same result on every call.
inline double sum_of(const double* x, std::size_t count) {
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

inline double dot_of(const double* x, const double* y, std::size_t count) {
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

inline double max_of(const double* x, std::size_t count) {
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
inline double max_of_negated(const double* x, std::size_t count) {
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

} // namespace nadyn::detail
