#pragma once
// QKV-Norm and norm noise on one head's projected operands (docs/model.md §11), shared by the
// attention kernel's paths and the attention observables: after the linear map, row k of the
// queries (keys, values) becomes
//
//     row_k <- row_k * (f_k / ‖row_k‖)     with QKV-Norm,
//     row_k <- row_k * f_k                 without,
//
// f_k the norm-noise factor 1 + sigma xi (1 without noise). With neither, the rows are left
// alone, so the plain model's operands (and bits) are untouched.
#include "nadyn/model/weights.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

namespace nadyn::detail {

// Whether a projection's rows are normalised: QKV-Norm, except for an identity map of inputs
// already on the unit sphere (the directions), where it changes nothing mathematically and
// would only perturb the last bits.
inline bool normalises(bool qkv_norm, bool unit_inputs, const matrix& map) {
    return qkv_norm && !(unit_inputs && map.size() == 0);
}

// The n x d row-major operand `data` with QKV-Norm (`normalise`) and the factors `scale`
// (empty: 1) applied: `data` itself when neither applies, else `buffer` (data copied into it
// first unless it is the buffer already).
// `length` is the norm QKV-Norm gives each row (1, or the head's share 1/H for values under
// the heads' mean, which combine_heads folds into V).
inline const double* shape_rows(const double* data, std::size_t n, std::size_t d, bool normalise,
                                const std::vector<double>& scale, matrix& buffer,
                                double length = 1.0) {
    if (!normalise && scale.empty()) return data;
    const auto rows = static_cast<Eigen::Index>(n), cols = static_cast<Eigen::Index>(d);
    if (data != buffer.data()) {
        buffer.resize(rows, cols);
        std::copy(data, data + n * d, buffer.data());
    }
    double* out = buffer.data();
    for (std::size_t k = 0; k < n; ++k) {
        double* row = out + k * d;
        double factor = scale.empty() ? 1.0 : scale[k];
        if (normalise) {
            double norm2 = 0.0;
            for (std::size_t c = 0; c < d; ++c)
                norm2 += row[c] * row[c];
            factor *= length / std::sqrt(norm2);
        }
        for (std::size_t c = 0; c < d; ++c)
            row[c] *= factor;
    }
    return out;
}

} // namespace nadyn::detail
