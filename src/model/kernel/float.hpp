#pragma once
// The single-precision side of the head loop (--precision float, src/model/kernel/float.cpp): the
// tokens and a head's q, k, v in float for the general path or, for a few tokens, the float
// small-n loops (src/model/kernel/small_n_float.hpp), the heads' float sum added to the double
// result at the end. Heads with Q = K take the symmetric path's float tiles instead
// (src/model/kernel/symmetric.hpp).
#include "general.hpp"
#include "small_n_float.hpp"

#include "nadyn/model/weights.hpp"

namespace nadyn::kernel {

// The float path's buffers (grown on first use, reused across calls).
struct single_workspace {
    detail::row_major_matrix<float> tokens;                // theta in float, n x d
    detail::row_major_matrix<float> queries, keys, values; // one head's, n x d
    detail::row_major_matrix<float> weight;                // one head's Q, K or V, d x d
    detail::row_major_matrix<float> result;                // the heads' sum of A, n x d
    general_workspace<float> general;
    // The small-n loops: the tokens transposed once per call (the keys of every head with Q
    // folded into K), one head's own keys transposed.
    small_n_float_keys tokens_t, keys_t;
    bool tokens_transposed = false; // tokens_t holds this call's tokens
    matrix scaled_identity;         // s I for the last s a head's V was compared with
    // Heads summed before one value product: each head's folded queries and pointers to them.
    std::vector<detail::row_major_matrix<float>> head_queries;
    std::vector<const float*> query_rows;
};

// Converts the tokens to float and clears the heads' sum.
void begin_single(single_workspace& work, const call_shape& shape, const double* theta);
// Adds one head's attention through the general path in float to the heads' sum (h the head's
// index in the weights: with both Q and K given, Q is folded into K from shaped.maps);
// `shaped` holds its operands in double while QKV-Norm or noise shapes them.
void add_head_single(single_workspace& work, head_operands& shaped, std::size_t h,
                     const call_shape& shape, const double* theta, const attention_head& head,
                     const attention_options& options);
// The same through the small-n loops in float (path single_precision_small_n, h the head's
// index in the weights): Q folded into K (queries = tokens (Q^T K) from shaped.maps, the keys
// the tokens) unless QKV-Norm or noise shapes q or k, whose heads have their q, k, v as on
// the general path above, the keys transposed per head.
void add_head_single_small_n(single_workspace& work, head_operands& shaped, std::size_t h,
                             const call_shape& shape, const double* theta,
                             const attention_head& head, const attention_options& options);
// Every head through the small-n loops in float with their weights summed before one value
// product (heads.cpp decides that they share their values and fold Q into K): each head's
// queries projected by K^T Q, the keys the tokens, head 0's values for all.
void add_heads_single_small_n_shared_values(single_workspace& work, head_operands& shaped,
                                            const call_shape& shape, const double* theta,
                                            const attention_weights& weights,
                                            const attention_options& options);
// The same through the general path's blocks in float (n > 128): each head's queries the tokens
// projected by K^T Q in float, the keys the tokens, the heads' weights summed before one value
// product (add_general_shared_values()).
void add_heads_single_shared_values(single_workspace& work, head_operands& shaped,
                                    const call_shape& shape, const double* theta,
                                    const attention_weights& weights,
                                    const attention_options& options);
// out += the heads' sum, in double.
void end_single(single_workspace& work, const call_shape& shape, double* out);

} // namespace nadyn::kernel
