#pragma once
// The symmetric path for small d (d <= small_dimension, src/model/kernel/symmetric.cpp): instead
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

// The SIMD group of a small-d tile in Scalar: a whole number of SIMD vectors (one AVX-512,
// two AVX2 or four SSE2 vectors: 8 doubles or 16 floats), so that no loop over tokens has a
// scalar remainder. The vector is a GCC/Clang vector that the compiler splits into the
// target's registers (auto-vectorisation of the sub-block loops is fragile: GCC vectorises
// them across the components instead, through the stack).
template <class Scalar> struct simd;
template <> struct simd<double> {
    static constexpr std::size_t group = kernel::group;
    using vector = group_vector;
};
template <> struct simd<float> {
    static constexpr std::size_t group = 16;
    using vector = float_group_vector;
};

// n rounded up to whole groups: the stride of the transposed operands and sums.
template <class Scalar> std::size_t padded(std::size_t n) {
    constexpr std::size_t group = simd<Scalar>::group;
    return (n + group - 1) / group * group;
}

// The operands of the tiles in Scalar (double, or float for --precision float); the sums
// they are added to are in double either way (a float sum of n terms would lose digits
// growing with n), and so is the quotient A_k.
template <class Scalar> struct small_operands {
    std::size_t d, stride;
    Scalar minus_half_beta;
    // d x stride, then a zero row: a group read from any token stays inside the matrix.
    const Scalar* queries_t;
    // (d + 1) x stride: a_j V theta_j transposed, then a_j (the norm's weights).
    const Scalar* weighted_t;
};

// Up to this many tokens, and within one tile, the symmetric path takes one pass
// (add_single_tile()): the set-up of lanes and tiles is a good part of a few dozen tokens.
constexpr std::size_t single_tile = 64;

// The small-d symmetric path's loops, for one dimension and arithmetic. The queries, values
// and weights a_j come in double, h_k and the sums (d + 1) x stride are double.
template <class Scalar> struct small_path {
    void (*transpose_queries)(std::size_t, std::size_t, std::size_t, const double*, double, Scalar*,
                              double*);
    void (*weight_values)(std::size_t, std::size_t, std::size_t, const double*, const double*,
                          Scalar*);
    void (*add_tile)(const small_operands<Scalar>&, std::size_t, std::size_t, std::size_t,
                     std::size_t, double*);
    void (*add_quotient)(std::size_t, std::size_t, std::size_t, const double*, double*, double*);
    void (*add_single_tile)(const small_operands<Scalar>&, std::size_t, double*, const double*,
                            Scalar*, double*);
};

// The loops compiled for d (small_dimensions in src/model/kernel/dimension.hpp: 2, 3, 4 and 8 have
// their own), for Scalar = double or float.
template <class Scalar> const small_path<Scalar>& small_path_for(std::size_t d);

} // namespace nadyn::kernel
