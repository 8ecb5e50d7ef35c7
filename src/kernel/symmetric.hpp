#pragma once
// The symmetric path's tiling (src/kernel/symmetric.cpp), fixed so that its sums do not
// depend on the thread count.
#include <cstddef>

namespace nadyn::kernel {

// Symmetric tiles of 128 x 128 (128 KiB, in L2 next to the operands): the three GEMMs of a
// tile are large enough for Eigen's kernels, and n = 1024 already gives 36 tiles to share.
constexpr std::size_t default_tile = 128;
// Lanes of the symmetric path: a fixed number (not the thread count, which must not change
// the sums); four keep two threads busy and cost four n x d accumulators.
constexpr std::size_t symmetric_lanes = 4;
// A spread of beta G_kk / 2 above this could let a_j = exp(h_j - max h) underflow.
constexpr double largest_shift_spread = 600.0;

} // namespace nadyn::kernel
