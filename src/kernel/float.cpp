// The single-precision path of the attention kernel (--precision float, precision.hpp).
#include "nadyn/attention.hpp"

#include "../qkv_norm.hpp"
#include "general.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

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

} // namespace

void attention_kernel::begin_single(const double* theta) {
    const auto n = static_cast<Eigen::Index>(m_n);
    const auto d = static_cast<Eigen::Index>(m_d);
    m_tokens_single.resize(n, d);
    m_tokens_single = Eigen::Map<const matrix>(theta, n, d).cast<float>();
    m_result_single.setZero(n, d);
}

void attention_kernel::end_single(double* out) {
    const auto n = static_cast<Eigen::Index>(m_n);
    const auto d = static_cast<Eigen::Index>(m_d);
    Eigen::Map<matrix>(out, n, d) += m_result_single.cast<double>();
}

// One head through the general path in float, added to m_result_single.
void attention_kernel::add_head_single(const double* theta, const attention_head& head,
                                       const attention_options& options) {
    const auto n = static_cast<Eigen::Index>(m_n);
    const auto d = static_cast<Eigen::Index>(m_d);
    // One head's projection X M^T in float; M is converted into a reused d x d workspace.
    auto project_single = [&](const matrix& m, float_matrix& projected) {
        m_weight_single = m.cast<float>();
        projected.resize(n, d);
        projected.noalias() = m_tokens_single * m_weight_single.transpose();
        return projected.data();
    };
    // QKV-Norm and norm noise (docs/model.md §11): the head's operand projected and shaped in
    // double (the norms are a sum of d squares), then converted to float.
    auto shaped_single = [&](const matrix& m, bool normalise, const std::vector<double>& scale,
                             matrix& shaped, float_matrix& projected, double length) {
        const double* data = theta;
        if (m.size() != 0) {
            shaped.noalias() = Eigen::Map<const matrix>(theta, n, d) * m.transpose();
            data = shaped.data();
        }
        data = detail::shape_rows(data, m_n, m_d, normalise, scale, shaped, length);
        projected = Eigen::Map<const matrix>(data, n, d).cast<float>();
        return projected.data();
    };
    {
        if (options.qkv_norm || !head.query_norm.empty() || !head.key_norm.empty() ||
            !head.value_norm.empty()) {
            const bool unit = options.unit_inputs;
            const float* q =
                shaped_single(head.Q, detail::normalises(options.qkv_norm, unit, head.Q),
                              head.query_norm, m_queries, m_queries_single, 1.0);
            const float* k =
                shaped_single(head.K, detail::normalises(options.qkv_norm, unit, head.K),
                              head.key_norm, m_keys, m_keys_single, 1.0);
            const float* v =
                shaped_single(head.V, detail::normalises(options.qkv_norm, unit, head.V),
                              head.value_norm, m_values, m_values_single, options.value_norm);
            add_general_single(q, k, v, options);
            m_last_path = path::single_precision;
            return;
        }
        const float* tokens = m_tokens_single.data();
        const float* q = head.Q.size() != 0 ? project_single(head.Q, m_queries_single) : tokens;
        const bool same_keys = detail::same_projection(head.Q, head.K);
        const float* k = same_keys            ? q
                         : head.K.size() != 0 ? project_single(head.K, m_keys_single)
                                              : tokens;
        const float* v = head.V.size() != 0 ? project_single(head.V, m_values_single) : tokens;
        add_general_single(q, k, v, options);
    }
    m_last_path = path::single_precision;
}

void attention_kernel::add_general_single(const float* q_data, const float* k_data,
                                          const float* v_data, const attention_options& options) {
    const detail::softmax_blocks_shape shape{
        m_n,
        m_d,
        m_block,
        options.causal,
        detail::worth_parallel(m_n, m_d) ? detail::resolve_threads(options.threads) : 1,
        m_first_row,
        m_end_row};
    if (options.kind == attention_kind::unnormalized) {
        // exp(max) / n in double, rounded to float once: Inf when the weights leave float's
        // range (beta <q_k, key_j> beyond about 88 + ln n), which the caller reports.
        const double log_n = std::log(static_cast<double>(m_n));
        auto unnormalized_row = [log_n](float* row, std::size_t count) {
            const float largest = largest_of(row, count);
            for (std::size_t j = 0; j < count; ++j)
                row[j] -= largest;
            detail::exp_in_place(row, count);
            const double wide = std::exp(static_cast<double>(largest) - log_n);
            const float scale = wide <= std::numeric_limits<float>::max()
                                    ? static_cast<float>(wide)
                                    : std::numeric_limits<float>::infinity();
            for (std::size_t j = 0; j < count; ++j)
                row[j] *= scale;
        };
        detail::add_softmax_blocks(q_data, k_data, v_data, static_cast<float>(options.beta), shape,
                                   m_logits_single, m_result_single.data(), unnormalized_row);
        return;
    }
    auto softmax_row = [](float* row, std::size_t count) {
        const float largest = largest_of(row, count);
        for (std::size_t j = 0; j < count; ++j)
            row[j] -= largest;
        detail::exp_in_place(row, count);
        const auto inverse_total = static_cast<float>(1.0 / total_of(row, count));
        for (std::size_t j = 0; j < count; ++j)
            row[j] *= inverse_total;
    };
    detail::add_softmax_blocks(q_data, k_data, v_data, static_cast<float>(options.beta), shape,
                               m_logits_single, m_result_single.data(), softmax_row);
}

} // namespace nadyn
