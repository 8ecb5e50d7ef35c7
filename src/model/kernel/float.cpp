// The single-precision side of the attention kernel (--precision float, precision.hpp): the
// tokens and each head's q, k, v in float for the general path (whose blocks are the same
// template as double's, src/model/kernel/general.cpp) or, for a few tokens, the float small-n loops
// (src/model/kernel/small_n_float.cpp); heads with Q = K go through the symmetric path's float
// tiles instead (src/model/kernel/heads.cpp, src/model/kernel/symmetric.cpp, small_d.cpp).
#include "float.hpp"

#include "../qkv_norm.hpp"

#include <algorithm>
#include <cstring>

namespace nadyn {

namespace {

using float_matrix = detail::row_major_matrix<float>;

struct float_operands {
    const float* queries;
    const float* keys;
    const float* values;
};

// One head's projection X M^T in float; M is converted into a reused d x d workspace.
const float* project_single(kernel::single_workspace& work, const kernel::call_shape& shape,
                            const matrix& m, float_matrix& projected) {
    work.weight = m.cast<float>();
    projected.resize(static_cast<Eigen::Index>(shape.n), static_cast<Eigen::Index>(shape.d));
    projected.noalias() = work.tokens * work.weight.transpose();
    return projected.data();
}

// QKV-Norm and norm noise (docs/model.md §11): the head's operand projected and shaped in
// double (the norms are a sum of d squares), then converted to float.
const float* shaped_single(const kernel::call_shape& shape, const double* theta, const matrix& m,
                           bool normalise, const std::vector<double>& scale, matrix& buffer,
                           float_matrix& projected, double length) {
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    const double* data = theta;
    if (m.size() != 0) {
        buffer.noalias() = Eigen::Map<const matrix>(theta, n, d) * m.transpose();
        data = buffer.data();
    }
    data = detail::shape_rows(data, shape.n, shape.d, normalise, scale, buffer, length);
    projected = Eigen::Map<const matrix>(data, n, d).cast<float>();
    return projected.data();
}

bool shapes_value(const attention_head& head, const attention_options& options) {
    return detail::normalises(options.qkv_norm, options.unit_inputs, head.V) ||
           !head.value_norm.empty();
}

const float* shaped_value(kernel::single_workspace& work, kernel::head_operands& shaped,
                          const kernel::call_shape& shape, const double* theta,
                          const attention_head& head, const attention_options& options) {
    return shaped_single(shape, theta, head.V,
                         detail::normalises(options.qkv_norm, options.unit_inputs, head.V),
                         head.value_norm, shaped.values, work.values, options.value_norm);
}

// A head's q, k and v in float: projected in float, or in double and shaped (QKV-Norm, noise)
// before the conversion.
float_operands single_operands(kernel::single_workspace& work, kernel::head_operands& shaped,
                               std::size_t h, const kernel::call_shape& shape, const double* theta,
                               const attention_head& head, const attention_options& options) {
    if (options.qkv_norm || !head.query_norm.empty() || !head.key_norm.empty() ||
        !head.value_norm.empty()) {
        const bool unit = options.unit_inputs;
        const float* q =
            shaped_single(shape, theta, head.Q, detail::normalises(options.qkv_norm, unit, head.Q),
                          head.query_norm, shaped.queries, work.queries, 1.0);
        const float* k =
            shaped_single(shape, theta, head.K, detail::normalises(options.qkv_norm, unit, head.K),
                          head.key_norm, shaped.keys, work.keys, 1.0);
        return {q, k, shaped_value(work, shaped, shape, theta, head, options)};
    }
    const float* tokens = work.tokens.data();
    const bool same_keys = detail::same_projection(head.Q, head.K);
    const float* v = head.V.size() != 0 ? project_single(work, shape, head.V, work.values) : tokens;
    if (!same_keys && head.Q.size() != 0 && head.K.size() != 0) {
        // The logits need Q and K only through K^T Q (detail::small_n_weights): the queries
        // projected by it, the keys the tokens (one projection instead of two, issue 38).
        const auto d = static_cast<Eigen::Index>(shape.d);
        work.weight =
            Eigen::Map<const matrix>(shaped.maps.folded(h, head.Q, head.K), d, d).cast<float>();
        work.queries.resize(static_cast<Eigen::Index>(shape.n), d);
        work.queries.noalias() = work.tokens * work.weight;
        return {work.queries.data(), tokens, v};
    }
    const float* q =
        head.Q.size() != 0 ? project_single(work, shape, head.Q, work.queries) : tokens;
    const float* k = same_keys            ? q
                     : head.K.size() != 0 ? project_single(work, shape, head.K, work.keys)
                                          : tokens;
    return {q, k, v};
}

} // namespace

void kernel::begin_single(single_workspace& work, const call_shape& shape, const double* theta) {
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    work.tokens.resize(n, d);
    work.tokens = Eigen::Map<const matrix>(theta, n, d).cast<float>();
    work.result.setZero(n, d);
    work.tokens_transposed = false;
}

void kernel::end_single(single_workspace& work, const call_shape& shape, double* out) {
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    Eigen::Map<matrix>(out, n, d) += work.result.cast<double>();
}

void kernel::add_head_single(single_workspace& work, head_operands& shaped, std::size_t h,
                             const call_shape& shape, const double* theta,
                             const attention_head& head, const attention_options& options) {
    const float_operands in = single_operands(work, shaped, h, shape, theta, head, options);
    add_general(work.general, shape, in.queries, in.keys, in.values, options, work.result.data());
}

namespace {

// The values of a head whose Q is folded into K, in float: shaped (QKV-Norm, noise) in double,
// the tokens themselves (V = I, or V = s I with s returned in value_scale: the tokens as
// values and s applied with each row's 1 / denominator, bitwise the projection's result for s
// a power of two, as 1/8 for 8 heads averaged; the projection was a twentieth of the float
// sweep's time at simuformer's shape), or projected by V.
const float* folded_values(kernel::single_workspace& work, kernel::head_operands& shaped,
                           std::size_t h, const kernel::call_shape& shape, const double* theta,
                           const attention_head& head, const attention_options& options,
                           float& value_scale) {
    const float* tokens = work.tokens.data();
    value_scale = 1.0f;
    if (shapes_value(head, options)) return shaped_value(work, shaped, shape, theta, head, options);
    if (head.V.size() == 0) return tokens;
    if (const double s = detail::identity_multiple(head.V, work.scaled_identity); s != 0.0) {
        value_scale = static_cast<float>(s);
        return tokens;
    }
    kernel::project_small_n_float(tokens, shape.n, shape.d,
                                  shaped.maps.transposed_float(h, 2, head.V), work.values);
    return work.values.data();
}

// Head h's queries with Q folded into K (detail::small_n_weights), in float: the tokens
// projected by K^T Q into `buffer` (the tokens themselves when Q and K are identities).
const float* folded_queries(kernel::single_workspace& work, kernel::head_operands& shaped,
                            std::size_t h, const kernel::call_shape& shape,
                            const attention_head& head, float_matrix& buffer) {
    const float* tokens = work.tokens.data();
    if (head.Q.size() == 0 && head.K.size() == 0) return tokens;
    kernel::project_small_n_float(tokens, shape.n, shape.d,
                                  shaped.maps.folded_float(h, head.Q, head.K), buffer);
    return buffer.data();
}

// The tokens transposed as every folded head's keys, once per call.
const kernel::small_n_float_keys& folded_keys(kernel::single_workspace& work,
                                              const kernel::call_shape& shape) {
    if (!work.tokens_transposed) {
        kernel::transpose_small_n_float_keys(work.tokens.data(), shape.n, shape.d, work.tokens_t);
        work.tokens_transposed = true;
    }
    return work.tokens_t;
}

} // namespace

void kernel::add_head_single_small_n(single_workspace& work, head_operands& shaped, std::size_t h,
                                     const call_shape& shape, const double* theta,
                                     const attention_head& head, const attention_options& options) {
    const bool unit = options.unit_inputs;
    const bool folds = !detail::normalises(options.qkv_norm, unit, head.Q) &&
                       !detail::normalises(options.qkv_norm, unit, head.K) &&
                       head.query_norm.empty() && head.key_norm.empty();
    const float* queries = nullptr;
    const float* values = nullptr;
    float value_scale = 1.0f;
    const small_n_float_keys* keys_t = nullptr;
    if (folds) {
        // The logits need Q and K only through K^T Q (detail::small_n_weights): the queries
        // projected by it in float, the keys the tokens, transposed once for all heads.
        queries = folded_queries(work, shaped, h, shape, head, work.queries);
        keys_t = &folded_keys(work, shape);
        values = folded_values(work, shaped, h, shape, theta, head, options, value_scale);
    } else {
        const float_operands in = single_operands(work, shaped, h, shape, theta, head, options);
        transpose_small_n_float_keys(in.keys, shape.n, shape.d, work.keys_t);
        queries = in.queries;
        values = in.values;
        keys_t = &work.keys_t;
    }
    add_small_n_float_attention(queries, *keys_t, values, value_scale, shape.n, shape.d,
                                options.beta, options.causal, shape.first_row, shape.end_row,
                                work.result.data());
}

void kernel::add_heads_single_small_n_shared_values(single_workspace& work, head_operands& shaped,
                                                    const call_shape& shape, const double* theta,
                                                    const attention_weights& weights,
                                                    const attention_options& options) {
    const std::size_t heads = weights.heads.size();
    if (work.head_queries.size() < heads) work.head_queries.resize(heads);
    work.query_rows.resize(heads);
    for (std::size_t h = 0; h < heads; ++h)
        work.query_rows[h] =
            folded_queries(work, shaped, h, shape, weights.heads[h], work.head_queries[h]);
    float value_scale = 1.0f;
    const float* values =
        folded_values(work, shaped, 0, shape, theta, weights.heads[0], options, value_scale);
    add_small_n_float_shared_values(work.query_rows.data(), heads, folded_keys(work, shape), values,
                                    value_scale, shape.n, shape.d, options.beta, options.causal,
                                    shape.first_row, shape.end_row, work.result.data());
}

void kernel::add_heads_single_shared_values(single_workspace& work, head_operands& shaped,
                                            const call_shape& shape, const double* theta,
                                            const attention_weights& weights,
                                            const attention_options& options) {
    const std::size_t heads = weights.heads.size();
    const auto n = static_cast<Eigen::Index>(shape.n);
    const auto d = static_cast<Eigen::Index>(shape.d);
    if (work.head_queries.size() < heads) work.head_queries.resize(heads);
    work.query_rows.resize(heads);
    for (std::size_t h = 0; h < heads; ++h) {
        const attention_head& head = weights.heads[h];
        if (head.Q.size() == 0 && head.K.size() == 0) {
            work.query_rows[h] = work.tokens.data();
            continue;
        }
        // The tokens projected by K^T Q ((K^T Q)^T kept d x d), as single_operands() does.
        work.weight =
            Eigen::Map<const matrix>(shaped.maps.folded(h, head.Q, head.K), d, d).cast<float>();
        float_matrix& queries = work.head_queries[h];
        queries.resize(n, d);
        queries.noalias() = work.tokens * work.weight;
        work.query_rows[h] = queries.data();
    }
    const attention_head& first = weights.heads.front();
    float value_scale = 1.0f;
    const float* values = work.tokens.data();
    if (shapes_value(first, options)) {
        values = shaped_value(work, shaped, shape, theta, first, options);
    } else if (first.V.size() != 0) {
        if (const double s = detail::identity_multiple(first.V, work.scaled_identity); s != 0.0)
            value_scale = static_cast<float>(s);
        else
            values = project_single(work, shape, first.V, work.values);
    }
    add_general_shared_values(work.general, shape, work.query_rows.data(), heads,
                              work.tokens.data(), values, value_scale, options, work.result.data());
}

} // namespace nadyn
