#pragma once
// One softmax row's attention entropy (the per-frame observable, include/nadyn/
// attention_observables.hpp), shared by the observables' own pass and by the kernel, which
// takes it from its own logits at a frame (src/model/kernel/small_n.cpp): one compiled copy of
// the arithmetic, so that the two agree bit for bit.
#include "reductions.hpp"

#include <cstddef>

namespace nadyn::detail {

// The first index of the largest of row[0..count) (ties to the lowest index; NaN entries
// skipped, 0 when every entry is NaN).
std::size_t first_argmax(const double* row, std::size_t count);
// The first index j < count with row[j] == value, else 0 (first_argmax() with the largest
// already known).
std::size_t first_index_of(const double* row, std::size_t count, double value);

// The row's entropy over log n (log_n = std::log(n), n >= 2), with the logits row[0..visible)
// (beta included) and the index `top` of their largest: (log Z - sum_j w_j s_j) / log n with
// the shifted logits s_j = l_j - l_top <= 0 (so Z >= 1 and nothing overflows). The row is
// shifted in place. Exactly 1 for beta = 0.
double row_entropy(double* row, std::size_t visible, std::size_t top, double log_n);

// The entropy over log n from the row's sums: rest = sum_{j != top} exp(s_j) and weighted =
// sum_j exp(s_j) s_j, each summed as row_entropy sums them: pieces of 32 values from the
// row's start, eight partial sums (lane j mod 8) added piece by piece in order (a piece
// short of 32 values padded with zeros), then combined as detail::combine_sums does.
double entropy_of_sums(double rest, double weighted, double log_n);
// entropy_of_sums() of two rows, each bitwise its value: the logs one by one (libm's), the
// rest of both rows' arithmetic side by side in one vector (a division of each kind for both
// rows instead of one each).
void entropies_of_sums(const double (&rest)[2], const double (&weighted)[2], double log_n,
                       double (&entropy)[2]);

// One vector of those sums: rest += e and weighted += e * shifted, for eight consecutive
// values of a row (e[top] set to 0, zeros past the row's end), added in row_entropy's order.
// Inline in both callers, row_entropy() and the kernel (which adds a frame row's vectors as
// they come out of its exponential, src/model/kernel/small_n.cpp): the same expression under
// the same flags, so that both contract it into an FMA alike (one contracted and the other
// not would round differently).
[[gnu::always_inline]] inline void add_entropy_lanes(const reduction_lanes& e,
                                                     const reduction_lanes& shifted,
                                                     reduction_lanes& rest,
                                                     reduction_lanes& weighted) {
    rest += e;
    weighted += e * shifted;
}

} // namespace nadyn::detail
