// The single-precision side of the attention kernel (--precision float, precision.hpp): the
// tokens and each head's q, k, v in float for the general path (whose blocks are the same
// template as double's, src/kernel/general.cpp); heads with Q = K go through the symmetric
// path's float tiles instead (src/kernel/heads.cpp, src/kernel/symmetric.cpp, small_d.cpp).
#include "float.hpp"

#include "../qkv_norm.hpp"

#include <algorithm>

namespace nadyn {

using float_matrix = detail::row_major_matrix<float>;

void kernel::begin_single(single_workspace& work, const call_shape& shape, const double* theta) {
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    work.tokens.resize(n, d);
    work.tokens = Eigen::Map<const matrix>(theta, n, d).cast<float>();
    work.result.setZero(n, d);
}

void kernel::end_single(single_workspace& work, const call_shape& shape, double* out) {
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    Eigen::Map<matrix>(out, n, d) += work.result.cast<double>();
}

void kernel::add_head_single(single_workspace& work, head_operands& shaped, const call_shape& shape,
                             const double* theta, const attention_head& head,
                             const attention_options& options) {
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    // One head's projection X M^T in float; M is converted into a reused d x d workspace.
    auto project_single = [&](const matrix& m, float_matrix& projected) {
        work.weight = m.cast<float>();
        projected.resize(n, d);
        projected.noalias() = work.tokens * work.weight.transpose();
        return projected.data();
    };
    // QKV-Norm and norm noise (docs/model.md §11): the head's operand projected and shaped in
    // double (the norms are a sum of d squares), then converted to float.
    auto shaped_single = [&](const matrix& m, bool normalise, const std::vector<double>& scale,
                             matrix& buffer, float_matrix& projected, double length) {
        const double* data = theta;
        if (m.size() != 0) {
            buffer.noalias() = Eigen::Map<const matrix>(theta, n, d) * m.transpose();
            data = buffer.data();
        }
        data = detail::shape_rows(data, shape.n, shape.d, normalise, scale, buffer, length);
        projected = Eigen::Map<const matrix>(data, n, d).cast<float>();
        return projected.data();
    };
    if (options.qkv_norm || !head.query_norm.empty() || !head.key_norm.empty() ||
        !head.value_norm.empty()) {
        const bool unit = options.unit_inputs;
        const float* q = shaped_single(head.Q, detail::normalises(options.qkv_norm, unit, head.Q),
                                       head.query_norm, shaped.queries, work.queries, 1.0);
        const float* k = shaped_single(head.K, detail::normalises(options.qkv_norm, unit, head.K),
                                       head.key_norm, shaped.keys, work.keys, 1.0);
        const float* v =
            shaped_single(head.V, detail::normalises(options.qkv_norm, unit, head.V),
                          head.value_norm, shaped.values, work.values, options.value_norm);
        add_general(work.general, shape, q, k, v, options, work.result.data());
        return;
    }
    const float* tokens = work.tokens.data();
    const float* q = head.Q.size() != 0 ? project_single(head.Q, work.queries) : tokens;
    const bool same_keys = detail::same_projection(head.Q, head.K);
    const float* k = same_keys            ? q
                     : head.K.size() != 0 ? project_single(head.K, work.keys)
                                          : tokens;
    const float* v = head.V.size() != 0 ? project_single(head.V, work.values) : tokens;
    add_general(work.general, shape, q, k, v, options, work.result.data());
}

} // namespace nadyn
