// attention_kind's names and reference_attention(), the naive loop the kernel is tested
// against.
#include "nadyn/model/attention.hpp"
#include "nadyn/model/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace nadyn {

attention_kind parse_attention_kind(std::string_view name) {
    if (name == "softmax") return attention_kind::softmax;
    if (name == "unnormalized") return attention_kind::unnormalized;
    throw input_error("unknown attention '" + std::string(name) +
                      "'; valid choices: " + attention_kind_names());
}

std::string_view to_string(attention_kind kind) {
    return kind == attention_kind::unnormalized ? "unnormalized" : "softmax";
}

std::string attention_kind_names() {
    return "softmax, unnormalized";
}

void reference_attention(const double* theta, std::size_t n, std::size_t d,
                         const attention_weights& weights, const attention_options& options,
                         double* out) {
    std::fill(out, out + n * d, 0.0);
    std::vector<double> q(d), k(d), v(d), logits(n);
    auto apply = [d](const matrix& m, const double* x, std::vector<double>& y) {
        for (std::size_t a = 0; a < d; ++a) {
            if (m.size() == 0) {
                y[a] = x[a];
                continue;
            }
            double sum = 0.0;
            for (std::size_t b = 0; b < d; ++b)
                sum += m(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) * x[b];
            y[a] = sum;
        }
    };
    // QKV-Norm and norm noise (docs/model.md §11), written out for one vector: always
    // normalised under QKV-Norm (unit inputs or not), then the factor of token `token`.
    auto shape = [&](std::vector<double>& y, const std::vector<double>& factors, std::size_t token,
                     double length = 1.0) {
        double factor = factors.empty() ? 1.0 : factors[token];
        if (options.qkv_norm) {
            double norm2 = 0.0;
            for (std::size_t a = 0; a < d; ++a)
                norm2 += y[a] * y[a];
            factor *= length / std::sqrt(norm2);
        }
        for (std::size_t a = 0; a < d; ++a)
            y[a] *= factor;
    };
    // Each token's key and value once per head (n d^2), not once per pair (n^2 d^2): the same
    // arithmetic for each vector, so the same bits, and the sanitizer builds' suites that check
    // every path against this loop at d = 64 take seconds instead of minutes.
    std::vector<double> keys(n * d), values(n * d);
    for (const attention_head& head : weights.heads) {
        for (std::size_t j = 0; j < n; ++j) {
            apply(head.K, theta + j * d, k);
            shape(k, head.key_norm, j);
            std::copy(k.begin(), k.end(), keys.begin() + static_cast<std::ptrdiff_t>(j * d));
            apply(head.V, theta + j * d, v);
            shape(v, head.value_norm, j, options.value_norm);
            std::copy(v.begin(), v.end(), values.begin() + static_cast<std::ptrdiff_t>(j * d));
        }
        for (std::size_t i = 0; i < n; ++i) {
            apply(head.Q, theta + i * d, q);
            shape(q, head.query_norm, i);
            const std::size_t visible = options.causal ? i + 1 : n;
            double largest = -std::numeric_limits<double>::infinity();
            for (std::size_t j = 0; j < visible; ++j) {
                const double* key = keys.data() + j * d;
                double dot = 0.0;
                for (std::size_t a = 0; a < d; ++a)
                    dot += q[a] * key[a];
                logits[j] = options.beta * dot;
                largest = std::max(largest, logits[j]);
            }
            double total = 0.0;
            for (std::size_t j = 0; j < visible; ++j)
                total += std::exp(logits[j] - largest);
            const bool unnormalized = options.kind == attention_kind::unnormalized;
            for (std::size_t j = 0; j < visible; ++j) {
                const double* value = values.data() + j * d;
                const double w = unnormalized ? std::exp(logits[j]) / static_cast<double>(n)
                                              : std::exp(logits[j] - largest) / total;
                for (std::size_t a = 0; a < d; ++a)
                    out[i * d + a] += w * value[a];
            }
        }
    }
}

} // namespace nadyn
