#pragma once
// One call of the attention kernel as every path sees it (src/model/kernel/): its shape and rows
// (call_shape), one head's operands (head_operands), and the shape tests that more than one
// path or caller reads.
#include "nadyn/model/detail/small_n_weights.hpp"
#include "nadyn/model/weights.hpp"
#include "small_n.hpp"

#include <Eigen/Core>

#include <cstddef>
#include <cstring>
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

// Whether two of a head's projections are the same (both empty, i.e. the identity, or equal
// bit for bit): Q = K lets the keys be the queries. A memcmp: it runs on every call for every
// head (shared_values_path), and Eigen's coefficient-wise comparison was 4% of the float
// sweep of examples/simuformer.toml. Bits, not values: -0 against 0 counts as different,
// which only sends a head down a path that does not assume Q = K.
inline bool same_projection(const matrix& a, const matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    return a.size() == 0 || a.data() == b.data() ||
           std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(double)) ==
               0;
}

// s when m = s I with s != 0 (V = I / heads: the mean over heads of identity values),
// otherwise 0: m's bits against those of s I kept in `kept` (a memcmp; a loop of d^2
// compares cost half of the projection it saves).
inline double identity_multiple(const matrix& m, matrix& kept) {
    if (m.size() == 0 || m.rows() != m.cols()) return 0.0;
    const double s = m(0, 0);
    if (s == 0.0) return 0.0;
    if (kept.rows() != m.rows() || kept(0, 0) != s) kept = s * matrix::Identity(m.rows(), m.cols());
    return same_projection(kept, m) ? s : 0.0;
}

template <class Scalar>
using row_major_matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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
// maps are not identities, n x d: the operands every path reads (src/model/kernel/heads.cpp).
struct head_operands {
    matrix queries, keys, values;
    detail::small_n_weights maps;  // a few tokens: the heads' maps transposed, K^T Q
    detail::small_n_keys tokens_t; // a few tokens: the folded heads' keys, once per call
    // Heads summed before one value product (heads.cpp): each head's folded queries, and
    // pointers to them (the tokens for a head whose Q and K are identities).
    std::vector<matrix> head_queries;
    std::vector<const double*> query_rows;
    matrix scaled_identity; // s I for the last s the shared V was compared with
};

} // namespace nadyn::kernel
