#pragma once
// The softmax self-attention kernel (MODEL.md section 1):
//
//     w_kj = exp(beta <Q theta_k, K theta_j>) / sum_l exp(beta <Q theta_k, K theta_l>)
//     A_k  = sum_j w_kj V theta_j        (summed over heads)
//
// Computed in blocks of query tokens: per block one GEMM for the logits against all keys,
// a max-subtracted softmax, one GEMM with the values; OpenMP-parallel over blocks. Memory
// is O(block x n) per thread, never an n x n matrix once n exceeds one block. Each block
// is computed by one thread with a fixed block size, so the result does not depend on the
// number of threads (bitwise).
#include "nadyn/weights.hpp"

#include <cstddef>
#include <vector>

namespace nadyn {

struct attention_options {
    double beta = 1.0;
    bool causal = false; // token k attends to j <= k only
};

class attention_kernel {
  public:
    // block = 0 picks a block size from n (about 4 MiB of logits per thread).
    attention_kernel(std::size_t n, std::size_t d, std::size_t block = 0);

    // theta and out are n x d row-major; out receives A.
    void compute(const double* theta, const attention_weights& weights,
                 const attention_options& options, double* out);

    [[nodiscard]] std::size_t n() const { return m_n; }
    [[nodiscard]] std::size_t d() const { return m_d; }
    [[nodiscard]] std::size_t block() const { return m_block; }

  private:
    std::size_t m_n, m_d, m_block;
    matrix m_queries, m_keys, m_values; // projected tokens of one head (when not identity)
    std::vector<matrix> m_logits;       // one block x n workspace per thread
};

// The plain O(n^2 d) definition, one pair at a time: the reference the fast kernel is
// tested against.
void reference_attention(const double* theta, std::size_t n, std::size_t d,
                         const attention_weights& weights, const attention_options& options,
                         double* out);

} // namespace nadyn
