#pragma once
// The single-precision side of the head loop (--precision float, src/kernel/float.cpp): the
// tokens and a head's q, k, v in float for the general path, the heads' float sum added to
// the double result at the end. Heads with Q = K take the symmetric path's float tiles
// instead (src/kernel/symmetric.hpp).
#include "general.hpp"

#include "nadyn/weights.hpp"

namespace nadyn::kernel {

// The float path's buffers (grown on first use, reused across calls).
struct single_workspace {
    detail::row_major_matrix<float> tokens;                // theta in float, n x d
    detail::row_major_matrix<float> queries, keys, values; // one head's, n x d
    detail::row_major_matrix<float> weight;                // one head's Q, K or V, d x d
    detail::row_major_matrix<float> result;                // the heads' sum of A, n x d
    general_workspace<float> general;
};

// Converts the tokens to float and clears the heads' sum.
void begin_single(single_workspace& work, const call_shape& shape, const double* theta);
// Adds one head's attention through the general path in float to the heads' sum; `shaped`
// holds its operands in double while QKV-Norm or noise shapes them.
void add_head_single(single_workspace& work, head_operands& shaped, const call_shape& shape,
                     const double* theta, const attention_head& head,
                     const attention_options& options);
// out += the heads' sum, in double.
void end_single(single_workspace& work, const call_shape& shape, double* out);

} // namespace nadyn::kernel
