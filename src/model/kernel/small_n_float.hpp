#pragma once
// The small-n loops in single precision (path single_precision_small_n, --precision float):
// one head's
//
//     A_k += sum_j softmax_j(beta <q_k, key_j>) v_j
//
// for n up to small_n_limit (src/model/kernel/small_n.hpp), in float: the logits by FMA loops over
// the keys held transposed (sixteen keys per AVX-512 register against eight doubles), the
// float exp on whole registers, the weighted values summed in registers. As on the other float
// paths each row's softmax denominator is summed in double (from float partial sums of at
// most four exponentials per lane, one per 64-key block) and the result is added to the
// heads' float sum (single_workspace::result). At n = 64, d = 16 the float general path
// spends most of its time packing Eigen's 64 x 16 x 64 GEMMs; these loops
// do the same flops without packing. Each row of A is computed alone (two rows share loads
// but not arithmetic), so a range of rows is bitwise what the full call gives them. Serial,
// like the double small-n path (one run per thread in a sweep).
#include "call.hpp"

#include <cstddef>
#include <vector>

namespace nadyn::kernel {

// Keys in float, transposed: d x stride, n padded with zeros to whole chunks of keys. Heads
// whose keys are the tokens (Q folded into K) share one transposition per call.
struct small_n_float_keys {
    std::vector<float> columns;
    std::size_t n = 0, d = 0, stride = 0;
};

// keys (n x d, row-major; takes_small_n(n, d)) transposed into `out`.
void transpose_small_n_float_keys(const float* keys, std::size_t n, std::size_t d,
                                  small_n_float_keys& out);

// out (float, n x d, row-major) += the head's softmax attention for the query rows
// [first_row, end_row), the values multiplied by value_scale; queries and values n x d
// row-major, keys as transposed above (their n and d those of the call); causal: row k sees
// keys j <= k.
void add_small_n_float_attention(const float* queries, const small_n_float_keys& keys,
                                 const float* values, float value_scale, std::size_t n,
                                 std::size_t d, double beta, bool causal, std::size_t first_row,
                                 std::size_t end_row, float* out);

// Heads that share their keys (the tokens, Q folded into K) and their values, summed before
// the value product: out_k += value_scale sum_j (sum_h softmax_j(beta <q^h_k, key_j>)) v_j for
// the query rows [first_row, end_row), each head's normalised weights added per row in head
// order (in float; each denominator summed in double as above), then one product with the
// values instead of one per head. queries: `heads` pointers to n x d row-major queries.
void add_small_n_float_shared_values(const float* const* queries, std::size_t heads,
                                     const small_n_float_keys& keys, const float* values,
                                     float value_scale, std::size_t n, std::size_t d, double beta,
                                     bool causal, std::size_t first_row, std::size_t end_row,
                                     float* out);

// out (n x d, resized) = tokens M^T in float, M given transposed (m_t: d x d row-major, as
// detail::small_n_weights keeps it in float).
void project_small_n_float(const float* tokens, std::size_t n, std::size_t d, const float* m_t,
                           detail::row_major_matrix<float>& out);

} // namespace nadyn::kernel
