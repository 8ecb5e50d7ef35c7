#pragma once
// The density solver on S^2 (d = 3): the density held at the nodes of a Gauss-Legendre grid
// and moved by the Galerkin weak form of the mean-field continuity equation in the spherical
// harmonics of degree <= L (docs/model.md §16; the interface in geometry.hpp).
//
// Grid. L + 1 rings at the Gauss-Legendre colatitudes theta_r (north to south) with 2L + 2
// equispaced longitudes phi_j = 2 pi j / (2L + 2) each; node i = r (2L + 2) + j is
// x_i = (sin theta_r cos phi_j, sin theta_r sin phi_j, cos theta_r), its weight the ring's
// Gauss weight / (2 (2L + 2)) (they sum to 1). The rule integrates every polynomial of degree
// <= 2L + 1 exactly, so the products of two harmonics of degree <= L.
//
// Basis. Y_lm the complex harmonics orthonormal in L^2(sigma) (Condon-Shortley phase; sqrt(4 pi)
// times those orthonormal on the unit sphere's area), and for the real coefficients of
// add_white_noise the real orthonormal basis
//     C_l0 = Y_l0,   C_lm = sqrt(2) Re Y_lm,   S_lm = sqrt(2) Im Y_lm   (1 <= m <= l).
// a_lm = integral rho conj(Y_lm) dsigma; a_00 is the mass.
//
// The right-hand side (identity weights Q = K = V = I). With Z = (K * rho) / w_0 and
// R = the radial convolution / w_0 (funk_hecke.hpp),
//     Z = sum_lm (w_l / w_0) a_lm Y_lm,         R = sum_lm ((dw_l/dbeta) / w_0) a_lm Y_lm,
//     P_x A = grad Z / (beta Z),                <x, A> = R / Z,
//     X = P_x A / s(t, ‖A‖),                    ‖A‖^2 = <x, A>^2 + |P_x A|^2,
//     d a_lm / dt = sum_i weights_i rho_i X(x_i) . grad conj(Y_lm)(x_i)   (l >= 1; 0 at l = 0),
// and drho/dt at the nodes is the synthesis of these coefficients. Near the uniform density
// every coefficient of degree l grows at exactly lambda_l = l (l + 1) (w_l / w_0) / beta
// (growth_rates.hpp) times 1 / s. Five spherical-harmonic transforms per call (six when the
// scheme reads ‖A‖: ngpt, peri-ln), each O(L^3); libsharp's OpenMP threads run them.
#include "nadyn/meanfield/geometry.hpp"

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nadyn::meanfield {

class sphere_geometry final : public density_geometry {
  public:
    // Throws input_error for max_degree outside 2..2048 (the grid of L = 2048 holds 8.4 million
    // nodes) and for a beta that is negative or not finite. beta = 0 is allowed: the field is
    // then the limit (1/3) grad(a_1 . Y_1), the mean of y.
    sphere_geometry(std::size_t max_degree, const field_parameters& field);
    ~sphere_geometry() override;

    [[nodiscard]] std::string name() const override { return "sphere"; }
    [[nodiscard]] std::size_t dimension() const override { return 3; }
    [[nodiscard]] std::size_t max_degree() const override { return m_max_degree; }
    // L + 1 rings of 2L + 2 nodes, ring-major from the north pole.
    [[nodiscard]] std::size_t ring_count() const { return m_max_degree + 1; }
    [[nodiscard]] std::size_t ring_size() const { return 2 * m_max_degree + 2; }

    // Allocates nothing (libsharp may, inside its transforms). Z must stay > 0 at the nodes,
    // as it does for any density >= 0 of positive mass (Z is rho smoothed by a positive kernel).
    void rate(const double* rho, double t, double* drho) override;
    // m_k = sum_{m=-k..k} |a_km|^2 / (2k + 1).
    void modes(const double* rho, std::size_t count, double* out) override;
    // w_0 sum_l (w_l / w_0) sum_m |a_lm|^2, w_0 = sinh(beta) / beta (infinite beyond beta ~ 710).
    double pair_integral(const double* rho) override;
    // max_{3l > 2L, m} |a_lm| / a_00.
    double tail(const double* rho) override;
    // Strict local maxima above `floor` among the 8 neighbours of a node (longitude periodic).
    // A polar ring's nodes all surround the pole within about one grid spacing, so each is a
    // neighbour of every other node of its ring and of the three nearest of the next ring; a
    // maximum shared by several nodes of a polar ring (a bump centred on the pole is equal all
    // around it) counts once.
    [[nodiscard]] std::size_t peaks(const double* rho, double floor) const override;
    // xi from random_source(seed), drawn degree by degree (l = 1..min(kmax, L)), within a degree
    // m = 0..l, the coefficient of C_l0 first, then those of C_lm and S_lm for each m >= 1.
    void add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                         double* rho) const override;

  private:
    struct transforms; // libsharp's geometry and coefficient layout, kept out of this header
    using coefficients = std::vector<std::complex<double>>;

    // rho's coefficients (libsharp's: orthonormal on the unit sphere's area, m >= 0) into
    // m_rho_alm.
    void analyse(const double* rho);
    // sum_m |a_lm|^2 of m_rho_alm, in L^2(sigma), for l = 0..L.
    void degree_power(std::vector<double>& out) const;

    std::size_t m_max_degree;
    field_parameters m_field;
    bool m_reads_attention_norm;
    std::vector<double> m_kernel_ratios;   // w_l / w_0, l = 0..L + 1
    std::vector<double> m_gradient_scale;  // w_l / (w_0 beta), l = 0..L (its limit at beta = 0)
    std::vector<double> m_radial_ratios;   // (dw_l/dbeta) / w_0, l = 0..L
    std::unique_ptr<transforms> m_transforms;

    // Workspaces of rate(), allocated here once.
    std::vector<double> m_map;        // a copy of rho (libsharp's analysis takes a mutable map)
    std::vector<double> m_kernel_map; // Z
    std::vector<double> m_radial_map; // R (only when the scheme reads ‖A‖)
    std::vector<double> m_theta_map;  // grad Z / beta, then the flux, theta component
    std::vector<double> m_phi_map;    // the same, phi component
    coefficients m_rho_alm, m_kernel_alm, m_radial_alm, m_gradient_alm, m_curl_alm;
    std::vector<double> m_power;      // degree_power's result
};

} // namespace nadyn::meanfield
