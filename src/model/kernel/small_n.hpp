#pragma once
// The general path of the attention kernel for a few tokens (docs/model.md §1): one head's
//
//     A_k += sum_j softmax_j(beta <q_k, key_j>) v_j
//
// for n up to small_n_limit, without GEMMs. At n = 64, d = 16 a block's GEMMs are 64 x 16 x 64
// products, where Eigen spends more time packing operands than multiplying, so this path
// forms each query's logits against the keys held transposed (d x n: the inner loop runs over
// keys, one FMA per key and component, in registers), takes the max-subtracted softmax with
// the kernel's exp and sums the weighted values in the same pass. Same flops, no workspace
// beyond a few rows. Each row of A is computed alone, so a range of rows is bitwise what the
// full call gives them, and the path is serial (one run per thread in a sweep). Every run of
// such a shape takes it, alone or in a sweep.
#include "nadyn/model/detail/small_n_weights.hpp"
#include "nadyn/model/weights.hpp"

#include <cstddef>
#include <vector>

namespace nadyn::detail {

// Tokens up to which the general path takes the small-n loops (measured: at n = 128, d = 16
// Eigen's GEMMs are still slower than the loops; the logits row stays in L1 up to here).
inline constexpr std::size_t small_n_limit = 128;

// Whether the small-n loops take a head of n tokens in d dimensions.
[[nodiscard]] inline bool takes_small_n(std::size_t n, std::size_t d) {
    return n >= 1 && n <= small_n_limit && d >= 1 && d <= 64;
}

// out (n x d, row-major) += the head's attention for the query rows [first_row, end_row):
// queries, keys and values n x d row-major; causal: row k sees keys j <= k. The softmax
// weights (not the unnormalised ones: the caller keeps that kind on the blocked path).
// entropy (n values, or null): each row's attention entropy over log n, bitwise what
// attention_observables computes from the same queries and keys (a frame's observables
// taken from the step's own logits).
void add_small_n_attention(const double* queries, const double* keys, const double* values,
                           std::size_t n, std::size_t d, double beta, bool causal,
                           std::size_t first_row, std::size_t end_row, double* out,
                           double* entropy = nullptr);

// Keys held the way the logits loops read them: transposed, d x stride (n padded with zeros
// to whole chunks of keys). Heads whose keys are the same (every head with Q folded into K
// has the tokens as its keys) share one transposition per call instead of one each: at
// n = 64, d = 16 the strided copy cost a fifth of a head's logits.
struct small_n_keys {
    std::vector<double> columns;
    std::size_t n = 0, d = 0, stride = 0;
};
// keys (n x d, row-major; the shape must pass takes_small_n) transposed into `out`.
void transpose_small_n_keys(const double* keys, std::size_t n, std::size_t d, small_n_keys& out);
// add_small_n_attention() with the keys given transposed (their n and d those of the call),
// bitwise the same.
void add_small_n_attention(const double* queries, const small_n_keys& keys, const double* values,
                           std::size_t n, std::size_t d, double beta, bool causal,
                           std::size_t first_row, std::size_t end_row, double* out,
                           double* entropy = nullptr);

// Heads that share their keys and their values (the keys the tokens, Q folded into K; one V
// for all heads, as with identity values averaged over heads), summed before the value
// product:
//
//     out_k += value_scale sum_j (sum_h softmax_j(beta <q^h_k, key_j>)) v_j
//
// for the query rows [first_row, end_row): each head's normalised weights are added per row
// (in head order) and one product with the values follows, instead of one per head (the
// value product is d FMAs per weight, the addition one). queries: `heads` pointers to n x d
// row-major queries; entropy (heads x n values, head h's at h n, or null): each head's row
// entropies, bitwise those of add_small_n_attention(). Each row's arithmetic is that of a row
// alone, as above.
void add_small_n_shared_values(const double* const* queries, std::size_t heads,
                               const small_n_keys& keys, const double* values, double value_scale,
                               std::size_t n, std::size_t d, double beta, bool causal,
                               std::size_t first_row, std::size_t end_row, double* out,
                               double* entropy = nullptr);

// The logits beta <q_k, key_j> (j < n) of the query rows [first_row, first_row + rows) into
// logits (row-major, `leading` doubles per row), by the same loops: for the per-frame
// attention observables, whose GEMM at this size costs as much as the kernel's.
void small_n_logits(const double* queries, const double* keys, std::size_t n, std::size_t d,
                    double beta, std::size_t first_row, std::size_t rows, double* logits,
                    std::size_t leading);

// Whether small_n_project_transposed() takes tokens of this shape: n <= small_n_limit and d in
// {8, 16, 32, 64} (other shapes keep Eigen's product, whose GEMM at 64 x 16 x 16 is mostly
// packing).
[[nodiscard]] bool takes_small_n_projection(std::size_t n, std::size_t d);

// out (n x d, row-major, resized) = tokens M^T, the projection M theta_k of every token, with
// M given transposed (m_t: d x d row-major, row c holding M's column c), as small_n_weights
// keeps it; the shape must pass takes_small_n_projection().
void small_n_project_transposed(const double* tokens, std::size_t n, std::size_t d,
                                const double* m_t, matrix& out);

} // namespace nadyn::detail
