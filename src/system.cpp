#include "nadyn/system.hpp"

#include "nadyn/detail/parallel.hpp"

#include <cmath>

namespace nadyn {

attention_system::attention_system(const model_parameters& model, attention_weights weights,
                                   std::size_t block)
    : m_model(model), m_weights(std::move(weights)), m_kernel(model.n, model.d, block),
      m_attention(model.n * model.d) {}

void attention_system::attend(const double* theta, double* out) {
    m_kernel.compute(theta, m_weights, {m_model.beta, m_model.causal, m_model.arithmetic}, out);
}

void attention_system::operator()(const state_type& x, state_type& dxdt, double t) {
    ++m_evaluations;
    const std::size_t n = m_model.n, d = m_model.d;
    const double* theta = directions(x);
    const double* r = magnitudes(x, n, d);
    double* dtheta = dxdt.data();
    double* dr = dxdt.data() + n * d;
    attend(theta, m_attention.data());
    const double* attention = m_attention.data();
    const scheme_parameters scheme = m_model.scheme;
    const double step_start = std::isnan(m_step_start) ? t : m_step_start;

    auto token = [&](std::size_t k) {
        const double* theta_k = theta + k * d;
        const double* a_k = attention + k * d;
        double along = 0.0, norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
            along += theta_k[c] * a_k[c];
            norm2 += a_k[c] * a_k[c];
        }
        const token_rates rate = rates(scheme, t, step_start, r[k], along, std::sqrt(norm2));
        for (std::size_t c = 0; c < d; ++c)
            dtheta[k * d + c] = (a_k[c] - along * theta_k[c]) * rate.inverse_speed;
        dr[k] = rate.radial_rate;
    };
    detail::for_each_static(n, n * d > detail::parallel_token_values, token);
}

void project_to_sphere(double* theta, std::size_t n, std::size_t d) {
    auto token = [&](std::size_t k) {
        double* row = theta + k * d;
        double norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c)
            norm2 += row[c] * row[c];
        const double inverse = 1.0 / std::sqrt(norm2);
        for (std::size_t c = 0; c < d; ++c)
            row[c] *= inverse;
    };
    detail::for_each_static(n, n * d > detail::parallel_token_values, token);
}

} // namespace nadyn
