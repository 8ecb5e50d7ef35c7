// The density solver on S^2 against mathematics: the growth rates of the uniform density
// (docs/model.md §13), conservation of mass, rotation invariance, the spectral observables
// against direct double quadratures, and the white noise's law. The harmonics the tests use
// come from the standard library (std::sph_legendre), not from libsharp.
#include "nadyn/meanfield/sphere.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/funk_hecke.hpp"
#include "nadyn/model/growth_rates.hpp"
#include "nadyn/model/random.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

using namespace nadyn;
using namespace nadyn::meanfield;

namespace {

constexpr double pi = std::numbers::pi;

// The real harmonic orthonormal in L^2(sigma): C_l0 = Y_l0, C_lm = sqrt(2) Re Y_lm,
// S_lm = sqrt(2) Im Y_lm (sphere.hpp), at the unit vector x.
double real_harmonic(unsigned l, unsigned m, bool sine, const double* x) {
    const double theta = std::acos(std::clamp(x[2], -1.0, 1.0));
    const double phi = std::atan2(x[1], x[0]);
    const double legendre = std::sph_legendre(l, m, theta); // Y_lm(theta, 0), area-normalised
    if (m == 0) return std::sqrt(4.0 * pi) * legendre;
    return std::sqrt(8.0 * pi) * legendre * (sine ? std::sin(m * phi) : std::cos(m * phi));
}

std::vector<double> harmonic_at_nodes(const sphere_geometry& g, unsigned l, unsigned m, bool sine) {
    std::vector<double> y(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
        y[i] = real_harmonic(l, m, sine, &g.points()[3 * i]);
    return y;
}

// integral f Y dsigma by the grid's quadrature: exact when f has degree <= L.
double coefficient(const sphere_geometry& g, const std::vector<double>& f,
                   const std::vector<double>& y) {
    double sum = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i)
        sum += g.weights()[i] * f[i] * y[i];
    return sum;
}

double max_abs(const std::vector<double>& v) {
    double m = 0.0;
    for (const double x : v)
        m = std::max(m, std::abs(x));
    return m;
}

double dot(const double* x, const double* y) {
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
}

// The von Mises density exp(kappa <x, c>) / (sinh(kappa) / kappa), whose mean over sigma is 1,
// written as 2 kappa exp(kappa (<x, c> - 1)) / (1 - exp(-2 kappa)) to stay finite.
std::vector<double> von_mises(const sphere_geometry& g, const std::array<double, 3>& c,
                              double kappa) {
    std::vector<double> rho(g.size());
    const double norm = 2.0 * kappa / (1.0 - std::exp(-2.0 * kappa));
    for (std::size_t i = 0; i < g.size(); ++i)
        rho[i] = norm * std::exp(kappa * (dot(&g.points()[3 * i], c.data()) - 1.0));
    return rho;
}

field_parameters field_of(double beta, scheme id = scheme::post_ln, double alpha = 1.0) {
    field_parameters f;
    f.beta = beta;
    f.scheme.id = id;
    f.scheme.alpha = alpha;
    return f;
}

} // namespace

TEST_CASE("the grid: Gauss rings, unit points, weights of sigma") {
    const sphere_geometry g(8, field_of(1.0));
    CHECK(g.name() == "sphere");
    CHECK(g.dimension() == 3);
    CHECK(g.size() == 9 * 18);
    double total = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        total += g.weights()[i];
        CHECK(dot(&g.points()[3 * i], &g.points()[3 * i]) == doctest::Approx(1.0).epsilon(1e-15));
    }
    CHECK(total == doctest::Approx(1.0).epsilon(1e-15));
    // Exact for degree 2L + 1 = 17: the mean of z^16 is 1/17, of the degree-(8, 8) harmonic
    // squared 1.
    double moment = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i)
        moment += g.weights()[i] * std::pow(g.points()[3 * i + 2], 16);
    CHECK(moment == doctest::Approx(1.0 / 17.0).epsilon(1e-14));
    const auto y = harmonic_at_nodes(g, 8, 8, true);
    CHECK(coefficient(g, y, y) == doctest::Approx(1.0).epsilon(1e-13));
}

TEST_CASE("sizes outside 2..2048 and a bad beta are refused") {
    CHECK_THROWS_AS(sphere_geometry(1, field_of(1.0)), input_error);
    CHECK_THROWS_AS(sphere_geometry(2049, field_of(1.0)), input_error);
    CHECK_THROWS_AS(sphere_geometry(8, field_of(-1.0)), input_error);
    CHECK_THROWS_AS(sphere_geometry(8, field_of(std::nan(""))), input_error);
}

// rho = 1 +- eps Y_lm: the central difference of the two rates over 2 eps is the linearisation
// up to O(eps^2) (the quadratic part is even in eps and cancels), so the degree-l coefficient is
// lambda_l / s to far below the 1e-6 asked, and every other coefficient vanishes to the same.
TEST_CASE("linear growth rates of the uniform density") {
    struct mode {
        unsigned l, m;
        bool sine;
    };
    const std::array<mode, 5> modes_checked{
        {{1, 0, false}, {2, 1, false}, {3, 2, true}, {5, 3, false}, {7, 7, true}}};
    const double eps = 1e-7;
    const double t = 3.0; // sqrt-scaling's divisor sqrt(t + 1) = 2
    for (const double beta : {1.0, 5.0, 20.0, 1000.0, 0.0})
        for (const scheme id :
             {scheme::post_ln, scheme::sqrt_scaling, scheme::ngpt, scheme::peri_ln}) {
            if (beta == 0.0 && id != scheme::post_ln) continue;
            sphere_geometry g(12, field_of(beta, id));
            // The divisor at the uniform state (docs/model.md §13.3): ngpt's and peri-ln's
            // (r = 1) is ‖A‖ = a = w_1 / w_0.
            const double a = kernel_ratios(beta, 3, 1)[1];
            const double divisor = id == scheme::sqrt_scaling                      ? 2.0
                                   : (id == scheme::ngpt || id == scheme::peri_ln) ? a
                                                                                   : 1.0;
            if (beta > 0.0 && beta <= 700.0 && divisor == a)
                CHECK(a == doctest::Approx(uniform_alignment(beta, 3, attention_kind::softmax))
                               .epsilon(1e-13));
            for (const mode& md : modes_checked) {
                CAPTURE(beta);
                CAPTURE(info(id).name);
                CAPTURE(md.l);
                CAPTURE(md.m);
                const auto y = harmonic_at_nodes(g, md.l, md.m, md.sine);
                std::vector<double> plus(g.size()), minus(g.size()), dplus(g.size()),
                    dminus(g.size()), linear(g.size());
                for (std::size_t i = 0; i < g.size(); ++i) {
                    plus[i] = 1.0 + eps * y[i];
                    minus[i] = 1.0 - eps * y[i];
                }
                g.rate(plus.data(), t, dplus.data());
                g.rate(minus.data(), t, dminus.data());
                for (std::size_t i = 0; i < g.size(); ++i)
                    linear[i] = (dplus[i] - dminus[i]) / (2.0 * eps);
                const double l = md.l;
                // lambda_l = l (l + 1) w_l / (beta w_0); beyond beta = 700 (where
                // growth_rate refuses, w_0 overflowing) from the ratio itself, and at beta = 0
                // its limit: 2/3 at l = 1, 0 above.
                const double lambda =
                    beta == 0.0    ? (md.l == 1 ? 2.0 / 3.0 : 0.0)
                    : beta > 700.0 ? l * (l + 1.0) * kernel_ratios(beta, 3, md.l)[md.l] / beta
                                   : growth_rate(md.l, beta, 3, attention_kind::softmax);
                const double expected = lambda / divisor;
                const double got = coefficient(g, linear, y);
                if (expected != 0.0)
                    CHECK(got == doctest::Approx(expected).epsilon(1e-6).scale(0.0));
                else
                    CHECK(std::abs(got) < 1e-12);
                // The rest: linear - expected Y, every other coefficient, is ~0.
                double rest = 0.0;
                for (std::size_t i = 0; i < g.size(); ++i)
                    rest = std::max(rest, std::abs(linear[i] - got * y[i]));
                CHECK(rest <= 1e-6 * std::max(std::abs(expected), 1e-3) * max_abs(y));
            }
        }
}

TEST_CASE("mass is conserved and the uniform density is stationary") {
    for (const scheme id : {scheme::post_ln, scheme::ngpt}) {
        sphere_geometry g(24, field_of(5.0, id));
        std::vector<double> rho(g.size(), 1.0), drho(g.size());
        g.rate(rho.data(), 0.0, drho.data());
        CHECK(max_abs(drho) <= 1e-14);

        g.add_white_noise(7, 0.02, 10, rho.data()); // 120 coefficients: a smooth density
        CHECK(*std::min_element(rho.begin(), rho.end()) > 0.0);
        g.rate(rho.data(), 0.0, drho.data());
        double mass_rate = 0.0;
        for (std::size_t i = 0; i < g.size(); ++i)
            mass_rate += g.weights()[i] * drho[i];
        CAPTURE(max_abs(drho));
        CHECK(max_abs(drho) > 0.1); // the check below is not vacuous
        CHECK(std::abs(mass_rate) <= 1e-14);
    }
}

// A bump at the north pole has a zonal rate f(cos theta), band-limited to degree L, so its
// Legendre coefficients come exactly from the quadrature; the same bump centred on a generic c
// must move as f(<x, c>) at every node. The rotated density has every m, so this checks the
// m != 0 coefficients, their factor 2 and their phases. Differences come from aliasing only
// (the flux is not band-limited): about 2e-13 of the rate at L = 40 for post-ln. ngpt's flux
// carries 1 / ‖A‖, and ‖A‖ is small on the far side from the bump (the attention there averages
// directions all around), so it needs finer grids: the difference is 9e-7 at L = 40, 5e-9 at
// L = 64 and 4e-12 at L = 96, the spectral convergence of aliasing, not a defect of m != 0.
TEST_CASE("the rate commutes with rotations") {
    const double kappa = 4.0;
    for (const auto& [id, L] :
         {std::pair{scheme::post_ln, std::size_t{40}}, std::pair{scheme::ngpt, std::size_t{96}}}) {
        sphere_geometry g(L, field_of(5.0, id));
        const auto pole = von_mises(g, {0.0, 0.0, 1.0}, kappa);
        std::vector<double> drho_pole(g.size()), drho(g.size());
        g.rate(pole.data(), 0.0, drho_pole.data());

        std::vector<double> legendre(L + 1);
        for (unsigned l = 0; l <= L; ++l) {
            double sum = 0.0;
            for (std::size_t i = 0; i < g.size(); ++i)
                sum += g.weights()[i] * drho_pole[i] * std::legendre(l, g.points()[3 * i + 2]);
            legendre[l] = (2.0 * l + 1.0) * sum;
        }
        const std::array<double, 3> c{std::sin(1.1) * std::cos(0.7), std::sin(1.1) * std::sin(0.7),
                                      std::cos(1.1)};
        const auto rotated = von_mises(g, c, kappa);
        g.rate(rotated.data(), 0.0, drho.data());
        double error = 0.0;
        for (std::size_t i = 0; i < g.size(); ++i) {
            const double u = dot(&g.points()[3 * i], c.data());
            double expected = 0.0;
            for (unsigned l = 0; l <= L; ++l)
                expected += legendre[l] * std::legendre(l, u);
            error = std::max(error, std::abs(drho[i] - expected));
        }
        CAPTURE(info(id).name);
        CAPTURE(error);
        CHECK(error <= 1e-8 * max_abs(drho));
    }
}

// m_k = sum_ij w_i w_j rho_i rho_j P_k(<x_i, x_j>) and the pair integral with exp(beta <x, y>)
// in place of P_k: for rho of degree 6 on L = 16 the inner sums are exact (degree k + 6 <= 33)
// and exp's Funk-Hecke coefficients beyond degree 27 are below 1e-28 at beta = 2, so both
// double quadratures are the integrals to round-off.
TEST_CASE("modes and pair integral against direct double quadrature") {
    const double beta = 2.0;
    sphere_geometry g(16, field_of(beta));
    std::vector<double> rho(g.size(), 1.0);
    g.add_white_noise(11, 0.3, 6, rho.data());
    const std::size_t count = 19; // beyond L = 16: zeros
    std::vector<double> modes(count);
    g.modes(rho.data(), count, modes.data());
    std::vector<double> direct(count, 0.0);
    double pair = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i)
        for (std::size_t j = 0; j < g.size(); ++j) {
            const double u = dot(&g.points()[3 * i], &g.points()[3 * j]);
            const double w = g.weights()[i] * g.weights()[j] * rho[i] * rho[j];
            pair += w * std::exp(beta * u);
            for (unsigned k = 1; k <= 8; ++k)
                direct[k - 1] += w * std::legendre(k, u);
        }
    for (std::size_t k = 1; k <= count; ++k) {
        CAPTURE(k);
        CHECK(modes[k - 1] == doctest::Approx(direct[k - 1]).epsilon(1e-12).scale(1e-3));
        if (k > 6) CHECK(std::abs(modes[k - 1]) < 1e-15);
    }
    CHECK(modes[0] > 1e-3);
    CHECK(g.pair_integral(rho.data()) * std::sinh(beta) / beta ==
          doctest::Approx(pair).epsilon(1e-12));
    // The uniform density: w_0 = sinh(beta) / beta.
    const std::vector<double> uniform(g.size(), 1.0);
    CHECK(g.pair_integral(uniform.data()) == doctest::Approx(1.0).epsilon(1e-14));
}

TEST_CASE("tail: round-off for a resolved density, large for one narrower than the grid") {
    sphere_geometry g(16, field_of(1.0));
    std::vector<double> rho(g.size(), 1.0);
    g.add_white_noise(3, 0.2, 6, rho.data()); // degree 6 < 2L/3
    CHECK(g.tail(rho.data()) < 1e-12);
    const std::array<double, 3> c{0.48, -0.6, 0.64};
    const auto narrow = von_mises(g, c, 200.0); // width ~0.07 rad, the grid's spacing ~0.18
    CHECK(g.tail(narrow.data()) > 0.1);
    // Resolved at L = 96: the Legendre coefficients of exp(200 t) near degree 64 are
    // I_64(200) / I_0(200) ~ exp(-64^2 / 400) ~ 4e-5.
    sphere_geometry fine(96, field_of(1.0));
    const auto narrow_fine = von_mises(fine, c, 200.0);
    CHECK(fine.tail(narrow_fine.data()) < 1e-3);
}

TEST_CASE("peaks: strict local maxima above the floor") {
    sphere_geometry g(32, field_of(1.0));
    const std::vector<double> uniform(g.size(), 1.0);
    CHECK(g.peaks(uniform.data(), 0.5) == 0);
    const std::array<double, 3> c1{0.48, -0.6, 0.64}, c2{-0.36, 0.48, -0.8};
    auto one = von_mises(g, c1, 20.0);
    const auto two = von_mises(g, c2, 20.0);
    CHECK(g.peaks(one.data(), 0.5) == 1);
    std::vector<double> both(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
        both[i] = 0.5 * (one[i] + two[i]);
    CHECK(g.peaks(both.data(), 0.5) == 2);
    CHECK(g.peaks(both.data(), 1e3) == 0); // above both bumps' heights (~20)
    // Centred on either pole, equal all around the polar ring: one peak each.
    const auto north = von_mises(g, {0.0, 0.0, 1.0}, 20.0);
    const auto south = von_mises(g, {0.0, 0.0, -1.0}, 20.0);
    CHECK(g.peaks(north.data(), 0.5) == 1);
    CHECK(g.peaks(south.data(), 0.5) == 1);
}

// The noise's coefficients are eps xi in the documented order (reproduced here from the same
// stream), so m_k = eps^2 chi^2_{2k+1} / (2k + 1); pooled over 40 seeds and k = 1..20 the mean
// of m_k (2k+1) / eps^2 per degree of freedom is a chi^2 with 40 * 440 = 17600 degrees, of
// relative standard deviation sqrt(2 / 17600) = 0.011: 0.05 is 4.7 of those. Per degree k,
// the mean over seeds has standard deviation sqrt(2 / (40 (2k+1))) <= 0.13; checked at 5 of
// those. With the seeds fixed the outcome is fixed; the margins say it is not tuned.
TEST_CASE("white noise: coefficients eps xi, modes eps^2 on average") {
    const std::size_t L = 24, kmax = 20;
    const double eps = 1e-3;
    sphere_geometry g(L, field_of(1.0));

    {
        std::vector<double> rho(g.size(), 0.0);
        g.add_white_noise(5, eps, kmax, rho.data());
        random_source random(5);
        double largest_error = 0.0;
        for (unsigned l = 1; l <= kmax; ++l)
            for (unsigned m = 0; m <= l; ++m)
                for (const bool sine : {false, true}) {
                    if (m == 0 && sine) continue;
                    const double xi = random.normal();
                    const double got = coefficient(g, rho, harmonic_at_nodes(g, l, m, sine));
                    largest_error = std::max(largest_error, std::abs(got - eps * xi));
                }
        CHECK(largest_error < 1e-12 * eps);
    }

    const std::size_t seeds = 40;
    std::vector<double> mean(kmax + 2, 0.0), modes(kmax + 2);
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        std::vector<double> rho(g.size(), 0.0);
        g.add_white_noise(seed, eps, kmax, rho.data());
        g.modes(rho.data(), kmax + 2, modes.data());
        for (std::size_t k = 0; k < kmax + 2; ++k)
            mean[k] += modes[k] / (eps * eps * seeds);
    }
    double pooled = 0.0, dof = 0.0;
    for (std::size_t k = 1; k <= kmax; ++k) {
        const double nk = 2.0 * static_cast<double>(k) + 1.0;
        CAPTURE(k);
        CHECK(std::abs(mean[k - 1] - 1.0) < 5.0 * std::sqrt(2.0 / (seeds * nk)));
        pooled += mean[k - 1] * nk;
        dof += nk;
    }
    CHECK(pooled / dof == doctest::Approx(1.0).epsilon(0.05));
    CHECK(mean[kmax] < 1e-20); // degree kmax + 1: no noise there
}

TEST_CASE("cost of one rate() (printed, not asserted)") {
    for (const std::size_t L : {128u, 256u}) {
        sphere_geometry g(L, field_of(10.0));
        std::vector<double> rho(g.size(), 1.0), drho(g.size());
        g.add_white_noise(1, 0.2 / static_cast<double>(L), L / 2, rho.data());
        g.rate(rho.data(), 0.0, drho.data()); // warm-up
        double best = 1e300;
        for (int run = 0; run < 3; ++run) {
            const auto start = std::chrono::steady_clock::now();
            g.rate(rho.data(), 0.0, drho.data());
            best = std::min(
                best,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        MESSAGE("sphere rate() at L = " << L << " (" << g.size() << " nodes): " << best * 1e3
                                        << " ms (best of 3)");
    }
}
