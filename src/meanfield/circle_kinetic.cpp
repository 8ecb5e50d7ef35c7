#include "nadyn/meanfield/circle_kinetic.hpp"

#include "fftw_plans.hpp"
#include "nadyn/meanfield/circle.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/funk_hecke.hpp"

#include <algorithm>
#include <cmath>

namespace nadyn::meanfield {

struct circle_kinetic_geometry::parts {
    real_fft fft;
    std::vector<double> ratios, radial;
    std::vector<double> z, dz, along, velocity, flux, slope;
    explicit parts(std::size_t n) : fft(n), z(n), dz(n), along(n), velocity(n), flux(n), slope(n) {}
};

circle_kinetic_geometry::circle_kinetic_geometry(std::size_t points, const field_parameters& field,
                                                 double r0)
    : m_field(field), m_r0(r0) {
    if (field.scheme.id != scheme::pre_ln && field.scheme.id != scheme::peri_ln)
        throw input_error("the kinetic form takes pre-ln or peri-ln");
    if (!(r0 > 0.0) || !std::isfinite(r0)) throw input_error("--r0 must be a finite number > 0");
    field_parameters plain = field;
    plain.scheme.id = scheme::post_ln;
    m_density = std::make_unique<circle_geometry>(points, plain);
    m_points = m_density->points();
    m_weights = m_density->weights();
    m_parts = std::make_unique<parts>(points);
    m_parts->ratios = kernel_ratios(field.beta, 2, points / 2 + 1);
    m_parts->radial = radial_kernel_ratios(field.beta, 2, m_parts->ratios, points / 2);
}

circle_kinetic_geometry::~circle_kinetic_geometry() = default;

void circle_kinetic_geometry::extend_state(std::vector<double>& state) const {
    state.resize(size(), 0.0);
    state.resize(2 * size(), std::log(m_r0));
}

void circle_kinetic_geometry::rate(const double* state, double, double* rate) {
    parts& p = *m_parts;
    const std::size_t n = size();
    const double* rho = state;
    const double* log_r = state + n;
    // Z, Z' and R = <x, A> Z from rho's coefficients, as on the plain circle.
    p.fft.analyse(rho);
    p.fft.filter(p.ratios.data(), false, p.z.data());
    p.fft.filter(p.ratios.data(), true, p.dz.data());
    p.fft.filter(p.radial.data(), false, p.along.data());
    const bool peri = m_field.scheme.id == scheme::peri_ln;
    const double inv_beta = 1.0 / m_field.beta;
    for (std::size_t j = 0; j < n; ++j) {
        const double tangent = inv_beta * p.dz[j] / p.z[j];
        const double along = p.along[j] / p.z[j];
        const double scale =
            std::exp(-log_r[j]) / (peri ? std::sqrt(along * along + tangent * tangent) : 1.0);
        p.velocity[j] = tangent * scale;
        p.along[j] = along * scale; // now dS/dt's source term
        p.flux[j] = rho[j] * p.velocity[j];
    }
    p.fft.analyse(p.flux.data());
    p.fft.derivative(-1.0, rate); // drho/dt = -d(rho v)/dtheta (the weak form)
    p.fft.analyse(log_r);
    p.fft.derivative(1.0, p.slope.data());
    for (std::size_t j = 0; j < n; ++j)
        rate[n + j] = -p.velocity[j] * p.slope[j] + p.along[j];
}

double circle_kinetic_geometry::state_tail(const double* state) {
    // S is of order one (a logarithm), not a density: its top-third coefficients are measured
    // against 1 + |its mean|.
    const double density_tail = m_density->tail(state);
    parts& p = *m_parts;
    const std::size_t n = size(), half = n / 2;
    p.fft.analyse(state + n);
    double top = 0.0;
    for (std::size_t k = (2 * half) / 3; k <= half; ++k)
        top = std::max(top, std::hypot(p.fft.spectrum[k][0], p.fft.spectrum[k][1]));
    return std::max(density_tail, top / (1.0 + std::abs(p.fft.spectrum[0][0])));
}

double circle_kinetic_geometry::mean_magnitude(const double* state) const {
    const std::size_t n = size();
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j)
        sum += m_weights[j] * state[j] * std::exp(state[n + j]);
    return sum;
}

void circle_kinetic_geometry::modes(const double* rho, std::size_t count, double* out) {
    m_density->modes(rho, count, out);
}
double circle_kinetic_geometry::pair_integral(const double* rho) {
    return m_density->pair_integral(rho);
}
double circle_kinetic_geometry::tail(const double* rho) {
    return m_density->tail(rho);
}
std::size_t circle_kinetic_geometry::peaks(const double* rho, double floor) const {
    return m_density->peaks(rho, floor);
}
void circle_kinetic_geometry::add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                                              double* rho) const {
    m_density->add_white_noise(seed, eps, kmax, rho);
}

} // namespace nadyn::meanfield
