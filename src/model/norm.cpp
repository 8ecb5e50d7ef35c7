#include "nadyn/model/norm.hpp"

#include "nadyn/model/detail/parallel.hpp"
#include "nadyn/model/error.hpp"
#include "reductions.hpp"

#include <cmath>

namespace nadyn {

norm_kind parse_norm(std::string_view name) {
    if (name == "rms") return norm_kind::rms;
    if (name == "layernorm") return norm_kind::layernorm;
    throw input_error("unknown norm '" + std::string(name) + "'; valid choices: " + norm_names());
}

std::string_view to_string(norm_kind kind) {
    return kind == norm_kind::layernorm ? "layernorm" : "rms";
}

std::string norm_names() {
    return "rms, layernorm";
}

void apply_affine(const layer_norm_affine& affine, const double* theta, double* y, std::size_t n,
                  std::size_t d) {
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c) {
            const double scaled =
                affine.gain.empty() ? theta[k * d + c] : affine.gain[c] * theta[k * d + c];
            y[k * d + c] = affine.bias.empty() ? scaled : scaled + affine.bias[c];
        }
}

void centre_rows(double* x, std::size_t n, std::size_t d, int threads) {
    threads = detail::token_threads(n, d, detail::resolve_threads(threads));
    const double inverse_d = 1.0 / static_cast<double>(d);
    detail::for_each_static(n, threads, [&](std::size_t k) {
        double* row = x + k * d;
        const double mean = detail::sum_of(row, d) * inverse_d;
        for (std::size_t c = 0; c < d; ++c)
            row[c] -= mean;
    });
}

void project_to_centred_sphere(double* theta, std::size_t n, std::size_t d, int threads) {
    threads = detail::token_threads(n, d, detail::resolve_threads(threads));
    const double inverse_d = 1.0 / static_cast<double>(d);
    detail::for_each_static(n, threads, [&](std::size_t k) {
        double* row = theta + k * d;
        const double mean = detail::sum_of(row, d) * inverse_d;
        for (std::size_t c = 0; c < d; ++c)
            row[c] -= mean;
        const double inverse = 1.0 / std::sqrt(detail::dot_of(row, row, d));
        for (std::size_t c = 0; c < d; ++c)
            row[c] *= inverse;
    });
}

} // namespace nadyn
