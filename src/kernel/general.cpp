// The general path in double: the blocks of src/kernel/general.hpp with the double softmax.
#include "general.hpp"

#include "../reductions.hpp"
#include "nadyn/attention.hpp"
#include "nadyn/detail/parallel.hpp"

#include <cmath>

namespace nadyn {

using detail::max_of;
using detail::sum_of;
using detail::worth_parallel;

void attention_kernel::add_general(const double* q_data, const double* k_data, const double* v_data,
                                   const attention_options& options, double* out) {
    const detail::softmax_blocks_shape shape{
        m_n,
        m_d,
        m_block,
        options.causal,
        worth_parallel(m_n, m_d) ? detail::resolve_threads(options.threads) : 1,
        m_first_row,
        m_end_row};
    if (options.kind == attention_kind::unnormalized) {
        // exp(x) = exp(x - max) exp(max): exp_in_place() only covers x <= 709, and beyond
        // that the row's scale becomes Inf (a fault the caller reports), not a wrong number.
        const double log_n = std::log(static_cast<double>(m_n));
        auto unnormalized_row = [log_n](double* row, std::size_t count) {
            const double largest = max_of(row, count);
            for (std::size_t j = 0; j < count; ++j)
                row[j] -= largest;
            detail::exp_in_place(row, count);
            const double scale = std::exp(largest - log_n);
            for (std::size_t j = 0; j < count; ++j)
                row[j] *= scale;
        };
        detail::add_softmax_blocks(q_data, k_data, v_data, options.beta, shape, m_logits, out,
                                   unnormalized_row);
        return;
    }
    // Max subtraction (log-sum-exp): beta up to 1e4 stays finite.
    auto softmax_row = [](double* row, std::size_t count) {
        const double largest = max_of(row, count);
        for (std::size_t j = 0; j < count; ++j)
            row[j] -= largest;
        detail::exp_in_place(row, count);
        const double inverse_total = 1.0 / sum_of(row, count);
        for (std::size_t j = 0; j < count; ++j)
            row[j] *= inverse_total;
    };
    detail::add_softmax_blocks(q_data, k_data, v_data, options.beta, shape, m_logits, out,
                               softmax_row);
}

} // namespace nadyn
