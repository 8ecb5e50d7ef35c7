// Mean-field growth rates of the uniform measure (docs/model.md §13) against a direct
// numerical linearisation that never uses the Bessel form:
// - on the circle, n equally spaced tokens displaced by +-eps sin(k phi) through the
//   library's attention kernel: the angular velocity is lambda_k eps sin(k phi) to first
//   order (the displacement mode grows at lambda_k), and the trapezoidal rule of equally
//   spaced points is spectrally exact for these periodic integrands;
// - on S^2, the velocity field of a weighted Gauss-Legendre x trapezoid quadrature of the
//   measure sigma (1 + eps P_k(<y, e_3>)), written out here: first order in eps it is
//   lambda_k / (k (k+1)) times the gradient of P_k(<x, e_3>);
// - k_max(beta) against the argmax of rates from a trapezoidal quadrature of the Fourier
//   coefficients of exp(beta cos phi), and Bruno-Pasqualotto-Agazzi's beta = 5 -> 3.
#include "nadyn/model/growth_rates.hpp"
#include "nadyn/model/attention.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

using namespace nadyn;

namespace {

constexpr double pi = std::numbers::pi;

// lambda_k from the particles on the circle: symmetric difference in eps, so the error is
// O(eps^2) and the first-order coefficient is read off by projecting on sin(k phi).
double circle_rate(std::size_t k, double beta, attention_kind kind) {
    const std::size_t n = 2048;
    const double eps = 1e-4;
    attention_kernel kernel(n, 2);
    double projected[2] = {0.0, 0.0};
    for (int side = 0; side < 2; ++side) {
        const double sign = side == 0 ? 1.0 : -1.0;
        std::vector<double> theta(2 * n), a(2 * n);
        for (std::size_t j = 0; j < n; ++j) {
            const double phi0 = 2.0 * pi * static_cast<double>(j) / static_cast<double>(n);
            const double phi = phi0 + sign * eps * std::sin(static_cast<double>(k) * phi0);
            theta[2 * j] = std::cos(phi);
            theta[2 * j + 1] = std::sin(phi);
        }
        kernel.compute(theta.data(), attention_weights{},
                       {beta, false, precision::double_precision, 1, kind}, a.data());
        for (std::size_t j = 0; j < n; ++j) {
            const double phi0 = 2.0 * pi * static_cast<double>(j) / static_cast<double>(n);
            // d phi/dt: the tangent part of A along (-sin phi, cos phi).
            const double velocity = -theta[2 * j + 1] * a[2 * j] + theta[2 * j] * a[2 * j + 1];
            projected[side] += velocity * std::sin(static_cast<double>(k) * phi0);
        }
    }
    // sum_j sin^2(k phi_j) = n / 2 for 0 < k < n / 2.
    return (projected[0] - projected[1]) / (2.0 * eps) / (static_cast<double>(n) / 2.0);
}

// Legendre P_M and its derivative by the three-term recurrence.
std::pair<double, double> legendre(std::size_t m, double x) {
    double p0 = 1.0, p1 = x;
    if (m == 0) return {1.0, 0.0};
    for (std::size_t l = 1; l < m; ++l) {
        const double p2 = ((2.0 * l + 1.0) * x * p1 - l * p0) / (l + 1.0);
        p0 = p1;
        p1 = p2;
    }
    return {p1, m * (x * p1 - p0) / (x * x - 1.0)};
}

// lambda_k on S^2 from the weighted quadrature of sigma (1 + eps P_k(y_3)), at the point x.
double sphere_rate(std::size_t k, double beta, attention_kind kind) {
    const std::size_t m = 96, m_phi = 192;
    std::vector<double> nodes(m), weights(m);
    for (std::size_t i = 0; i < m; ++i) {
        double x = std::cos(pi * (i + 0.75) / (m + 0.5));
        for (int it = 0; it < 100; ++it) {
            const auto [p, dp] = legendre(m, x);
            const double step = p / dp;
            x -= step;
            if (std::abs(step) < 1e-16) break;
        }
        const double dp = legendre(m, x).second;
        nodes[i] = x;
        weights[i] = 1.0 / ((1.0 - x * x) * dp * dp); // 2/((1-x^2) P'^2), halved: sigma's mass 1
    }
    const double x[3] = {0.6 * std::cos(0.4), 0.6 * std::sin(0.4), 0.8}; // a generic point
    const double eps = 1e-4;
    double component[2] = {0.0, 0.0};
    // The gradient of P_k(<x, e_3>) on the sphere: P_k'(x_3) P_x(e_3).
    const double tangent[3] = {-x[2] * x[0], -x[2] * x[1], 1.0 - x[2] * x[2]};
    for (int side = 0; side < 2; ++side) {
        const double sign = side == 0 ? 1.0 : -1.0;
        double num[3] = {0.0, 0.0, 0.0}, z = 0.0;
        for (std::size_t i = 0; i < m; ++i) {
            const double t = nodes[i], s = std::sqrt(1.0 - t * t);
            const double density = 1.0 + sign * eps * legendre(k, t).first;
            for (std::size_t p = 0; p < m_phi; ++p) {
                const double phi = 2.0 * pi * static_cast<double>(p) / static_cast<double>(m_phi);
                const double y[3] = {s * std::cos(phi), s * std::sin(phi), t};
                const double w = weights[i] / static_cast<double>(m_phi) * density *
                                 std::exp(beta * (x[0] * y[0] + x[1] * y[1] + x[2] * y[2]));
                for (int c = 0; c < 3; ++c)
                    num[c] += w * y[c];
                z += w;
            }
        }
        const double scale = kind == attention_kind::softmax ? 1.0 / z : 1.0;
        // The tangent part's component along P_x(e_3) (<x, tangent> = 0, so projecting A on
        // the tangent direction is projecting its tangent part).
        for (int c = 0; c < 3; ++c)
            component[side] += scale * num[c] * tangent[c];
    }
    const double tangent_sq =
        tangent[0] * tangent[0] + tangent[1] * tangent[1] + tangent[2] * tangent[2];
    const double first_order = (component[0] - component[1]) / (2.0 * eps) / tangent_sq;
    // first_order = lambda_k / (k (k+1)) * P_k'(x_3)
    return first_order * static_cast<double>(k * (k + 1)) / legendre(k, x[2]).second;
}

} // namespace

TEST_CASE("growth rates on the circle: the particles' linearisation against k^2 I_k(beta)/beta") {
    for (const double beta : {2.0, 5.0, 20.0})
        for (std::size_t k = 1; k <= 5; ++k)
            for (const auto kind : {attention_kind::softmax, attention_kind::unnormalized}) {
                CAPTURE(beta);
                CAPTURE(k);
                const double predicted = growth_rate(k, beta, 2, kind);
                CHECK(circle_rate(k, beta, kind) == doctest::Approx(predicted).epsilon(1e-6));
            }
    // The circle's form itself: lambda_k = k^2 I_k(beta) / beta (/ I_0 for softmax).
    CHECK(growth_rate(3, 5.0, 2, attention_kind::unnormalized) ==
          doctest::Approx(9.0 * std::cyl_bessel_i(3.0, 5.0) / 5.0).epsilon(1e-14));
}

TEST_CASE("growth rates on S^2: a quadrature of the linearised velocity field") {
    for (const double beta : {2.0, 5.0, 20.0})
        for (std::size_t k = 1; k <= 5; ++k)
            for (const auto kind : {attention_kind::softmax, attention_kind::unnormalized}) {
                CAPTURE(beta);
                CAPTURE(k);
                const double predicted = growth_rate(k, beta, 3, kind);
                CHECK(sphere_rate(k, beta, kind) == doctest::Approx(predicted).epsilon(1e-6));
            }
}

TEST_CASE("the fastest mode k_max(beta)") {
    CHECK(fastest_mode(5.0, 2) == 3); // Bruno, Pasqualotto, Agazzi: three clusters at beta = 5
    for (const double beta : {0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0}) {
        // k^2 times the k-th Fourier coefficient of exp(beta cos phi) by the trapezoidal rule.
        std::size_t best = 0;
        double best_rate = -1.0;
        for (std::size_t k = 1; k <= 60; ++k) {
            const std::size_t points = 4096;
            double coefficient = 0.0;
            for (std::size_t p = 0; p < points; ++p) {
                const double phi = 2.0 * pi * static_cast<double>(p) / static_cast<double>(points);
                coefficient +=
                    std::exp(beta * std::cos(phi)) * std::cos(static_cast<double>(k) * phi);
            }
            const double rate = static_cast<double>(k * k) * coefficient;
            if (rate > best_rate) {
                best_rate = rate;
                best = k;
            }
        }
        CAPTURE(beta);
        CHECK(fastest_mode(beta, 2) == best);
    }
    // k_max grows like sqrt(2 beta): 10 at beta = 50.
    CHECK(fastest_mode(50.0, 2) == 10);
}

TEST_CASE("the clocks of the schemes at the uniform state") {
    const double beta = 5.0;
    const double a = uniform_alignment(beta, 2, attention_kind::softmax);
    CHECK(a == doctest::Approx(std::cyl_bessel_i(1.0, beta) / std::cyl_bessel_i(0.0, beta)));
    CHECK(uniform_clock({scheme::post_ln}, 3.0, beta, 2, attention_kind::softmax) == 3.0);
    CHECK(uniform_clock({scheme::sqrt_scaling}, 3.0, beta, 2, attention_kind::softmax) ==
          doctest::Approx(2.0));
    CHECK(uniform_clock({scheme::pre_ln}, 3.0, beta, 2, attention_kind::softmax) ==
          doctest::Approx(std::log(1.0 + 3.0 * a) / a));
    CHECK(uniform_clock({scheme::ngpt, 0.5}, 3.0, beta, 2, attention_kind::softmax) ==
          doctest::Approx(1.5 / a));
    CHECK_THROWS_AS(uniform_clock({scheme::no_norm}, 1.0, beta, 2, attention_kind::softmax),
                    input_error);
    CHECK_THROWS_AS(growth_rate(0, beta, 2, attention_kind::softmax), input_error);
    CHECK_THROWS_AS(growth_rate(1, 0.0, 2, attention_kind::softmax), input_error);
}

TEST_CASE("the own-weight factor of n uniform tokens: w_0 from a quadrature of exp(beta t)") {
    // w_0 = integral exp(beta t) (1 - t^2)^{(d-3)/2} dt / integral (1 - t^2)^{(d-3)/2} dt over
    // [-1, 1] (the density of <x, y> for independent uniform x, y on S^{d-1}), by Simpson's
    // rule, never through the Bessel form the library uses.
    auto w0_quadrature = [](double beta, std::size_t d) {
        const std::size_t intervals = 200000;
        const double h = 2.0 / static_cast<double>(intervals);
        double weighted = 0.0, mass = 0.0;
        for (std::size_t i = 0; i <= intervals; ++i) {
            const double t = -1.0 + h * static_cast<double>(i);
            const double simpson = (i == 0 || i == intervals) ? 1.0 : (i % 2 ? 4.0 : 2.0);
            const double density =
                std::pow(std::max(0.0, 1.0 - t * t), (static_cast<double>(d) - 3.0) / 2.0);
            // exp(beta (t - 1)): the factor's e^beta / w_0 without overflow.
            weighted += simpson * std::exp(beta * (t - 1.0)) * density;
            mass += simpson * density;
        }
        return weighted / mass; // w_0 e^{-beta}
    };
    struct point {
        std::size_t n;
        double beta;
        std::size_t d;
    };
    // The study's points (studies/growth_rates): the circle barely feels it, S^15 and S^63 do.
    for (const point p : {point{2048, 20.0, 3}, point{512, 5.0, 16}, point{2048, 5.0, 64},
                          point{2048, 20.0, 16}, point{2048, 20.0, 64}}) {
        CAPTURE(p.n);
        CAPTURE(p.beta);
        CAPTURE(p.d);
        const double others = static_cast<double>(p.n - 1);
        const double scaled = w0_quadrature(p.beta, p.d);
        const double expected = others * scaled / (others * scaled + 1.0);
        CHECK(own_weight_factor(p.n, p.beta, p.d, attention_kind::softmax) ==
              doctest::Approx(expected).epsilon(1e-6));
    }
    // The values the study's quick form measured on one seed of 512 tokens (0.879, 0.807).
    CHECK(own_weight_factor(512, 5.0, 16, attention_kind::softmax) ==
          doctest::Approx(0.8794).epsilon(1e-3));
    CHECK(own_weight_factor(512, 5.0, 64, attention_kind::softmax) ==
          doctest::Approx(0.8071).epsilon(1e-3));
    // Unnormalised attention has no denominator: only the n - 1 others move a token.
    CHECK(own_weight_factor(100, 5.0, 3, attention_kind::unnormalized) == 0.99);
    CHECK_THROWS_AS(own_weight_factor(1, 5.0, 3, attention_kind::softmax), input_error);
}
