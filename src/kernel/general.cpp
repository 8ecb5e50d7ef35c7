// The general path (include/nadyn/attention.hpp), one template for double and float: the
// blocks of src/kernel/general.hpp with the row softmax of each arithmetic.
#include "general.hpp"
#include "small_n.hpp"

#include "../reductions.hpp"
#include "nadyn/attention.hpp"
#include "nadyn/detail/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace nadyn {

namespace {

float largest_of(const float* x, std::size_t count) {
    float part[16];
    std::fill(part, part + 16, -std::numeric_limits<float>::infinity());
    std::size_t j = 0;
    for (; j + 16 <= count; j += 16)
        for (std::size_t l = 0; l < 16; ++l)
            part[l] = std::max(part[l], x[j + l]);
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] = std::max(part[l], x[j]);
    return *std::max_element(part, part + 16);
}

// The softmax denominator in double: a float sum of n terms would add an error growing
// with n to every weight.
double total_of(const float* x, std::size_t count) {
    double part[8] = {};
    std::size_t j = 0;
    for (; j + 8 <= count; j += 8)
        for (std::size_t l = 0; l < 8; ++l)
            part[l] += static_cast<double>(x[j + l]);
    for (std::size_t l = 0; j < count; ++j, ++l)
        part[l] += static_cast<double>(x[j]);
    return ((part[0] + part[4]) + (part[1] + part[5])) +
           ((part[2] + part[6]) + (part[3] + part[7]));
}

// The row's largest logit and the sum of its weights, in each arithmetic: double sums in
// double, float sums in double too (total_of()).
double largest_in_row(const double* row, std::size_t count) {
    return detail::max_of(row, count);
}
float largest_in_row(const float* row, std::size_t count) {
    return largest_of(row, count);
}
double total_of_row(const double* row, std::size_t count) {
    return detail::sum_of(row, count);
}
double total_of_row(const float* row, std::size_t count) {
    return total_of(row, count);
}

// The softmax of a row of count logits in place, max-subtracted (log-sum-exp: beta up to 1e4
// stays finite); the denominator summed in Accumulator.
template <class Scalar, class Accumulator> void softmax_row(Scalar* row, std::size_t count) {
    const Scalar largest = largest_in_row(row, count);
    for (std::size_t j = 0; j < count; ++j)
        row[j] -= largest;
    detail::exp_in_place(row, count);
    const Accumulator total = total_of_row(row, count);
    const auto inverse_total = static_cast<Scalar>(Accumulator(1) / total);
    for (std::size_t j = 0; j < count; ++j)
        row[j] *= inverse_total;
}

// The unnormalised weights exp(x) / n of a row in place, as exp(x - max) exp(max) / n:
// exp_in_place() only covers x <= 709 (88 in float), and beyond that the row's scale becomes
// Inf (a fault the caller reports), not a wrong number. exp(max) / n is taken in double and
// rounded to Scalar once (Inf when it leaves float's range).
template <class Scalar> void unnormalized_row(Scalar* row, std::size_t count, double log_n) {
    const Scalar largest = largest_in_row(row, count);
    for (std::size_t j = 0; j < count; ++j)
        row[j] -= largest;
    detail::exp_in_place(row, count);
    const double wide = std::exp(static_cast<double>(largest) - log_n);
    Scalar scale = static_cast<Scalar>(wide);
    if constexpr (!std::is_same_v<Scalar, double>)
        if (!(wide <= std::numeric_limits<Scalar>::max()))
            scale = std::numeric_limits<Scalar>::infinity();
    for (std::size_t j = 0; j < count; ++j)
        row[j] *= scale;
}

// out += the head's attention through the general path, in Scalar; sums of weights in double.
template <class Scalar>
void add_general_blocks(const Scalar* q_data, const Scalar* k_data, const Scalar* v_data,
                        const attention_options& options, const detail::softmax_blocks_shape& shape,
                        std::vector<detail::row_major_matrix<Scalar>>& logits, Scalar* out) {
    const auto beta = static_cast<Scalar>(options.beta);
    if (options.kind == attention_kind::unnormalized) {
        const double log_n = std::log(static_cast<double>(shape.n));
        detail::add_softmax_blocks(
            q_data, k_data, v_data, beta, shape, logits, out,
            [log_n](Scalar* row, std::size_t count) { unnormalized_row(row, count, log_n); });
        return;
    }
    detail::add_softmax_blocks(q_data, k_data, v_data, beta, shape, logits, out,
                               softmax_row<Scalar, double>);
}

// The blocks of one call: the rows wanted, and threads only when the work is worth them.
detail::softmax_blocks_shape blocks_of(const kernel::call_shape& shape,
                                       const attention_options& options) {
    return {shape.n,
            shape.d,
            shape.block,
            options.causal,
            detail::worth_parallel(shape.n, shape.d) ? detail::resolve_threads(options.threads) : 1,
            shape.first_row,
            shape.end_row};
}

} // namespace

bool kernel::add_general(general_workspace<double>& work, const call_shape& shape,
                         const double* queries, const double* keys, const double* values,
                         const attention_options& options, double* out, double* entropy,
                         const detail::small_n_keys* keys_t) {
    if (options.kind == attention_kind::softmax && detail::takes_small_n(shape.n, shape.d)) {
        if (keys_t)
            detail::add_small_n_attention(queries, *keys_t, values, shape.n, shape.d, options.beta,
                                          options.causal, shape.first_row, shape.end_row, out,
                                          entropy);
        else
            detail::add_small_n_attention(queries, keys, values, shape.n, shape.d, options.beta,
                                          options.causal, shape.first_row, shape.end_row, out,
                                          entropy);
        return entropy != nullptr;
    }
    add_general_blocks(queries, keys, values, options, blocks_of(shape, options), work.logits, out);
    return false;
}

void kernel::add_general(general_workspace<float>& work, const call_shape& shape,
                         const float* queries, const float* keys, const float* values,
                         const attention_options& options, float* out) {
    add_general_blocks(queries, keys, values, options, blocks_of(shape, options), work.logits, out);
}

} // namespace nadyn
