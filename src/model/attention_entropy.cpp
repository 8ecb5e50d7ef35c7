#include "attention_entropy.hpp"

#include "nadyn/model/attention.hpp"
#include "reductions.hpp"

#include <algorithm>
#include <cmath>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace nadyn::detail {

// The max in vectors, then the first entry equal to it (a compare-and-branch per entry does
// not vectorise).
std::size_t first_argmax(const double* row, std::size_t count) {
    return first_index_of(row, count, max_of(row, count));
}

std::size_t first_index_of(const double* row, std::size_t count, double value) {
    std::size_t j = 0;
#if defined(__AVX512F__)
    // A mask of the equal lanes and its lowest bit: the lane-by-lane test of the loop below
    // cost a frame's evaluation about 8% (n = 64: 16 ns a row, as much as the row's log).
    const __m512d wanted = _mm512_set1_pd(value);
    for (; j + 8 <= count; j += 8)
        if (const __mmask8 equal = _mm512_cmp_pd_mask(_mm512_loadu_pd(row + j), wanted, _CMP_EQ_OQ))
            return j + static_cast<std::size_t>(__builtin_ctz(equal));
#endif
    for (; j + 8 <= count; j += 8) {
        const auto equal = load_lanes(row + j) == value;
        for (std::size_t l = 0; l < 8; ++l)
            if (equal[l]) return j + l;
    }
    for (; j < count; ++j)
        if (row[j] == value) return j;
    return 0;
}

namespace {

// The rows' pieces: L1-sized, padded with zeros (which add +0 to the sums: nothing).
constexpr std::size_t entropy_piece = 32;

// Shifts the row by its top entry in place (row[j] -= row[top], so every entry is <= 0) and
// returns rest = sum_{j != top} exp(row_j) and weighted = sum_j exp(row_j) row_j (the top's
// term is 1 x 0). One pass in L1-sized pieces, with eight partial sums per quantity: a
// separate pass each for the shift, the exponentials and the two sums cost three times the
// arithmetic at the few tokens of an ensemble run.
void shifted_exponential_sums(double* row, std::size_t count, std::size_t top, double& rest,
                              double& weighted) {
    constexpr std::size_t piece = entropy_piece;
    const double largest = row[top];
    reduction_lanes rest_lanes = {}, weighted_lanes = {};
    alignas(64) double shifted[piece], e[piece];
    for (std::size_t j0 = 0; j0 < count; j0 += piece) {
        const std::size_t m = std::min(piece, count - j0);
        for (std::size_t i = 0; i < m; ++i) {
            row[j0 + i] -= largest;
            shifted[i] = e[i] = row[j0 + i];
        }
        std::fill(shifted + m, shifted + piece, 0.0);
        std::fill(e + m, e + piece, 0.0);
        exp_in_place(e, m);
        if (top >= j0 && top < j0 + m) e[top - j0] = 0.0;
        for (std::size_t i = 0; i < piece; i += 8)
            add_entropy_lanes(load_lanes(e + i), load_lanes(shifted + i), rest_lanes,
                              weighted_lanes);
    }
    rest = combine_sums(rest_lanes);
    weighted = combine_sums(weighted_lanes);
}

} // namespace

double row_entropy(double* row, std::size_t visible, std::size_t top, double log_n) {
    double rest = 0.0, weighted = 0.0;
    shifted_exponential_sums(row, visible, top, rest, weighted);
    return entropy_of_sums(rest, weighted, log_n);
}

namespace {

// log Z = log(1 + rest), by log1p below 0.5 (see entropy_of_sums()).
double log_partition(double rest) {
    return rest < 0.5 ? std::log1p(rest) : std::log(1.0 + rest);
}

} // namespace

void entropies_of_sums(const double (&rest)[2], const double (&weighted)[2], double log_n,
                       double (&entropy)[2]) {
    using pair = double __attribute__((vector_size(2 * sizeof(double))));
    const pair log_z = {log_partition(rest[0]), log_partition(rest[1])};
    const pair r = {rest[0], rest[1]}, w = {weighted[0], weighted[1]};
    const pair value = log_z - w / (1.0 + r);
    // std::max(value, 0.0) lane by lane: (value < 0) ? 0 : value, so NaN stays NaN.
    const pair kept = value < 0.0 ? pair{} : value;
    const pair result = kept / log_n;
    entropy[0] = result[0];
    entropy[1] = result[1];
}

double entropy_of_sums(double rest, double weighted, double log_n) {
    // Z = 1 + rest (the top key's term is exactly 1, kept out of rest): log1p keeps the
    // entropy's relative accuracy when one key dominates and rest is far below 1e-16.
    // log(1 + rest) once rest is large: for beta = 0 it is then log n exactly, the same
    // rounding as log_n, so uniform rows give exactly 1.
    const double log_z = log_partition(rest);
    const double entropy = log_z - weighted / (1.0 + rest);
    return std::max(entropy, 0.0) / log_n;
}

} // namespace nadyn::detail
