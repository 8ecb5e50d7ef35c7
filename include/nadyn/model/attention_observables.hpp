#pragma once
// The attention observables of one frame (docs/model.md §11), a pass of its own beside the
// kernel (same projections, QKV-Norm and norm-noise factors, see attention.hpp):
//
//   argmax_flips       fraction of tokens k whose most-attended key argmax_j w_kj differs
//                      between the noisy and the noiseless attention at the same state (ties
//                      go to the lowest index); 0 without norm noise. Mean over the heads.
//   attention_entropy  mean over tokens of the softmax row's entropy divided by log n,
//                      (-sum_j w_kj log w_kj) / log n = (log Z_k - sum_j w_kj l_kj) / log n:
//                      0 when each token attends to one key, 1 for uniform attention; 0 for
//                      n = 1. Of the attention the run uses (noisy with norm noise), mean over
//                      the heads.
//
// Rows in blocks (O(block x n) memory per thread, never n x n), each row by one thread, then
// sums in token order: the result does not depend on the number of threads.
#include "nadyn/model/attention.hpp"
#include "nadyn/model/detail/small_n_weights.hpp"
#include "nadyn/model/weights.hpp"

#include <cstddef>
#include <vector>

namespace nadyn {

struct attention_summary {
    double argmax_flips = 0.0;
    double attention_entropy = 0.0;
};

class attention_observables {
  public:
    attention_observables(std::size_t n, std::size_t d, std::size_t block = 0);

    // y: the n x d input the attention reads (directions, or r_k theta_k for no-norm);
    // weights with their norm-noise factors; options as the kernel's (beta, causal mask,
    // QKV-Norm, unit inputs, threads; the arithmetic is always double here).
    attention_summary compute(const double* y, const attention_weights& weights,
                              const attention_options& options);

  private:
    std::size_t m_n, m_d, m_block;
    matrix m_queries, m_keys;          // one head's noiseless q and key rows
    detail::small_n_weights m_weights; // a few tokens: the heads' maps, transposed or folded
    std::vector<matrix> m_logits;      // block x n per thread
    std::vector<double> m_flips;       // per token: 1 when the argmax moved
    std::vector<double> m_entropy;     // per token: the row's entropy / log n
};

} // namespace nadyn
