#include "nadyn/meanfield/circle.hpp"

#include "fftw_plans.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/funk_hecke.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/start_density.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace nadyn::meanfield {

struct circle_geometry::fft : real_fft {
    using real_fft::real_fft;
};

namespace {

bool identity_heads(const attention_weights& w) {
    if (w.heads.size() != 1) return false;
    const auto& h = w.heads.front();
    return !h.Q.size() && !h.K.size() && !h.V.size();
}

} // namespace

circle_geometry::circle_geometry(std::size_t points, const field_parameters& field,
                                 const attention_weights& weights)
    : m_field(field), m_attention(weights), m_identity(identity_heads(weights)) {
    if (points < 8 || points % 2 != 0 || points > (std::size_t{1} << 24))
        throw input_error("--points must be an even number from 8 to 16777216, got " +
                          std::to_string(points));
    for (const auto& h : m_attention.heads) {
        for (const matrix* m : {&h.Q, &h.K, &h.V})
            if (m->size() && (m->rows() != 2 || m->cols() != 2))
                throw input_error("the circle's weights must be 2 x 2 matrices");
        if (!h.query_norm.empty() || !h.key_norm.empty() || !h.value_norm.empty())
            throw input_error("the density solver has no norm noise (it has no tokens)");
    }
    const std::size_t n = points;
    m_points.resize(2 * n);
    m_weights.assign(n, 1.0 / static_cast<double>(n));
    for (std::size_t j = 0; j < n; ++j) {
        const double theta =
            2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(n);
        m_points[2 * j] = std::cos(theta);
        m_points[2 * j + 1] = std::sin(theta);
    }
    m_velocity.assign(n, 0.0);
    m_keys.assign(2 * n, 0.0);
    m_values.assign(2 * n, 0.0);
    m_attention_out.assign(2 * n, 0.0);
    m_ratios = kernel_ratios(field.beta, 2, n / 2 + 1);
    m_radial = radial_kernel_ratios(field.beta, 2, m_ratios, n / 2);
    m_fft = std::make_unique<fft>(n);
}

circle_geometry::~circle_geometry() = default;

void circle_geometry::attention_by_convolution(const double* rho, double t) {
    // Z = (K * rho) / w_0 and its derivative in theta, and R = <x, A> Z for ngpt:
    // with c_k the coefficients of rho, Z has c_k I_k / I_0, Z' has i k c_k I_k / I_0 and R
    // has c_k I_k' / I_0. The tangent attention is P_x A = (1/beta) Z' / Z (docs/model.md
    // §13.1), the velocity that over the speed divisor.
    fft& f = *m_fft;
    const std::size_t n = size(), half = n / 2;
    f.analyse(rho);
    std::vector<double>& z = f.work(0);
    std::vector<double>& dz = f.work(1);
    std::vector<double>& radial = f.work(2);
    const bool needs_norm = m_field.scheme.id == scheme::ngpt;
    f.filter(m_ratios.data(), false, z.data());
    f.filter(m_ratios.data(), true, dz.data());
    if (needs_norm) f.filter(m_radial.data(), false, radial.data());
    (void)half;
    const double inv_beta = 1.0 / m_field.beta;
    for (std::size_t j = 0; j < n; ++j) {
        const double tangent = inv_beta * dz[j] / z[j];
        double norm = 0.0;
        if (needs_norm) {
            const double along = radial[j] / z[j];
            norm = std::sqrt(along * along + tangent * tangent);
        }
        m_velocity[j] = tangent * inverse_speed(m_field, t, norm);
    }
}

void circle_geometry::attention_by_quadrature(const double* rho, double t) {
    // A(x_i) = sum_h sum_j w_j rho_j exp(l_ij) V_h y_j / sum_j w_j rho_j exp(l_ij), with
    // l_ij = beta <Q_h x_i, K_h y_j> shifted by its row maximum (log-sum-exp, as the
    // particles' kernel). The trapezoidal rule on the nodes is the quadrature.
    const std::size_t n = size();
    const bool needs_norm = m_field.scheme.id == scheme::ngpt;
    const double beta = m_field.beta;
    const auto apply = [](const matrix& m, double x0, double x1, double& y0, double& y1) {
        if (!m.size()) {
            y0 = x0;
            y1 = x1;
            return;
        }
        y0 = m(0, 0) * x0 + m(0, 1) * x1;
        y1 = m(1, 0) * x0 + m(1, 1) * x1;
    };
    // Buffers of the run (no allocation in the step); the logits are recomputed in the
    // second pass rather than stored per thread.
    std::vector<double>& keys = m_keys;
    std::vector<double>& values = m_values;
    std::vector<double>& attention = m_attention_out;
    std::fill(attention.begin(), attention.end(), 0.0);
    for (const auto& h : m_attention.heads) {
        for (std::size_t j = 0; j < n; ++j) {
            apply(h.K, m_points[2 * j], m_points[2 * j + 1], keys[2 * j], keys[2 * j + 1]);
            apply(h.V, m_points[2 * j], m_points[2 * j + 1], values[2 * j], values[2 * j + 1]);
        }
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) {
            double q0, q1;
            apply(h.Q, m_points[2 * i], m_points[2 * i + 1], q0, q1);
            q0 *= beta;
            q1 *= beta;
            double top = -std::numeric_limits<double>::infinity();
            for (std::size_t j = 0; j < n; ++j)
                if (rho[j] > 0.0) top = std::max(top, q0 * keys[2 * j] + q1 * keys[2 * j + 1]);
            double z = 0.0, a0 = 0.0, a1 = 0.0;
            for (std::size_t j = 0; j < n; ++j) {
                const double w = rho[j] * std::exp(q0 * keys[2 * j] + q1 * keys[2 * j + 1] - top);
                z += w;
                a0 += w * values[2 * j];
                a1 += w * values[2 * j + 1];
            }
            attention[2 * i] += a0 / z;
            attention[2 * i + 1] += a1 / z;
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        const double x0 = m_points[2 * i], x1 = m_points[2 * i + 1];
        const double a0 = attention[2 * i], a1 = attention[2 * i + 1];
        const double tangent = -x1 * a0 + x0 * a1; // <e_theta, A>, e_theta = (-sin, cos)
        const double norm = needs_norm ? std::sqrt(a0 * a0 + a1 * a1) : 0.0;
        m_velocity[i] = tangent * inverse_speed(m_field, t, norm);
    }
}

void circle_geometry::rate(const double* rho, double t, double* drho) {
    if (m_identity)
        attention_by_convolution(rho, t);
    else
        attention_by_quadrature(rho, t);
    // drho/dt = -d(rho v)/dtheta: the weak form against every Fourier mode, i.e. -i k times
    // the flux's coefficients. k = 0 is exactly 0 (mass); the Nyquist mode, whose derivative
    // is not a real function on the nodes, is dropped, as it is from the spectral space.
    fft& f = *m_fft;
    std::vector<double>& flux = f.work(0);
    for (std::size_t j = 0; j < size(); ++j)
        flux[j] = rho[j] * m_velocity[j];
    f.analyse(flux.data());
    f.derivative(-1.0, drho);
}

void circle_geometry::coefficients(const double* rho, std::vector<double>& real,
                                   std::vector<double>& imag) {
    fft& f = *m_fft;
    f.analyse(rho);
    const std::size_t half = size() / 2;
    real.resize(half + 1);
    imag.resize(half + 1);
    for (std::size_t k = 0; k <= half; ++k) {
        real[k] = f.spectrum[k][0];
        imag[k] = f.spectrum[k][1];
    }
}

void circle_geometry::modes(const double* rho, std::size_t count, double* out) {
    // m_k = |c_k|^2 (docs/model.md §5: on the circle the squared modulus of the k-th Fourier
    // coefficient).
    fft& f = *m_fft;
    f.analyse(rho);
    for (std::size_t k = 1; k <= count; ++k)
        out[k - 1] = k <= max_degree()
                         ? f.spectrum[k][0] * f.spectrum[k][0] + f.spectrum[k][1] * f.spectrum[k][1]
                         : 0.0;
}

double circle_geometry::pair_integral(const double* rho) {
    // integral integral exp(beta cos(theta - phi)) rho rho / w_0 = sum_k (I_|k| / I_0) |c_k|^2
    // over k in Z: the k > 0 terms twice.
    fft& f = *m_fft;
    f.analyse(rho);
    double sum = m_ratios[0] * (f.spectrum[0][0] * f.spectrum[0][0]);
    for (std::size_t k = 1; k <= max_degree(); ++k)
        sum += 2.0 * m_ratios[k] *
               (f.spectrum[k][0] * f.spectrum[k][0] + f.spectrum[k][1] * f.spectrum[k][1]);
    return sum;
}

double circle_geometry::tail(const double* rho) {
    fft& f = *m_fft;
    f.analyse(rho);
    const std::size_t half = size() / 2;
    double top = 0.0;
    for (std::size_t k = (2 * half) / 3; k <= half; ++k)
        top = std::max(top, std::hypot(f.spectrum[k][0], f.spectrum[k][1]));
    return top / std::abs(f.spectrum[0][0]);
}

std::size_t circle_geometry::peaks(const double* rho, double floor) const {
    const std::size_t n = size();
    std::size_t count = 0;
    for (std::size_t j = 0; j < n; ++j) {
        const double left = rho[(j + n - 1) % n], right = rho[(j + 1) % n];
        if (rho[j] > floor && rho[j] > left && rho[j] > right) ++count;
    }
    return count;
}

void circle_geometry::add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                                      double* rho) const {
    // Y_{k,1} = sqrt 2 cos k theta, Y_{k,2} = sqrt 2 sin k theta, orthonormal in L^2(sigma);
    // the coefficients are the particles' noise start's (start_density.hpp), same stream.
    random_source random(seed);
    const std::vector<double> coefficients = draw_circle_noise(random, kmax);
    const std::size_t n = size();
    for (std::size_t k = 1; k <= kmax; ++k) {
        const double a = coefficients[2 * k - 2], b = coefficients[2 * k - 1];
        for (std::size_t j = 0; j < n; ++j) {
            const double phase =
                2.0 * std::numbers::pi * static_cast<double>((k * j) % n) / static_cast<double>(n);
            rho[j] += eps * std::numbers::sqrt2 * (a * std::cos(phase) + b * std::sin(phase));
        }
    }
}

} // namespace nadyn::meanfield
