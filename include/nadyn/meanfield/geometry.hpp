#pragma once
// A density on the sphere S^{d-1} held at the nodes of a quadrature grid, and the mean-field
// velocity field of attention acting on it (docs/model.md §16):
//
//     d rho/dt = -div_S( rho X[rho] ),
//     X[rho](x) = P_x( A(x) ) / s(t, x),
//     A(x) = integral exp(beta <Qx, Ky>) V y rho(y) dsigma(y) / integral exp(beta <Qx, Ky>) rho(y)
//     dsigma(y)
//
// rho is the density with respect to the uniform probability measure sigma, so the uniform
// density is rho = 1 and the mass is integral rho dsigma = sum_i weights_i rho_i.
//
// Each geometry discretises the weak form d/dt <rho, Y> = <rho X, grad Y> for every basis
// function Y of its spectral space (Fourier modes on S^1, spherical harmonics on S^2,
// zonal Gegenbauer polynomials on S^{d-1}) with a quadrature that is exact for the products
// of two basis functions. So the mass (Y = 1, grad Y = 0) is conserved to round-off, and the
// linearisation around the uniform density is exact: every degree k grows at lambda_k.
#include "nadyn/model/scheme.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace nadyn::meanfield {

// The speed divisor s(t, x) of the schemes whose divisor does not read a token's magnitude
// (docs/model.md §16.1): post-ln (1), sqrt-scaling (sqrt(t + 1)), ngpt (‖A(x)‖ / alpha), and
// mix-ln before its switch (1).
struct field_parameters {
    double beta = 1.0;
    scheme_parameters scheme{scheme::post_ln};
};

// 1 / s(t, x) from ‖A(x)‖ (only ngpt reads it).
inline double inverse_speed(const field_parameters& p, double t, double attention_norm) {
    return rates(p.scheme, t, t, 1.0, 0.0, attention_norm).inverse_speed;
}

class density_geometry {
  public:
    virtual ~density_geometry() = default;
    density_geometry() = default;
    density_geometry(const density_geometry&) = delete;
    density_geometry& operator=(const density_geometry&) = delete;

    // "circle", "sphere" or "zonal".
    [[nodiscard]] virtual std::string name() const = 0;
    // d: the sphere is S^{d-1} in R^d.
    [[nodiscard]] virtual std::size_t dimension() const = 0;
    // The highest degree of the spectral space (Fourier: N/2 - 1 resolved modes; harmonics: L).
    [[nodiscard]] virtual std::size_t max_degree() const = 0;
    // The nodes, size() x dimension() row-major (for the zonal geometry, points on the
    // great half-circle through e_d and e_1 at each node's polar angle).
    [[nodiscard]] const std::vector<double>& points() const { return m_points; }
    // Quadrature weights of sigma at the nodes: sum_i weights_i f(x_i) = integral f dsigma for
    // the functions the grid resolves; they sum to 1.
    [[nodiscard]] const std::vector<double>& weights() const { return m_weights; }
    [[nodiscard]] std::size_t size() const { return m_weights.size(); }

    // The integrated state: the density at the nodes (size() values), followed by what else a
    // geometry carries (the kinetic form of the schemes with a magnitude: log r at the nodes);
    // or, where nodal values are ill-conditioned, the density's coefficients (state_is_nodal).
    [[nodiscard]] virtual bool state_is_nodal() const { return true; }
    // The density at the nodes from a state, and the state of a density at the nodes.
    virtual void nodal_density(const double* state, double* rho) const {
        std::copy(state, state + size(), rho);
    }
    virtual void state_from_nodal(const double* rho, double* state) const {
        std::copy(rho, rho + size(), state);
    }
    // min rho / max rho over the nodes that carry the density (every node by default).
    [[nodiscard]] virtual double relative_minimum(const double* rho) const {
        const auto [low, high] = std::minmax_element(rho, rho + size());
        return *high > 0.0 ? *low / *high : *low;
    }
    [[nodiscard]] virtual std::size_t state_size() const { return size(); }
    // Appends to a density the rest of its starting state (nothing by default).
    virtual void extend_state(std::vector<double>& /*state*/) const {}
    // The rate of the whole state (state_size() values) at time t.
    virtual void rate(const double* state, double t, double* rate) = 0;
    // The resolution diagnostic of the whole state (the density's tail by default).
    virtual double state_tail(const double* state) { return tail(state); }
    // The mass-weighted mean magnitude integral r rho dsigma, for a state that carries one;
    // NaN otherwise.
    [[nodiscard]] virtual double mean_magnitude(const double* /*state*/) const {
        return std::numeric_limits<double>::quiet_NaN();
    }

    // m_k = integral integral G_k(<x, y>) rho(x) rho(y) dsigma dsigma, k = 1..count, into out
    // (docs/model.md §5, spectral modes): the squared norm of rho's degree-k part divided by
    // N_k. 0 beyond max_degree().
    virtual void modes(const double* rho, std::size_t count, double* out) = 0;
    // integral integral exp(beta <x, y>) rho(x) rho(y) dsigma dsigma (identity Q, K) divided
    // by w_0 = integral exp(beta <x, y>) dsigma(y), which overflows where this does not.
    virtual double pair_integral(const double* rho) = 0;
    // The resolution diagnostic: the largest coefficient magnitude of rho in the top third of
    // the spectral space, relative to the mean (the degree-0 coefficient). A resolved density
    // has exponentially decaying coefficients, so this is near round-off; a density narrower
    // than the grid shows here first.
    virtual double tail(const double* rho) = 0;
    // The number of strict local maxima of rho on the grid with rho above `floor` (times the
    // mean, which is 1).
    [[nodiscard]] virtual std::size_t peaks(const double* rho, double floor) const = 0;

    // rho += eps * sum_{k=1..kmax} sum_a xi_{k,a} Y_{k,a} with xi i.i.d. standard normal from
    // `seed` and Y_{k,a} orthonormal in L^2(sigma) (the white noise whose coefficients have
    // the variance eps^2 that the empirical measure of n = 1/eps^2 uniform particles has).
    virtual void add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                                 double* rho) const = 0;

  protected:
    std::vector<double> m_points;
    std::vector<double> m_weights;
};

} // namespace nadyn::meanfield
