#pragma once
// The symmetric path for small d (d <= small_dimension, src/kernel/symmetric.cpp): instead
// of GEMMs with a depth of 3 (Eigen's kernels are built for much deeper products), each tile
// of E is taken in sub-blocks of group x group tokens held in SIMD registers, from the
// differences q_k - q_j to the exponentials to the sums, with the operands transposed
// (d x stride) so that every loop runs over whole groups of tokens. The loops for one
// dimension are a small_path, chosen once per call by small_path_for(d).
#include "exp.hpp"

#include <cstddef>

namespace nadyn::kernel {

// Below this dimension the symmetric path skips the GEMMs (Eigen's kernels are built for
// depths much larger than 3) for plain vector loops: add_tile_small().
constexpr std::size_t small_dimension = 16;

// n rounded up to whole groups: the stride of the transposed operands and sums.
inline std::size_t padded(std::size_t n) {
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

// Up to this many tokens, and within one tile, the symmetric path takes one pass
// (add_single_tile()): the set-up of lanes and tiles is a good part of a few dozen tokens.
constexpr std::size_t single_tile = 64;

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

// The loops compiled for d (dispatch_dimension(): 2, 3, 4 and 8 have their own).
const small_path& small_path_for(std::size_t d);

} // namespace nadyn::kernel
