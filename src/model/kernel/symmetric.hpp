#pragma once
// The symmetric path (Q = K, src/model/kernel/symmetric.cpp): its tiling, fixed so that its sums
// do not depend on the thread count, and its buffers.
#include "call.hpp"

#include "nadyn/model/attention.hpp"

#include <cstddef>
#include <type_traits>
#include <vector>

namespace nadyn::kernel {

// Symmetric tiles of 128 x 128 (128 KiB, in L2 next to the operands): the three GEMMs of a
// tile are large enough for Eigen's kernels, and n = 1024 already gives 36 tiles to share.
constexpr std::size_t default_tile = 128;
// Lanes of the symmetric path: a fixed number (not the thread count, which must not change
// the sums); four keep two threads busy and cost four n x d accumulators.
constexpr std::size_t symmetric_lanes = 4;
// A spread of beta G_kk / 2 above this could let a_j = exp(h_j - max h) underflow.
constexpr double largest_shift_spread = 600.0;

// The operands and sums of the tiles in one arithmetic (float with --precision float).
template <class Scalar> struct symmetric_operands {
    // The queries the tiles read when they are not the head's own: d > 16 in float, n x d;
    // d <= 16 transposed, d x stride, then a zero row (src/model/kernel/small_d.hpp).
    detail::row_major_matrix<Scalar> queries;
    // a_j V theta_j: n x d; d <= 16 transposed, d x stride, then a_j.
    detail::row_major_matrix<Scalar> scaled_values;
    // d > 16: per thread a tile of E and room for its transpose (2 tile x tile).
    std::vector<detail::row_major_matrix<Scalar>> tiles;
    // d > 16: per lane, sum_j E_kj a_j V theta_j (n x d).
    std::vector<detail::row_major_matrix<Scalar>> lane_sums;
};

// Everything the symmetric path keeps between calls (grown on first use).
struct symmetric_workspace {
    std::vector<double> half_diagonal, key_weight; // h_j and a_j
    // d > 16: per lane, sum_j E_kj a_j (n), in double in both arithmetics.
    std::vector<std::vector<double>> lane_norms;
    // d > 16: per lane, which tiles' rows of its sums this call has zeroed.
    std::vector<std::vector<unsigned char>> lane_zeroed;
    // d <= 16: per lane, sum_j E_kj a_j V theta_j transposed, then sum_j E_kj a_j
    // ((d + 1) x stride), in double in both arithmetics.
    std::vector<detail::row_major_matrix<double>> small_lane_sums;
    symmetric_operands<double> in_double;
    symmetric_operands<float> in_float;

    template <class Scalar> symmetric_operands<Scalar>& operands() {
        if constexpr (std::is_same_v<Scalar, double>)
            return in_double;
        else
            return in_float;
    }
};

// out += the head's attention through the symmetric path (queries = keys), its tiles in
// Scalar (float with --precision float; h_k, a_k and the denominators in double either way):
// add_symmetric_tiles() GEMMs on tiles of E (any d; chosen for d > small_dimension),
// add_symmetric_small_d() register sub-blocks (d <= small_dimension, src/model/kernel/small_d.hpp).
// Each returns false (and does nothing) when the spread of the logits' diagonal is too large
// for the shared shift; the caller then takes the head through another path.
template <class Scalar>
bool add_symmetric_tiles(symmetric_workspace& work, const call_shape& shape, const double* queries,
                         const double* values, double beta, int threads, attention_kind kind,
                         double* out);
template <class Scalar>
bool add_symmetric_small_d(symmetric_workspace& work, const call_shape& shape,
                           const double* queries, const double* values, double beta, int threads,
                           attention_kind kind, double* out);

} // namespace nadyn::kernel
