// The circle's and the zonal geometry's right-hand side against the mean-field theory:
// the linear growth rates of docs/model.md §13 (exact in the Galerkin scheme up to the
// O(eps) nonlinear remainder), mass conservation, the uniform density's stationarity, and
// the observables against direct quadratures.
#include "nadyn/meanfield/circle.hpp"
#include "nadyn/meanfield/zonal.hpp"
#include "nadyn/model/growth_rates.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <vector>

using namespace nadyn;
using namespace nadyn::meanfield;

namespace {

field_parameters field(double beta, scheme id = scheme::post_ln) {
    field_parameters f;
    f.beta = beta;
    f.scheme.id = id;
    f.scheme.alpha = 1.0;
    return f;
}

double weighted_sum(const density_geometry& g, const std::vector<double>& values) {
    double s = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i)
        s += g.weights()[i] * values[i];
    return s;
}

// The rate of the density at the nodes, whatever the geometry's state (the zonal geometry
// integrates coefficients).
void nodal_rate(density_geometry& g, const std::vector<double>& rho, double t,
                std::vector<double>& drho) {
    std::vector<double> state(g.state_size()), rate(g.state_size());
    g.state_from_nodal(rho.data(), state.data());
    g.rate(state.data(), t, rate.data());
    g.nodal_density(rate.data(), drho.data()); // linear: the rate's nodal values
}

// The coefficient on `mode` (orthonormal in L^2(sigma)) of the rate at 1 + eps mode, as a
// central difference in eps: the linear rate up to O(eps^2) (the quadratic term cancels).
double rate_along(density_geometry& g, const std::vector<double>& mode, double eps,
                  double t = 0.0) {
    std::vector<double> rho(g.size()), drho(g.size()), product(g.size());
    double result = 0.0;
    for (const double sign : {1.0, -1.0}) {
        for (std::size_t i = 0; i < g.size(); ++i)
            rho[i] = 1.0 + sign * eps * mode[i];
        nodal_rate(g, rho, t, drho);
        for (std::size_t i = 0; i < g.size(); ++i)
            product[i] = drho[i] * mode[i];
        result += sign * weighted_sum(g, product) / (2.0 * eps);
    }
    return result;
}

// |measured - expected| within 1e-8 relative, or 1e-12 absolute for the modes whose rate is
// itself at round-off (lambda_20 at beta = 1 is 1e-35).
void check_rate(double measured, double expected) {
    CHECK(std::abs(measured - expected) <= 1e-8 * std::abs(expected) + 1e-12);
}

} // namespace

TEST_CASE("circle: each Fourier mode grows at lambda_k = k^2 I_k / (beta I_0)") {
    for (const double beta : {1.0, 5.0, 20.0}) {
        circle_geometry g(256, field(beta));
        for (const std::size_t k : {1u, 2u, 3u, 7u, 40u}) {
            for (const bool sine : {false, true}) {
                std::vector<double> mode(g.size());
                for (std::size_t j = 0; j < g.size(); ++j) {
                    const double theta = std::atan2(g.points()[2 * j + 1], g.points()[2 * j]);
                    mode[j] =
                        std::numbers::sqrt2 * (sine ? std::sin(k * theta) : std::cos(k * theta));
                }
                CAPTURE(beta);
                CAPTURE(k);
                const double expected = growth_rate(k, beta, 2, attention_kind::softmax);
                check_rate(rate_along(g, mode, 1e-5), expected);
            }
        }
    }
}

TEST_CASE("zonal: each degree grows at lambda_k on S^{d-1}") {
    for (const std::size_t d : {2u, 3u, 5u, 64u})
        for (const double beta : {1.0, 5.0, 20.0}) {
            zonal_geometry g(d, 48, field(beta));
            for (const std::size_t k : {1u, 2u, 3u, 6u, 20u}) {
                std::vector<double> coefficients(g.size()), mode(g.size());
                // p_k at the nodes: synthesise the unit coefficient vector.
                std::vector<double> delta(g.size(), 0.0);
                for (std::size_t i = 0; i < g.size(); ++i) {
                    // p_k(t_i) = sqrt(N_k) G_k(t_i), G_k by its recurrence (docs/model.md §5).
                    const double t = g.cosines()[i];
                    double prev = 1.0, cur = t;
                    const double dd = static_cast<double>(d);
                    for (std::size_t m = 1; m < k; ++m) {
                        const double mm = static_cast<double>(m);
                        const double next =
                            ((2 * mm + dd - 2) * t * cur - mm * prev) / (mm + dd - 2);
                        prev = cur;
                        cur = next;
                    }
                    const double nk =
                        k == 0
                            ? 1.0
                            : (d == 2 ? 2.0
                                      : (2.0 * k + dd - 2.0) *
                                            std::exp(std::lgamma(k + dd - 2.0) -
                                                     std::lgamma(k + 1.0) - std::lgamma(dd - 1.0)));
                    mode[i] = std::sqrt(nk) * cur;
                }
                CAPTURE(d);
                CAPTURE(beta);
                CAPTURE(k);
                const double expected = growth_rate(k, beta, d, attention_kind::softmax);
                check_rate(rate_along(g, mode, 1e-5), expected);
            }
        }
}

TEST_CASE("the schemes' clocks divide the rates") {
    const double beta = 4.0, t = 3.0;
    circle_geometry post(128, field(beta, scheme::post_ln));
    circle_geometry sqrt_scaling(128, field(beta, scheme::sqrt_scaling));
    circle_geometry ngpt(128, field(beta, scheme::ngpt));
    std::vector<double> mode(128);
    for (std::size_t j = 0; j < 128; ++j)
        mode[j] = std::numbers::sqrt2 * std::cos(3.0 * 2.0 * std::numbers::pi * j / 128.0);
    const double lambda = rate_along(post, mode, 1e-5, t);
    check_rate(lambda, growth_rate(3, beta, 2, attention_kind::softmax));
    check_rate(rate_along(sqrt_scaling, mode, 1e-5, t), lambda / std::sqrt(t + 1.0));
    const double a = uniform_alignment(beta, 2, attention_kind::softmax);
    check_rate(rate_along(ngpt, mode, 1e-5, t), lambda / a);
}

TEST_CASE("mass is conserved and the uniform density is stationary") {
    circle_geometry circle(512, field(3.0));
    zonal_geometry zonal(5, 64, field(3.0));
    for (density_geometry* g :
         {static_cast<density_geometry*>(&circle), static_cast<density_geometry*>(&zonal)}) {
        std::vector<double> rho(g->size(), 1.0), drho(g->size());
        nodal_rate(*g, rho, 0.0, drho);
        for (const double v : drho)
            CHECK(std::abs(v) < 1e-13);
        // A smooth, far from uniform density: a von Mises bump at a generic point.
        const std::size_t d = g->dimension();
        for (std::size_t i = 0; i < g->size(); ++i) {
            const double* x = &g->points()[i * d];
            rho[i] = std::exp(4.0 * (0.6 * x[0] + 0.8 * x[d - 1]));
        }
        nodal_rate(*g, rho, 0.0, drho);
        CHECK(std::abs(weighted_sum(*g, drho)) < 1e-13 * weighted_sum(*g, rho));
    }
}

TEST_CASE("modes and the pair integral against direct quadrature") {
    const double beta = 2.5;
    circle_geometry g(64, field(beta));
    std::vector<double> rho(64);
    for (std::size_t j = 0; j < 64; ++j) {
        const double theta = 2.0 * std::numbers::pi * j / 64.0;
        rho[j] = 1.0 + 0.5 * std::cos(2 * theta) + 0.3 * std::sin(3 * theta + 0.4);
    }
    std::vector<double> modes(5);
    g.modes(rho.data(), 5, modes.data());
    double pair = 0.0;
    for (std::size_t k = 1; k <= 5; ++k) {
        double direct = 0.0;
        for (std::size_t i = 0; i < 64; ++i)
            for (std::size_t j = 0; j < 64; ++j) {
                const double angle = 2.0 * std::numbers::pi * (double(i) - double(j)) / 64.0;
                direct += rho[i] * rho[j] * std::cos(k * angle) / (64.0 * 64.0);
            }
        CHECK(std::abs(modes[k - 1] - direct) < 1e-15);
    }
    for (std::size_t i = 0; i < 64; ++i)
        for (std::size_t j = 0; j < 64; ++j) {
            const double angle = 2.0 * std::numbers::pi * (double(i) - double(j)) / 64.0;
            pair += rho[i] * rho[j] * std::exp(beta * std::cos(angle)) / (64.0 * 64.0);
        }
    CHECK(g.pair_integral(rho.data()) * std::cyl_bessel_i(0.0, beta) ==
          doctest::Approx(pair).epsilon(1e-12));
    CHECK(g.peaks(rho.data(), 1.0) >= 2);
    CHECK(g.tail(rho.data()) < 1e-14);
}

TEST_CASE("zonal: modes against the double quadrature of G_k(<x, y>) over the sphere") {
    // For zonal rho on S^2, m_k = (1/N_k) f_k^2 equals integral integral P_k(<x,y>) rho rho;
    // with the addition theorem averaged over azimuths, <x,y> -> P_k(t) P_k(s) for Legendre.
    const double beta = 1.0;
    zonal_geometry g(3, 24, field(beta));
    std::vector<double> rho(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
        rho[i] = std::exp(2.0 * g.cosines()[i]);
    std::vector<double> modes(4);
    g.modes(rho.data(), 4, modes.data());
    for (std::size_t k = 1; k <= 4; ++k) {
        double single = 0.0;
        for (std::size_t i = 0; i < g.size(); ++i)
            single += g.weights()[i] * rho[i] * std::legendre(k, g.cosines()[i]);
        CHECK(modes[k - 1] == doctest::Approx(single * single).epsilon(1e-12));
    }
}

TEST_CASE("circle: general weights by quadrature agree with the convolution") {
    // Q = 2I, K = V = I at beta is the identity's kernel at 2 beta: the trapezoidal path
    // (any 2 x 2 weights) against the FFT path, on a smooth density.
    attention_weights weights;
    weights.heads.front().Q = 2.0 * matrix::Identity(2, 2);
    weights.heads.front().K = matrix::Identity(2, 2);
    weights.heads.front().V = matrix::Identity(2, 2);
    circle_geometry quadrature(128, field(1.5), weights);
    circle_geometry convolution(128, field(3.0));
    std::vector<double> rho(128), a(128), b(128);
    for (std::size_t j = 0; j < 128; ++j) {
        const double theta = 2.0 * std::numbers::pi * double(j) / 128.0;
        rho[j] = std::exp(1.5 * std::cos(theta - 0.4)) + 0.3 * std::sin(2 * theta);
    }
    quadrature.rate(rho.data(), 0.0, a.data());
    convolution.rate(rho.data(), 0.0, b.data());
    for (std::size_t j = 0; j < 128; ++j)
        CHECK(std::abs(a[j] - b[j]) < 1e-12);
}
