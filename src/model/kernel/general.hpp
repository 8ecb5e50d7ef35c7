#pragma once
// The general path of the attention kernel, the definition itself, in double and in float
// (src/model/kernel/general.cpp): per block of query tokens one GEMM for the logits against the
// visible keys, a max-subtracted softmax per row, one GEMM with the values, added to the
// result. A block is one thread's work, so the result does not depend on the number of
// threads.
#include "call.hpp"

#include "nadyn/model/attention.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace nadyn::detail {

// About 4 MiB of logits per thread: large enough for GEMM efficiency, small enough that
// n = 65,536 needs 4 MiB (not 32 GiB) per thread.
inline std::size_t default_block(std::size_t n) {
    const std::size_t target =
        (std::size_t{4} << 20) / sizeof(double) / std::max<std::size_t>(n, 1);
    return std::clamp<std::size_t>(target, 16, 256);
}

} // namespace nadyn::detail

namespace nadyn::kernel {

// The general path's buffers in one arithmetic: one block x n matrix of logits per thread, and
// one of the heads' summed weights for add_general_shared_values() (grown on first use, reused
// across calls).
template <class Scalar> struct general_workspace {
    std::vector<detail::row_major_matrix<Scalar>> logits;
    std::vector<detail::row_major_matrix<Scalar>> summed;
};

// out (n x d) += the head's attention through the general path, in double.
void add_general(general_workspace<double>& work, const call_shape& shape, const double* queries,
                 const double* keys, const double* values, const attention_options& options,
                 double* out);
// The same in float (--precision float); the weights' denominators are summed in double.
void add_general(general_workspace<float>& work, const call_shape& shape, const float* queries,
                 const float* keys, const float* values, const attention_options& options,
                 float* out);

// out (n x d) += value_scale (sum_h weights(beta Q_h K^T)) V: `heads` heads that share their
// keys (the tokens, each head's Q folded into K) and their values, each row's normalised
// weights summed over the heads in head order before one product with the values (issue 38:
// H value products become one). The same as add_general() per head up to rounding.
void add_general_shared_values(general_workspace<double>& work, const call_shape& shape,
                               const double* const* queries, std::size_t heads, const double* keys,
                               const double* values, double value_scale,
                               const attention_options& options, double* out);
void add_general_shared_values(general_workspace<float>& work, const call_shape& shape,
                               const float* const* queries, std::size_t heads, const float* keys,
                               const float* values, float value_scale,
                               const attention_options& options, float* out);

} // namespace nadyn::kernel
