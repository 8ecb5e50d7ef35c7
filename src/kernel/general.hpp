#pragma once
// The general path of the attention kernel, shared by the double and the float arithmetic
// (src/kernel/general.cpp, src/kernel/float.cpp): per block of query tokens one GEMM for the
// logits against the visible keys, a max-subtracted softmax per row, one GEMM with the
// values, added to the result. A block is one thread's work, so the result does not depend
// on the number of threads.
#include "nadyn/attention.hpp"
#include "nadyn/detail/parallel.hpp"
#include "nadyn/detail/small_n_weights.hpp"
#include "nadyn/weights.hpp"
#include "small_n.hpp"

#include <Eigen/Core>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace nadyn::detail {

// Below about this many pair operations (n^2 (d + 16): products plus the exponential) a
// call runs on one thread: a few tens of microseconds gain little from a second thread,
// and a parallel region costs microseconds, or a whole scheduler time slice when another
// process holds the other core.
inline bool worth_parallel(std::size_t n, std::size_t d) {
    constexpr double parallel_work = 4e6;
    return static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(d + 16) >
           parallel_work;
}

// Whether two of a head's projections are the same (both empty, i.e. the identity, or equal):
// Q = K lets the keys be the queries.
inline bool same_projection(const matrix& a, const matrix& b) {
    if (a.size() != b.size()) return false;
    return a.size() == 0 || a == b;
}

// About 4 MiB of logits per thread: large enough for GEMM efficiency, small enough that
// n = 65,536 needs 4 MiB (not 32 GiB) per thread.
inline std::size_t default_block(std::size_t n) {
    const std::size_t target =
        (std::size_t{4} << 20) / sizeof(double) / std::max<std::size_t>(n, 1);
    return std::clamp<std::size_t>(target, 16, 256);
}

template <class Scalar>
using row_major_matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct softmax_blocks_shape {
    std::size_t n, d, block;
    bool causal; // token k attends to j <= k only
    int threads; // OpenMP threads the blocks are dealt to (1: serial)
    // The query rows wanted, [first_row, end_row): blocks that touch none are skipped (the
    // others are computed whole, so a wanted row is bitwise what the full call gives).
    std::size_t first_row = 0, end_row = static_cast<std::size_t>(-1);
};

// result (n x d) += softmax(beta Q K^T) V for the n x d row-major queries, keys and values.
// `softmax_row(row, count)` turns the count logits beta <q_k, k_j> of a row into weights in
// place (max subtraction, exp, normalisation: the arithmetic's own reductions and exp).
// `logits` holds one block x n workspace per thread (grown here, reused across calls).
template <class Scalar, class SoftmaxRow>
void add_softmax_blocks(const Scalar* q_data, const Scalar* k_data, const Scalar* v_data,
                        Scalar beta, const softmax_blocks_shape& shape,
                        std::vector<row_major_matrix<Scalar>>& logits, Scalar* out,
                        const SoftmaxRow& softmax_row) {
    using const_map = Eigen::Map<const row_major_matrix<Scalar>>;
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    const auto block = static_cast<Eigen::Index>(shape.block);
    const const_map queries(q_data, n, d), keys(k_data, n, d), values(v_data, n, d);
    Eigen::Map<row_major_matrix<Scalar>> result(out, n, d);
    const auto threads = static_cast<std::size_t>(std::max(shape.threads, 1));
    if (logits.size() < threads) logits.resize(threads);
    const Eigen::Index blocks = (n + block - 1) / block;

    for_each_dynamic(static_cast<std::size_t>(blocks), shape.threads, [&](std::size_t item) {
        const auto b = static_cast<Eigen::Index>(item);
        const Eigen::Index first = b * block;
        const Eigen::Index rows = std::min(block, n - first);
        if (static_cast<std::size_t>(first + rows) <= shape.first_row ||
            static_cast<std::size_t>(first) >= shape.end_row)
            return;
        // Causal: no query in this block sees a key beyond the block's last token.
        const Eigen::Index cols = shape.causal ? first + rows : n;
        row_major_matrix<Scalar>& workspace =
            logits[static_cast<std::size_t>(omp_get_thread_num())];
        if (workspace.rows() < block || workspace.cols() < n) workspace.resize(block, n);
        auto s = workspace.topLeftCorner(rows, cols);
        s.noalias() = queries.middleRows(first, rows) * keys.topRows(cols).transpose();

        for (Eigen::Index i = 0; i < rows; ++i) {
            const Eigen::Index visible = shape.causal ? first + i + 1 : cols;
            const auto count = static_cast<std::size_t>(visible);
            Scalar* row = &s(i, 0);
            for (std::size_t j = 0; j < count; ++j)
                row[j] *= beta;
            softmax_row(row, count);
            for (Eigen::Index j = visible; j < cols; ++j)
                row[j] = Scalar(0);
        }
        result.middleRows(first, rows).noalias() += s * values.topRows(cols);
    });
}

} // namespace nadyn::detail

namespace nadyn::kernel {

// One call of the kernel (attention_kernel::compute_rows): its sizes and the query rows
// wanted, [first_row, end_row). Blocks and tiles that touch none of them are skipped.
struct call_shape {
    std::size_t n, d;
    std::size_t block; // the general path's query block
    std::size_t tile;  // the symmetric path's tile
    std::size_t first_row, end_row;
    // Whether the block or tile of `size` rows starting at `start` holds a wanted row.
    [[nodiscard]] bool wanted(std::size_t start, std::size_t size) const {
        return start < end_row && start + size > first_row;
    }
};

// One head's q, k and v in double, projected and/or shaped (QKV-Norm, norm noise) when its
// maps are not identities, n x d: the operands every path reads (src/kernel/heads.cpp).
struct head_operands {
    matrix queries, keys, values;
    detail::small_n_weights maps;  // a few tokens: the heads' maps transposed, K^T Q
    detail::small_n_keys tokens_t; // a few tokens: the folded heads' keys, once per call
};

// The general path's buffers in one arithmetic: one block x n matrix of logits per thread
// (grown on first use, reused across calls).
template <class Scalar> struct general_workspace {
    std::vector<detail::row_major_matrix<Scalar>> logits;
};

// out (n x d) += the head's attention through the general path (small n in double: the
// register path of src/kernel/small_n.hpp). entropy (n, or null): each row's attention
// entropy for a frame (attention_kernel::observe_next_call), when the path can give it;
// returns whether it did.
// keys_t (or null): the keys already transposed for the small-n loops (heads that share
// their keys).
bool add_general(general_workspace<double>& work, const call_shape& shape, const double* queries,
                 const double* keys, const double* values, const attention_options& options,
                 double* out, double* entropy = nullptr,
                 const detail::small_n_keys* keys_t = nullptr);
// The same in float (--precision float); the weights' denominators are summed in double.
void add_general(general_workspace<float>& work, const call_shape& shape, const float* queries,
                 const float* keys, const float* values, const attention_options& options,
                 float* out);

} // namespace nadyn::kernel
