#pragma once
// Zonal densities on S^{d-1}, any d from 2 to 512 (docs/model.md §16.3): rho(x) = f(x_d), a
// function of the cosine t = x_d to the pole e_d. With Q = K = V = I the velocity field of a
// zonal density is zonal, X = g(t) grad t, so the problem is one-dimensional: f is expanded
// in the polynomials p_k(t) orthonormal for the marginal of sigma, (1 - t^2)^{(d-3)/2} dt
// normalised (p_k = sqrt(N_k) G_k, G_k the Gegenbauer polynomial with G_k(1) = 1), held at the
// L + 1 Gauss nodes of that weight, and the attention is diagonal in them (Funk-Hecke).
#include "nadyn/meanfield/geometry.hpp"

#include <Eigen/Core>

namespace nadyn::meanfield {

class zonal_geometry final : public density_geometry {
  public:
    // d from 2 to 512, degree L from 2 (L + 1 nodes); input_error when the outer nodes'
    // weights underflow at this d and L.
    zonal_geometry(std::size_t d, std::size_t degree, const field_parameters& field);

    [[nodiscard]] std::string name() const override { return "zonal"; }
    [[nodiscard]] std::size_t dimension() const override { return m_d; }
    [[nodiscard]] std::size_t max_degree() const override { return m_degree; }
    // The nodes' cosines t_i = x_d, ascending.
    [[nodiscard]] const std::vector<double>& cosines() const { return m_cosines; }

    // The state is the coefficients f_k (k = 0..L): at large d the outer nodes' p_k are huge
    // and nodal values there would amplify round-off (docs/model.md §16.3).
    [[nodiscard]] bool state_is_nodal() const override { return false; }
    void nodal_density(const double* state, double* rho) const override;
    void state_from_nodal(const double* rho, double* state) const override;
    [[nodiscard]] double relative_minimum(const double* rho) const override;
    double state_tail(const double* state) override;
    void rate(const double* state, double t, double* rate) override;
    void modes(const double* rho, std::size_t count, double* out) override;
    double pair_integral(const double* rho) override;
    double tail(const double* rho) override;
    [[nodiscard]] std::size_t peaks(const double* rho, double floor) const override;
    void add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                         double* rho) const override;

    // f_k = integral rho p_k dsigma, k = 0..L.
    void coefficients(const double* rho, double* out) const;

  private:
    using matrix_type = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    std::size_t m_d, m_degree;
    field_parameters m_field;
    std::vector<double> m_cosines;
    matrix_type m_basis;      // (L+1) x nodes: p_k(t_i)
    matrix_type m_derivative; // (L+1) x nodes: p_k'(t_i)
    std::vector<double> m_ratios, m_radial;
    Eigen::VectorXd m_coefficients, m_z, m_dz, m_r, m_flux, m_along, m_filtered;
};

} // namespace nadyn::meanfield
