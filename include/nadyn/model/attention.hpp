#pragma once
// The softmax self-attention kernel (docs/model.md §1):
//
//     w_kj = exp(beta <Q theta_k, K theta_j>) / sum_l exp(beta <Q theta_k, K theta_l>)
//     A_k  = sum_j w_kj V theta_j        (summed over heads)
//
// or, with attention_kind::unnormalized (docs/model.md §8), the weights without the softmax
// denominator, averaged over the n tokens (also under the causal mask, which drops terms):
//
//     w_kj = exp(beta <Q theta_k, K theta_j>) / n
//
// Every path computes both; the unnormalised weights are formed as exp(x - max) exp(max) / n,
// so that an overflow is an honest Inf (or NaN) in A_k, never a wrapped exponent.
// With QKV-Norm or norm noise (docs/model.md §11) each head's q, key and v rows are
// normalised and/or scaled after the projection (every path; the symmetric one only while
// queries and keys stay equal, i.e. without noise).
//
// Three families of paths, built from GEMMs on blocks (Eigen) or, for the symmetric path at d <=
// 16, SIMD sub-blocks held in registers, and a vectorised exp:
//
// - general: per block of query tokens one GEMM for the logits against all keys, a
//   max-subtracted softmax per row, one GEMM with the values. Memory O(block x n) per
//   thread.
// - symmetric (Q = K, no causal mask, beta >= 0): the logits G_kj = <q_k, q_j> are
//   symmetric, and so is E_kj = exp(beta G_kj - h_k - h_j) with h_k = beta G_kk / 2,
//   i.e. E_kj = exp(-beta/2 ‖q_k - q_j‖^2) in (0, 1], E_kk = 1. With a_j = exp(h_j - max h)
//
//       w_kj = E_kj a_j / sum_l E_kl a_l,
//
//   so each tile (I, J), J <= I, of E is computed once and used twice: A_I += E_IJ (a V)_J
//   and A_J += E_IJ^T (a V)_I. That halves the exponentials and saves a quarter of the
//   flops. The denominator holds E_kk a_k = a_k, so nothing overflows or vanishes as long
//   as the spread of h is moderate (checked; the general path is taken otherwise).
//   Unnormalised weights need no denominator: exp(beta G_kj) = E_kj a_j exp(h_k + max h), so
//   A_k = exp(h_k + max h) / n * sum_j E_kj a_j V theta_j from the same tiles.
//
// - single precision (--precision float): the general path with float logits, exp and GEMMs
//   (the softmax denominators summed in double), for a few tokens (n <= 128, d <= 64,
//   softmax) the small-n loops in float (Q folded into K, sixteen floats per AVX-512
//   register), and for Q = K heads the symmetric path in
//   float (its GEMM tiles, or for d <= 16 its register tiles of 16 tokens per SIMD group; h,
//   a and the denominators in double); the result is written to out in double. Relative
//   error about beta * 1e-7.
//
// Each path has its own file and buffers in src/model/kernel/ (ARCHITECTURE.md, "The attention
// kernel"): choose.cpp (the one choice of a head's path, attention_kernel::path), heads.cpp
// (the loop over heads, both arithmetics), general.cpp, small_n.cpp (the general path's
// register loops for a few tokens), small_n_float.cpp (the same in float), symmetric.cpp,
// small_d.cpp (the symmetric tiles for d <= 16, double and float), exp.cpp, float.cpp,
// reference.cpp.
//
// All are deterministic and independent of the number of threads (bitwise): a general
// block is one thread's work; the symmetric tiles are dealt to a fixed number of lanes,
// each lane sums its tiles in a fixed order into its own accumulator, and the lanes are
// added in lane order. After the first call, compute() allocates nothing of its own.
#include "nadyn/model/precision.hpp"
#include "nadyn/model/weights.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

namespace kernel {
struct workspaces;
} // namespace kernel

// How a query's weights over the keys are normalised (--attention): the softmax (divided by
// the row's sum) or unnormalised (divided by n), docs/model.md §8.
enum class attention_kind { softmax, unnormalized };

// "softmax" | "unnormalized"; input_error naming the valid choices otherwise.
attention_kind parse_attention_kind(std::string_view name);
std::string_view to_string(attention_kind kind);
// "softmax, unnormalized" for messages and --help.
std::string attention_kind_names();

struct attention_options {
    double beta = 1.0;
    bool causal = false; // token k attends to j <= k only
    // single_precision: the kernel in float (src/model/kernel/float.cpp, precision.hpp).
    precision arithmetic = precision::double_precision;
    // OpenMP threads of this call (0: omp_get_max_threads() now). A num_threads clause on the
    // kernel's own loops: the process's setting is left alone. The result does not depend on it.
    int threads = 0;
    attention_kind kind = attention_kind::softmax; // softmax or unnormalised weights
    // QKV-Norm (docs/model.md §11): q_k, key_j and v_j are normalised per token and head after
    // the linear maps, q_k = Q y_k / ‖Q y_k‖ etc., before beta multiplies the logits. Norm-noise
    // factors come with the weights (attention_head::query_norm, ...) and multiply the norms
    // after it.
    bool qkv_norm = false;
    // The inputs are unit vectors (the directions): QKV-Norm skips identity maps, which would
    // leave them unchanged mathematically.
    bool unit_inputs = false;
    // QKV-Norm: the norm of each normalised value, 1, or the head's share 1/H when the heads
    // are averaged (combine_heads folds the 1/H into V, which the normalisation would undo).
    double value_norm = 1.0;
};

// The flops of one evaluation of the attention of `heads` heads of n tokens in d dimensions by
// the algorithm the kernel runs (docs/performance.md, "The rooflines"; bench/ensemble.py's
// attention_flops(), the benchmarks' rooflines, is the same count): per head the logits,
// 2 n^2 d, against the tokens as keys, and the queries' projection by K^T Q, 2 n d^2 (Q folded
// into K; none without Q and K); the value product, 2 n^2 d, and the values' projection,
// 2 n d^2 (none when V = s I), per head, or once when the heads' weights are summed before one
// product (attention_kernel::summed_values()). So shared values V = s I: H (2 n^2 d + 2 n d^2)
// + 2 n^2 d; each head its own V: H (4 n^2 d + 4 n d^2). The softmax is not counted.
double attention_flops(std::size_t n, std::size_t d, std::size_t heads, bool summed_values,
                       bool value_projection = true, bool query_projection = true);

class attention_kernel {
  public:
    // block = 0 picks block sizes from n and d; a given block is the query block of the
    // general path and the tile of the symmetric path (tests use it to cross boundaries).
    attention_kernel(std::size_t n, std::size_t d, std::size_t block = 0);
    ~attention_kernel();
    attention_kernel(attention_kernel&&) noexcept;
    attention_kernel& operator=(attention_kernel&&) noexcept;
    // A copy has the same sizes and fresh (empty) buffers.
    attention_kernel(const attention_kernel& other);
    attention_kernel& operator=(const attention_kernel& other);

    // theta and out are n x d row-major; out receives A.
    void compute(const double* theta, const attention_weights& weights,
                 const attention_options& options, double* out);
    // Rows first .. first + count - 1 of A only, each bitwise what compute() gives it: the
    // same blocks and tiles summed in the same order, those that touch none of the rows
    // skipped. The other rows of out are left unspecified (a run whose tokens are shared
    // among processes fills them in from the others, token_exchange.hpp).
    void compute_rows(const double* theta, const attention_weights& weights,
                      const attention_options& options, std::size_t first, std::size_t count,
                      double* out);

    [[nodiscard]] std::size_t n() const { return m_n; }
    [[nodiscard]] std::size_t d() const { return m_d; }
    [[nodiscard]] std::size_t block() const { return m_block; }
    [[nodiscard]] std::size_t tile() const { return m_tile; }

    // The concrete paths of the kernel (src/model/kernel/, ARCHITECTURE.md "The attention kernel").
    // kernel::choose_path() (src/model/kernel/choose.hpp) picks one per head from the call's shape
    // and options: the symmetric ones for a head with Q = K (no noise on q or k, no causal
    // mask, beta >= 0), the small-d tiles for d <= 16, small_n for a few tokens (n <= 128,
    // d <= 64, softmax), the single_precision ones with --precision float (among them
    // single_precision_small_n for the same few tokens).
    enum class path {
        general,                           // blocked GEMMs and row softmax, double
        small_n,                           // the general path's register loops for a few tokens
        symmetric,                         // Q = K: GEMM tiles of E, double
        symmetric_small_d,                 // Q = K, d <= 16: register tiles of E, double
        single_precision,                  // the general path in float
        single_precision_small_n,          // the small-n register loops in float
        single_precision_symmetric,        // Q = K: GEMM tiles of E in float
        single_precision_symmetric_small_d // Q = K, d <= 16: register tiles of E in float
    };
    // The path the last head of the last compute() took (for tests and benchmarks). A
    // symmetric head whose spread of beta |q_k|^2 / 2 is too large for the shared shift is
    // declined at run time and reported as the path that took it instead.
    [[nodiscard]] path last_path() const { return m_last_path; }
    // Every head of the following calls takes `forced` instead of the chosen path (nullopt:
    // back to the choice), for tests comparing each path with reference_attention and for
    // benchmarks; the result is the same up to round-off. Throws std::invalid_argument from
    // compute() when the forced path cannot take a head (its arithmetic, its shape, or the
    // symmetric paths' Q = K, causal and beta conditions), so that a forced path never
    // silently becomes another; only the symmetric paths' run-time decline (above) does.
    void force_path(std::optional<path> forced) { m_forced_path = forced; }
    [[nodiscard]] std::optional<path> forced_path() const { return m_forced_path; }

    // Heads that share their values (every head's V the same, no value noise: identity values,
    // or one V averaged with head_combine mean) have
    //
    //     A_k = sum_j (sum_h w^h_kj) V theta_j,
    //
    // one value product for all heads. When every head takes the same small-n or general path
    // (double or float; not the symmetric paths of Q = K) with Q folded into K (no QKV-Norm or
    // noise on q or k), the kernel sums each row's normalised weights over the heads and
    // multiplies the sum by the values once, instead of once per head (the same up to
    // rounding). summed_values() says whether the last call did;
    // sum_shared_values(false) turns it off (one value product per head), for the tests and
    // benchmarks that compare both.
    [[nodiscard]] bool summed_values() const { return m_summed_values; }
    void sum_shared_values(bool on) { m_sum_shared_values = on; }

    // The flops of one compute() with these weights and options: attention_flops() (above)
    // with the heads summed where compute() would sum them (summed_values()), the queries'
    // projection where a head has Q or K, the values' where a head's V is not s I.
    [[nodiscard]] double flops(const attention_weights& weights,
                               const attention_options& options) const;

    // A frame's attention entropy from the frame's own evaluation (attention_observables.hpp):
    // the next compute() also takes each row's entropy from its logits, bitwise what
    // attention_observables gives for the same input, where its path allows (a few tokens on
    // the general path, the softmax in double, no norm noise, all rows); observed_entropy()
    // then holds the mean over tokens and heads, else nothing (the caller runs the
    // observables' own pass). Saves that pass's projections, logits and exponentials.
    void observe_next_call() { m_observe_next = true; }
    [[nodiscard]] std::optional<double> observed_entropy() const { return m_observed_entropy; }

  private:
    std::size_t m_n, m_d, m_block, m_tile;
    path m_last_path = path::general;
    std::optional<path> m_forced_path;        // force_path()
    bool m_observe_next = false;              // observe_next_call()
    bool m_sum_shared_values = true;          // sum_shared_values()
    bool m_summed_values = false;             // summed_values()
    std::optional<double> m_observed_entropy; // of the last call asked to observe
    // Each path's buffers, declared with the path in src/model/kernel/ (heads.hpp lists them).
    std::unique_ptr<kernel::workspaces> m_work;
};

// The path's name as in the enumerator ("general", "small_n", "symmetric_small_d", ...).
std::string_view to_string(attention_kernel::path p);

// The plain O(n^2 d) definition, one pair at a time: the reference the fast kernel is
// tested against.
void reference_attention(const double* theta, std::size_t n, std::size_t d,
                         const attention_weights& weights, const attention_options& options,
                         double* out);

namespace detail {

// exp(x) in place for every x <= 709, vectorised (compiled for the build's SIMD width).
// Portable: Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, degree-11 minimax polynomial
// (truncation below 2e-17), 2^k from the exponent bits. AVX-512 builds take blocks of 32
// values through a table of 2^(j/16) held in two registers and a degree-6 polynomial
// (truncation below 1.4e-17), the rest through the portable loop. Relative error within a few
// 1e-16 of std::exp; x < -708 gives 0 (no subnormals reach the GEMMs); NaN stays NaN;
// exp(0) = 1 exactly.
void exp_in_place(double* values, std::size_t count);
// The same in single precision for every x <= 88: degree-7 Taylor polynomial (truncation
// below 6e-9), relative error within 4 float ulps of exp; x < -87 gives 0 (no subnormals).
void exp_in_place(float* values, std::size_t count);
// exp_in_place()'s values, bit for bit, for x <= 0 (a softmax's logits minus their largest):
// AVX-512 builds take whole groups of 64 through the float small-n softmax rows' own loop,
// which needs no clamps and scales by 2^k with scalef; the rest, and other builds, through
// exp_in_place(). The exponential whose rate nadyn-bench exp reports in float.
void exp_nonpositive_in_place(float* values, std::size_t count);

} // namespace detail

} // namespace nadyn
