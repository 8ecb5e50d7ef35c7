// The general path (include/nadyn/model/attention.hpp), one template for double and float: per
// block of query tokens one GEMM for the logits, the row softmax (or the unnormalised
// weights), one GEMM with the values.
#include "general.hpp"

#include "../reductions.hpp"
#include "exp.hpp"
#include "nadyn/model/attention.hpp"
#include "nadyn/model/detail/parallel.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace nadyn {

namespace {

using detail::row_major_matrix;

// The softmax of a row of count logits in place, max-subtracted (log-sum-exp: beta up to 1e4
// stays finite); the denominator summed in double for float rows too (detail::sum_of).
template <class Scalar> void softmax_row(Scalar* row, std::size_t count) {
    const Scalar largest = detail::max_of(row, count);
    for (std::size_t j = 0; j < count; ++j)
        row[j] -= largest;
    detail::exp_in_place(row, count);
    const double total = detail::sum_of(row, count);
    const auto inverse_total = static_cast<Scalar>(1.0 / total);
    for (std::size_t j = 0; j < count; ++j)
        row[j] *= inverse_total;
}

// The unnormalised weights exp(x) / n of a row in place, as exp(x - max) exp(max) / n:
// exp_in_place() only covers x <= 709 (88 in float), and beyond that the row's scale becomes
// Inf (a fault the caller reports), not a wrong number. exp(max) / n is taken in double and
// rounded to Scalar once (Inf when it leaves float's range).
template <class Scalar> void unnormalized_row(Scalar* row, std::size_t count, double log_n) {
    const Scalar largest = detail::max_of(row, count);
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

// result (n x d) += value_scale (sum_h weights(beta Q_h K^T)) V for `heads` n x d row-major
// query matrices sharing the keys and the values (one head: its own; several: heads that share
// their values, their weights summed in head order before one product with the values, issue
// 38). `weights_row(row, count)` turns the count logits beta <q_k, k_j> of a row into weights in
// place. `work` holds one block x n matrix of logits per thread, and one of summed weights for
// several heads (grown here, reused across calls).
template <class Scalar, class WeightsRow>
void add_blocks(const Scalar* const* q_data, std::size_t heads, const Scalar* k_data,
                const Scalar* v_data, Scalar value_scale, const kernel::call_shape& shape,
                const attention_options& options, kernel::general_workspace<Scalar>& work,
                Scalar* out, const WeightsRow& weights_row) {
    using const_map = Eigen::Map<const row_major_matrix<Scalar>>;
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    const auto block = static_cast<Eigen::Index>(shape.block);
    const auto beta = static_cast<Scalar>(options.beta);
    const bool causal = options.causal; // token k attends to j <= k only
    const const_map keys(k_data, n, d), values(v_data, n, d);
    Eigen::Map<row_major_matrix<Scalar>> result(out, n, d);
    // Threads only when the work is worth them.
    const int threads = detail::worth_parallel(shape.n, shape.d)
                            ? std::max(detail::resolve_threads(options.threads), 1)
                            : 1;
    const auto per_thread = static_cast<std::size_t>(threads);
    if (work.logits.size() < per_thread) work.logits.resize(per_thread);
    if (heads > 1 && work.summed.size() < per_thread) work.summed.resize(per_thread);
    const Eigen::Index blocks = (n + block - 1) / block;

    detail::for_each_dynamic(static_cast<std::size_t>(blocks), threads, [&](std::size_t item) {
        const auto b = static_cast<Eigen::Index>(item);
        const Eigen::Index first = b * block;
        const Eigen::Index rows = std::min(block, n - first);
        if (!shape.wanted(static_cast<std::size_t>(first), static_cast<std::size_t>(rows))) return;
        // Causal: no query in this block sees a key beyond the block's last token.
        const Eigen::Index cols = causal ? first + rows : n;
        const auto thread = static_cast<std::size_t>(omp_get_thread_num());
        row_major_matrix<Scalar>& workspace = work.logits[thread];
        if (workspace.rows() < block || workspace.cols() < n) workspace.resize(block, n);
        auto s = workspace.topLeftCorner(rows, cols);
        row_major_matrix<Scalar>* summed = heads > 1 ? &work.summed[thread] : nullptr;
        if (summed && (summed->rows() < block || summed->cols() < n)) summed->resize(block, n);

        for (std::size_t h = 0; h < heads; ++h) {
            const const_map queries(q_data[h], n, d);
            s.noalias() = queries.middleRows(first, rows) * keys.topRows(cols).transpose();
            for (Eigen::Index i = 0; i < rows; ++i) {
                const Eigen::Index visible = causal ? first + i + 1 : cols;
                const auto count = static_cast<std::size_t>(visible);
                Scalar* row = &s(i, 0);
                for (std::size_t j = 0; j < count; ++j)
                    row[j] *= beta;
                weights_row(row, count);
                for (Eigen::Index j = visible; j < cols; ++j)
                    row[j] = Scalar(0);
            }
            if (!summed) continue;
            auto sum = summed->topLeftCorner(rows, cols);
            if (h == 0)
                sum = s;
            else
                sum += s;
        }
        const auto weights = summed ? summed->topLeftCorner(rows, cols) : s;
        if (value_scale == Scalar(1))
            result.middleRows(first, rows).noalias() += weights * values.topRows(cols);
        else
            result.middleRows(first, rows).noalias() +=
                value_scale * (weights * values.topRows(cols));
    });
}

template <class Scalar>
void add_general_blocks(const Scalar* const* q_data, std::size_t heads, const Scalar* k_data,
                        const Scalar* v_data, Scalar value_scale, const kernel::call_shape& shape,
                        const attention_options& options, kernel::general_workspace<Scalar>& work,
                        Scalar* out) {
    if (options.kind == attention_kind::unnormalized) {
        const double log_n = std::log(static_cast<double>(shape.n));
        add_blocks(
            q_data, heads, k_data, v_data, value_scale, shape, options, work, out,
            [log_n](Scalar* row, std::size_t count) { unnormalized_row(row, count, log_n); });
        return;
    }
    add_blocks(q_data, heads, k_data, v_data, value_scale, shape, options, work, out,
               softmax_row<Scalar>);
}

} // namespace

void kernel::add_general(general_workspace<double>& work, const call_shape& shape,
                         const double* queries, const double* keys, const double* values,
                         const attention_options& options, double* out) {
    add_general_blocks(&queries, 1, keys, values, 1.0, shape, options, work, out);
}

void kernel::add_general(general_workspace<float>& work, const call_shape& shape,
                         const float* queries, const float* keys, const float* values,
                         const attention_options& options, float* out) {
    add_general_blocks(&queries, 1, keys, values, 1.0f, shape, options, work, out);
}

void kernel::add_general_shared_values(general_workspace<double>& work, const call_shape& shape,
                                       const double* const* queries, std::size_t heads,
                                       const double* keys, const double* values, double value_scale,
                                       const attention_options& options, double* out) {
    add_general_blocks(queries, heads, keys, values, value_scale, shape, options, work, out);
}

void kernel::add_general_shared_values(general_workspace<float>& work, const call_shape& shape,
                                       const float* const* queries, std::size_t heads,
                                       const float* keys, const float* values, float value_scale,
                                       const attention_options& options, float* out) {
    add_general_blocks(queries, heads, keys, values, value_scale, shape, options, work, out);
}

} // namespace nadyn
