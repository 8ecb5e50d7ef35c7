#include "nadyn/meanfield/zonal.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/funk_hecke.hpp"
#include "nadyn/model/random.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace nadyn::meanfield {

namespace {

// The monic recurrence of the Gegenbauer weight (1 - t^2)^{lambda - 1/2}, lambda = (d-2)/2:
// P_{k+1} = t P_k - b_k P_{k-1}, b_k = k (k + 2 lambda - 1) / (4 (k + lambda)(k + lambda - 1)),
// and b_1 = 1/2 on the circle (lambda = 0), where the formula is 0/0.
double recurrence_b(std::size_t k, double lambda) {
    const double kk = static_cast<double>(k);
    if (lambda == 0.0) return k == 1 ? 0.5 : 0.25;
    return kk * (kk + 2.0 * lambda - 1.0) / (4.0 * (kk + lambda) * (kk + lambda - 1.0));
}

} // namespace

zonal_geometry::zonal_geometry(std::size_t d, std::size_t degree, const field_parameters& field)
    : m_d(d), m_degree(degree), m_field(field) {
    if (d < 2 || d > 512)
        throw input_error("the zonal geometry takes d from 2 to 512, got " + std::to_string(d));
    if (degree < 2 || degree > 4096)
        throw input_error("--degree must be from 2 to 4096, got " + std::to_string(degree));
    const std::size_t nodes = degree + 1;
    const double lambda = 0.5 * static_cast<double>(d) - 1.0;
    // Golub-Welsch: the nodes are the eigenvalues of the Jacobi matrix (zero diagonal, the
    // weight is even; off-diagonal sqrt(b_k)). The weights come from the orthonormal
    // polynomials (Christoffel numbers 1 / sum_k p_k(t_i)^2), which also fill the basis.
    Eigen::VectorXd diagonal = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(nodes));
    Eigen::VectorXd sub(static_cast<Eigen::Index>(nodes - 1));
    std::vector<double> root_b(nodes + 1);
    for (std::size_t k = 1; k <= nodes; ++k)
        root_b[k] = std::sqrt(recurrence_b(k, lambda));
    for (std::size_t k = 1; k < nodes; ++k)
        sub[static_cast<Eigen::Index>(k - 1)] = root_b[k];
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver;
    solver.computeFromTridiagonal(diagonal, sub, Eigen::EigenvaluesOnly);
    m_cosines.assign(solver.eigenvalues().data(), solver.eigenvalues().data() + nodes);
    std::sort(m_cosines.begin(), m_cosines.end());

    m_basis.resize(static_cast<Eigen::Index>(nodes), static_cast<Eigen::Index>(nodes));
    m_derivative.resize(static_cast<Eigen::Index>(nodes), static_cast<Eigen::Index>(nodes));
    m_weights.assign(nodes, 0.0);
    for (std::size_t i = 0; i < nodes; ++i) {
        double t = m_cosines[i];
        // One Newton step on p_{L+1}(t) = 0 from the eigenvalue polishes the node to round-off.
        for (int pass = 0; pass < 2; ++pass) {
            double p_prev = 0.0, p = 1.0, dp_prev = 0.0, dp = 0.0;
            for (std::size_t k = 0; k < nodes; ++k) {
                const double b_prev = k == 0 ? 0.0 : root_b[k];
                const double p_next = (t * p - b_prev * p_prev) / root_b[k + 1];
                const double dp_next = (p + t * dp - b_prev * dp_prev) / root_b[k + 1];
                p_prev = p;
                p = p_next;
                dp_prev = dp;
                dp = dp_next;
            }
            if (pass == 0 && dp != 0.0 && std::isfinite(p / dp)) t -= p / dp;
        }
        m_cosines[i] = t;
        double p_prev = 0.0, p = 1.0, dp_prev = 0.0, dp = 0.0, sum = 0.0;
        for (std::size_t k = 0; k < nodes; ++k) {
            m_basis(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(i)) = p;
            m_derivative(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(i)) = dp;
            sum += p * p;
            const double b_prev = k == 0 ? 0.0 : root_b[k];
            const double p_next = (t * p - b_prev * p_prev) / root_b[k + 1];
            const double dp_next = (p + t * dp - b_prev * dp_prev) / root_b[k + 1];
            p_prev = p;
            p = p_next;
            dp_prev = dp;
            dp = dp_next;
        }
        m_weights[i] = 1.0 / sum;
        if (!std::isfinite(sum) || !(m_weights[i] > 1e-300))
            throw input_error("--degree " + std::to_string(degree) +
                              " is too high for d = " + std::to_string(d) +
                              ": the outer Gauss nodes' weights underflow; take a lower degree");
    }
    // The Christoffel numbers of a normalised weight sum to 1; renormalising removes the
    // nodes' last rounding from the mass.
    double total = 0.0;
    for (const double w : m_weights)
        total += w;
    for (double& w : m_weights)
        w /= total;

    m_points.assign(nodes * d, 0.0);
    for (std::size_t i = 0; i < nodes; ++i) {
        const double t = m_cosines[i];
        m_points[i * d] = std::sqrt(std::max(0.0, 1.0 - t * t));
        m_points[i * d + d - 1] = t;
        if (d == 2) m_points[i * d] = std::sqrt(std::max(0.0, 1.0 - t * t));
    }
    m_ratios = kernel_ratios(field.beta, d, degree + 1);
    m_radial = radial_kernel_ratios(field.beta, d, m_ratios, degree);
    const auto n = static_cast<Eigen::Index>(nodes);
    m_coefficients.resize(n);
    m_z.resize(n);
    m_dz.resize(n);
    m_r.resize(n);
    m_along.resize(n);
    m_filtered.resize(n);
    m_flux.resize(n);
}

void zonal_geometry::coefficients(const double* rho, double* out) const {
    const std::size_t nodes = size();
    for (std::size_t k = 0; k < nodes; ++k) {
        double sum = 0.0;
        for (std::size_t i = 0; i < nodes; ++i)
            sum += m_weights[i] * rho[i] *
                   m_basis(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(i));
        out[k] = sum;
    }
}

void zonal_geometry::nodal_density(const double* state, double* rho) const {
    const auto n = static_cast<Eigen::Index>(size());
    Eigen::Map<Eigen::VectorXd>(rho, n).noalias() =
        m_basis.transpose() * Eigen::Map<const Eigen::VectorXd>(state, n);
}

void zonal_geometry::state_from_nodal(const double* rho, double* state) const {
    coefficients(rho, state);
}

double zonal_geometry::relative_minimum(const double* rho) const {
    // The nodes that carry the density: weight at least 1e-12 of the largest. Beyond them
    // (large d) a node's p_k reach 1e6 and more, and its value is the coefficients' round-off
    // amplified, on a weight too small to matter to any integral.
    const double top_weight = *std::max_element(m_weights.begin(), m_weights.end());
    double low = std::numeric_limits<double>::infinity(), high = 0.0;
    for (std::size_t i = 0; i < size(); ++i) {
        if (m_weights[i] < 1e-12 * top_weight) continue;
        low = std::min(low, rho[i]);
        high = std::max(high, rho[i]);
    }
    return high > 0.0 ? low / high : low;
}

double zonal_geometry::state_tail(const double* state) {
    double top = 0.0;
    for (std::size_t k = (2 * m_degree) / 3 + 1; k <= m_degree; ++k)
        top = std::max(top, std::abs(state[k]));
    return top / std::abs(state[0]);
}

void zonal_geometry::rate(const double* state, double t, double* rate) {
    // Weak form: d f_m/dt = integral rho g(t) p_m'(t) (1 - t^2) dsigma, with the velocity
    // X = g grad t, g = (1/beta) Z'/Z / s and Z = sum_k (w_k/w_0) f_k p_k (docs/model.md §16.3).
    const std::size_t nodes = size();
    const auto n = static_cast<Eigen::Index>(nodes);
    const Eigen::Map<const Eigen::VectorXd> coefficients(state, n);
    m_r.noalias() = m_basis.transpose() * coefficients; // rho at the nodes
    const Eigen::Map<const Eigen::VectorXd> ratios(m_ratios.data(), n);
    m_filtered = coefficients.cwiseProduct(ratios);
    m_z.noalias() = m_basis.transpose() * m_filtered;
    m_dz.noalias() = m_derivative.transpose() * m_filtered;
    const bool needs_norm = m_field.scheme.id == scheme::ngpt;
    if (needs_norm) {
        const Eigen::Map<const Eigen::VectorXd> radial(m_radial.data(), n);
        m_filtered = coefficients.cwiseProduct(radial);
        m_along.noalias() = m_basis.transpose() * m_filtered;
    }
    const double inv_beta = 1.0 / m_field.beta;
    for (std::size_t i = 0; i < nodes; ++i) {
        const auto ii = static_cast<Eigen::Index>(i);
        const double c = m_cosines[i], sin2 = 1.0 - c * c;
        const double g = inv_beta * m_dz[ii] / m_z[ii];
        double norm = 0.0;
        if (needs_norm) {
            const double along = m_along[ii] / m_z[ii];
            norm = std::sqrt(along * along + g * g * sin2);
        }
        m_flux[ii] = m_weights[i] * m_r[ii] * g * inverse_speed(m_field, t, norm) * sin2;
    }
    Eigen::Map<Eigen::VectorXd> out(rate, n);
    out.noalias() = m_derivative * m_flux;
    out[0] = 0.0; // p_0' = 0: the mass does not change
}

void zonal_geometry::modes(const double* rho, std::size_t count, double* out) {
    // Only the zonal harmonic p_k = sqrt(N_k) G_k(x_d) of each degree is present, so the
    // squared norm of the degree-k part is f_k^2 and m_k = f_k^2 / N_k.
    coefficients(rho, m_coefficients.data());
    for (std::size_t k = 1; k <= count; ++k)
        out[k - 1] = k <= m_degree ? m_coefficients[static_cast<Eigen::Index>(k)] *
                                         m_coefficients[static_cast<Eigen::Index>(k)] /
                                         harmonic_dimension(k, m_d)
                                   : 0.0;
}

double zonal_geometry::pair_integral(const double* rho) {
    coefficients(rho, m_coefficients.data());
    double sum = 0.0;
    for (std::size_t k = 0; k <= m_degree; ++k)
        sum += m_ratios[k] * m_coefficients[static_cast<Eigen::Index>(k)] *
               m_coefficients[static_cast<Eigen::Index>(k)];
    return sum;
}

double zonal_geometry::tail(const double* rho) {
    coefficients(rho, m_coefficients.data());
    double top = 0.0;
    for (std::size_t k = (2 * m_degree) / 3 + 1; k <= m_degree; ++k)
        top = std::max(top, std::abs(m_coefficients[static_cast<Eigen::Index>(k)]));
    return top / std::abs(m_coefficients[0]);
}

std::size_t zonal_geometry::peaks(const double* rho, double floor) const {
    // Over the nodes that carry the density (relative_minimum's), in the order of t.
    const double top_weight = *std::max_element(m_weights.begin(), m_weights.end());
    std::vector<double> values;
    for (std::size_t i = 0; i < size(); ++i)
        if (m_weights[i] >= 1e-12 * top_weight) values.push_back(rho[i]);
    const std::size_t n = values.size();
    std::size_t count = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const bool above_left = i == 0 || values[i] > values[i - 1];
        const bool above_right = i + 1 == n || values[i] > values[i + 1];
        if (values[i] > floor && above_left && above_right) ++count;
    }
    return count;
}

void zonal_geometry::add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                                     double* rho) const {
    // The zonal part of white noise: one orthonormal zonal harmonic p_k per degree.
    random_source random(seed);
    const std::size_t n = size();
    for (std::size_t k = 1; k <= std::min(kmax, m_degree); ++k) {
        const double xi = random.normal();
        for (std::size_t i = 0; i < n; ++i)
            rho[i] +=
                eps * xi * m_basis(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(i));
    }
}

} // namespace nadyn::meanfield
