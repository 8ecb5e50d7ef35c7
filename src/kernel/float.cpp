// The single-precision side of the attention kernel (--precision float, precision.hpp): the
// tokens and each head's q, k, v in float for the general path (whose blocks are the same
// template as double's, src/kernel/general.cpp); heads with Q = K go through the symmetric
// path's float tiles instead (src/kernel/heads.cpp, src/kernel/symmetric.cpp, small_d.cpp).
#include "nadyn/attention.hpp"

#include "../qkv_norm.hpp"
#include "general.hpp"

#include <algorithm>

namespace nadyn {

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

} // namespace nadyn
