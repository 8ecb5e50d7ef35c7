// The density solver's analytic starts as particles (--init perturbed:K,EPS and
// vonmises:Q,KAPPA): the draws follow the densities of start_density.hpp, checked against
// moments known in closed form and against the density functions themselves.
//
// Tolerances: a sample mean of N i.i.d. draws is checked within 5 of its standard errors,
// sqrt(sample variance / N). The seeds are fixed, so each check is deterministic; the
// bound says that a correct sampler fails one check with probability below 6e-7 (normal
// tail beyond 5 sigma; N >= 20000 makes the mean normal to far better than that), so the
// ~300 checks here would pass for about every seed, not only a tuned one.
#include "nadyn/model/error.hpp"
#include "nadyn/model/initial.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/start_density.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

using namespace nadyn;

namespace {

// Running mean and variance of a sample.
struct moments {
    double sum = 0.0, sum2 = 0.0;
    std::size_t count = 0;
    void add(double v) {
        sum += v;
        sum2 += v * v;
        ++count;
    }
    [[nodiscard]] double mean() const { return sum / static_cast<double>(count); }
    [[nodiscard]] double standard_error() const {
        const double m = mean();
        const double variance = std::max(sum2 / static_cast<double>(count) - m * m, 0.0);
        return std::sqrt(variance / static_cast<double>(count));
    }
};

// The mean within 5 standard errors of `expected` (plus 1e-15 for a constant sample).
void check_mean(const moments& m, double expected) {
    INFO("mean " << m.mean() << ", expected " << expected << ", standard error "
                 << m.standard_error());
    CHECK(std::abs(m.mean() - expected) <= 5.0 * m.standard_error() + 1e-15);
}

// N_k, the dimension of the degree-k spherical harmonics on S^{d-1} (docs/model.md §5):
// (2k + d - 2) (k + d - 3)! / (k! (d - 2)!), 2 on the circle for k >= 1.
double harmonic_dimension(std::size_t k, std::size_t d) {
    if (d == 2) return k == 0 ? 1.0 : 2.0;
    double binomial = 1.0; // (k + d - 3)! / (k! (d - 3)!)
    for (std::size_t i = 1; i <= d - 3; ++i)
        binomial *= static_cast<double>(k + i) / static_cast<double>(i);
    return (2.0 * static_cast<double>(k) + static_cast<double>(d) - 2.0) * binomial /
           static_cast<double>(d - 2);
}

// A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa), the mean resultant length of the von
// Mises-Fisher distribution on S^{d-1}: E <x, mu>.
double mean_resultant_length(double kappa, std::size_t d) {
    const double nu = static_cast<double>(d) / 2.0;
    return std::cyl_bessel_i(nu, kappa) / std::cyl_bessel_i(nu - 1.0, kappa);
}

initial_state draw(const std::string& init, std::size_t n, std::size_t d, std::uint64_t seed) {
    return make_initial(initial_spec::parse(init), n, d, seed, 1.0);
}

void check_unit_rows(const initial_state& s, std::size_t n, std::size_t d) {
    double worst = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
        double norm2 = 0.0;
        for (std::size_t a = 0; a < d; ++a)
            norm2 += s.theta[k * d + a] * s.theta[k * d + a];
        worst = std::max(worst, std::abs(std::sqrt(norm2) - 1.0));
    }
    CHECK(worst < 1e-14); // also false for a NaN
}

} // namespace

TEST_CASE("gegenbauer: G_k(1) = 1, cos(k theta) on the circle, Legendre on S^2, and the "
          "modes observable's polynomials") {
    for (std::size_t d : {2, 3, 5, 8, 300})
        for (std::size_t k = 0; k <= 12; ++k)
            CHECK(gegenbauer(k, d, 1.0) == doctest::Approx(1.0).epsilon(1e-13));
    std::array<double, 12> zonal{};
    for (double t : {-1.0, -0.73, -0.2, 0.0, 0.31, 0.9, 0.999}) {
        for (unsigned k = 0; k <= 12; ++k) {
            CHECK(gegenbauer(k, 2, t) ==
                  doctest::Approx(std::cos(k * std::acos(t))).epsilon(1e-12));
            CHECK(gegenbauer(k, 3, t) == doctest::Approx(std::legendre(k, t)).epsilon(1e-12));
        }
        for (std::size_t d : {4, 5, 8, 300}) {
            zonal_polynomials(zonal.size(), d, t, zonal.data()); // G_1 .. G_12
            for (std::size_t k = 1; k <= zonal.size(); ++k)
                CHECK(std::abs(gegenbauer(k, d, t) - zonal[k - 1]) < 1e-13);
        }
    }
}

TEST_CASE("the Gamma draws have mean and variance equal to the shape") {
    random_source source(17);
    const std::size_t draws = 200000;
    for (double shape : {0.5, 1.0, 3.5, 149.5}) {
        INFO("shape " << shape);
        moments m, centred;
        std::vector<double> sample(draws);
        for (double& g : sample) {
            g = source.gamma(shape);
            m.add(g);
        }
        CHECK(m.mean() > 0.0);
        check_mean(m, shape);
        // The variance as the mean of (g - shape)^2, whose own spread is estimated the same way.
        for (const double g : sample)
            centred.add((g - shape) * (g - shape));
        check_mean(centred, shape);
    }
}

TEST_CASE("perturbed:K,EPS: E G_m(x_d) = EPS / N_K for m = K and 0 for every other m <= 6") {
    // Under rho = 1 + EPS G_K(x_d) (a probability density w.r.t. sigma, as G_K integrates to
    // 0), E G_m(x_d) = integral G_m dsigma + EPS integral G_m G_K dsigma. G_m(x_d) =
    // G_m(<x, e_d>) is the zonal harmonic of degree m, orthogonal to the other degrees, and
    // the addition theorem N_m G_m(<x, y>) = sum_a Y_{m,a}(x) Y_{m,a}(y) gives
    // integral G_m(<x, y>)^2 dsigma(x) = (1/N_m^2) sum_a Y_{m,a}(y)^2 = N_m G_m(1) / N_m^2
    // = 1/N_m. So E G_m = EPS delta_{mK} / N_K.
    struct setting {
        std::size_t d, K;
        double eps;
    };
    const std::size_t n = 200000;
    for (const setting c : {setting{2, 3, 0.5}, setting{2, 1, -1.0}, setting{3, 2, -0.8},
                            setting{3, 5, 0.6}, setting{5, 4, 1.0}, setting{5, 1, 0.3}}) {
        const std::string init = "perturbed:" + std::to_string(c.K) + "," + std::to_string(c.eps);
        INFO(init << " on d = " << c.d);
        const initial_state s = draw(init, n, c.d, 11);
        check_unit_rows(s, n, c.d);
        for (std::size_t m = 1; m <= 6; ++m) {
            INFO("m = " << m << ", N_m = " << harmonic_dimension(m, c.d));
            moments g;
            for (std::size_t k = 0; k < n; ++k)
                g.add(gegenbauer(m, c.d, s.theta[k * c.d + c.d - 1]));
            check_mean(g, m == c.K ? c.eps / harmonic_dimension(c.K, c.d) : 0.0);
        }
    }
}

TEST_CASE("perturbed and vonmises draws follow the density functions bin by bin") {
    // The histogram of one coordinate against the density function itself, integrated over
    // each bin (composite Simpson on 64 panels per bin: far below the counts' noise), so the
    // sampler and the solver's density are checked to be the same distribution. A bin's
    // count is binomial(N, p_b): within 5 sqrt(N p_b (1 - p_b)), and at least 5 counts of
    // slack for bins that expect under one draw (there a stray count has probability < N p_b).
    const std::size_t n = 200000, bins = 48, panels = 64;
    struct setting {
        std::string init;
        std::size_t d;
    };
    for (const setting& c :
         {setting{"perturbed:3,0.9", 2}, setting{"perturbed:2,-1", 2}, setting{"vonmises:3,5", 2},
          setting{"vonmises:2,20", 2}, setting{"vonmises:1,0", 2}, setting{"perturbed:4,0.7", 3},
          setting{"vonmises:2,3", 3}, setting{"vonmises:1,8", 3}}) {
        INFO(c.init << " on d = " << c.d);
        const initial_spec spec = initial_spec::parse(c.init);
        const std::size_t d = c.d;
        auto rho = [&](const std::vector<double>& x) {
            return spec.kind == initial_kind::perturbed
                       ? perturbed_density(spec.degree, spec.amplitude, x.data(), d)
                       : vonmises_density(spec.degree, spec.amplitude, x.data(), d);
        };
        // d = 2: the angle phi = atan2(x_1, x_2) from e_d towards e_1, sigma = dphi / 2 pi.
        // d = 3: t = x_3, uniform on [-1, 1] under sigma (Archimedes); the densities here
        // depend on x through t alone (vonmises:2's second centre is -e_3 up to
        // sin(pi) e_1 = 1.2e-16 e_1), so x = (sqrt(1 - t^2), 0, t) stands for every x.
        const double low = d == 2 ? -std::numbers::pi : -1.0;
        const double high = -low;
        auto point = [&](double u) {
            std::vector<double> x(d, 0.0);
            if (d == 2) {
                x[0] = std::sin(u);
                x[1] = std::cos(u);
            } else {
                x[0] = std::sqrt(std::max(0.0, 1.0 - u * u));
                x[2] = u;
            }
            return x;
        };
        std::vector<double> mass(bins, 0.0);
        double total = 0.0;
        const double width = (high - low) / static_cast<double>(bins);
        const double h = width / static_cast<double>(panels);
        for (std::size_t b = 0; b < bins; ++b) {
            const double start = low + width * static_cast<double>(b);
            for (std::size_t i = 0; i < panels; ++i) {
                const double a = start + h * static_cast<double>(i);
                mass[b] +=
                    h / 6.0 * (rho(point(a)) + 4.0 * rho(point(a + h / 2)) + rho(point(a + h)));
            }
            total += mass[b];
        }
        const initial_state s = draw(c.init, n, d, 23);
        check_unit_rows(s, n, d);
        std::vector<double> counts(bins, 0.0);
        for (std::size_t k = 0; k < n; ++k) {
            const double* x = &s.theta[k * d];
            const double u = d == 2 ? std::atan2(x[0], x[1]) : x[2];
            const auto b = static_cast<std::size_t>((u - low) / width);
            counts[std::min(b, bins - 1)] += 1.0;
        }
        for (std::size_t b = 0; b < bins; ++b) {
            const double p = mass[b] / total, expected = static_cast<double>(n) * p;
            INFO("bin " << b << ": " << counts[b] << " draws, " << expected << " expected");
            CHECK(std::abs(counts[b] - expected) <= 5.0 * std::sqrt(expected * (1.0 - p)) + 5.0);
        }
    }
}

TEST_CASE("vonmises:1,KAPPA: E <x, e_d> = I_{d/2}(KAPPA) / I_{d/2-1}(KAPPA) and the second "
          "moments") {
    // For the von Mises-Fisher density proportional to exp(KAPPA <x, mu>) on S^{d-1}, the
    // normalisation is Z(KAPPA) = integral exp(KAPPA w) dsigma, proportional to
    // f = KAPPA^-nu I_nu(KAPPA), nu = d/2 - 1, and E w^j = f^(j) / f. With
    // (KAPPA^-nu I_nu)' = KAPPA^-nu I_{nu+1} and I_{nu+1}' = I_nu - (nu+1)/KAPPA I_{nu+1}:
    //   E <x, mu> = I_{d/2} / I_{d/2-1} = A,   E <x, mu>^2 = 1 - (d - 1) A / KAPPA,
    // and by the symmetry about mu every orthogonal coordinate has mean 0 and the same
    // second moment, (1 - E <x, mu>^2) / (d - 1).
    const std::size_t n = 200000;
    for (std::size_t d : {2, 3, 8, 200})
        for (double kappa : {0.5, 5.0, 50.0}) {
            INFO("d = " << d << ", KAPPA = " << kappa);
            const initial_state s = draw("vonmises:1," + std::to_string(kappa), n, d, 5);
            check_unit_rows(s, n, d);
            moments along, along2, first, first2;
            for (std::size_t k = 0; k < n; ++k) {
                const double* x = &s.theta[k * d];
                along.add(x[d - 1]);
                along2.add(x[d - 1] * x[d - 1]);
                first.add(x[0]);
                first2.add(x[0] * x[0]);
            }
            const double a = mean_resultant_length(kappa, d);
            const double second = 1.0 - static_cast<double>(d - 1) * a / kappa;
            check_mean(along, a);
            check_mean(along2, second);
            check_mean(first, 0.0);
            check_mean(first2, (1.0 - second) / static_cast<double>(d - 1));
        }
    // KAPPA = 0 is uniform: E x_d = 0 and E x_d^2 = 1/d.
    for (std::size_t d : {2, 5}) {
        const initial_state s = draw("vonmises:4,0", n, d, 5);
        moments along, along2;
        for (std::size_t k = 0; k < n; ++k) {
            along.add(s.theta[k * d + d - 1]);
            along2.add(s.theta[k * d + d - 1] * s.theta[k * d + d - 1]);
        }
        check_mean(along, 0.0);
        check_mean(along2, 1.0 / static_cast<double>(d));
    }
}

TEST_CASE("vonmises at KAPPA = 1e4: 1 - <x, e_d> has mean (d - 1) / (2 KAPPA), also for d = 300") {
    // s = 1 - <x, mu> has density proportional to exp(-KAPPA s) s^{(d-3)/2} (2 - s)^{(d-3)/2},
    // nearly Gamma((d - 1)/2, rate KAPPA): mean (d - 1)/(2 KAPPA), exactly 1/KAPPA - O(e^-2KAPPA)
    // on S^2 (1 - A_3 = 1/KAPPA + 1 - coth KAPPA), and 1/KAPPA (d - 1)/2 (1 + (d - 3)/(4 KAPPA)
    // + ...) in general: +0.7% at d = 300. The relative standard error is
    // sqrt(2 / ((d - 1) N)): 0.22% at d = 3, N = 2e5; 0.06% at d = 300, N = 2e4. So 2% holds
    // with room, and a cosine computed as w rather than 1 - w (cancellation at 1e-4) or an
    // overflow in Wood's constants would show here.
    const double kappa = 1e4;
    struct setting {
        std::size_t d, n;
    };
    for (const setting c : {setting{3, 200000}, setting{300, 20000}}) {
        INFO("d = " << c.d);
        const initial_state s = draw("vonmises:1,1e4", c.n, c.d, 9);
        check_unit_rows(s, c.n, c.d);
        moments gap;
        for (std::size_t k = 0; k < c.n; ++k)
            gap.add(1.0 - s.theta[k * c.d + c.d - 1]);
        const double expected = static_cast<double>(c.d - 1) / (2.0 * kappa);
        CHECK(gap.mean() == doctest::Approx(expected).epsilon(0.02));
        CHECK(gap.mean() > 0.0);
    }
}

TEST_CASE("vonmises:3,KAPPA on the circle: a third of the mass near each centre") {
    // Centres at angles 0, 2 pi/3, 4 pi/3 from e_2 towards e_1. At KAPPA = 20 a bump's
    // density at the next centre is exp(-20 * 1.5) = 1e-13 of its peak, so each token's
    // nearest centre is its own bump's: the share of each is binomial(N, 1/3), and the cosine
    // to it has the von Mises mean I_1(20) / I_0(20).
    const std::size_t n = 200000, d = 2;
    const double kappa = 20.0;
    const initial_state s = draw("vonmises:3,20", n, d, 3);
    std::array<std::array<double, 2>, 3> centres{};
    for (std::size_t j = 0; j < 3; ++j)
        vonmises_centre(j, 3, d, centres[j].data());
    CHECK(centres[1][0] == doctest::Approx(std::sin(2.0 * std::numbers::pi / 3.0)));
    CHECK(centres[1][1] == doctest::Approx(-0.5));
    std::array<moments, 3> share;
    moments cosine;
    for (std::size_t k = 0; k < n; ++k) {
        const double* x = &s.theta[k * d];
        std::size_t nearest = 0;
        double best = -2.0;
        for (std::size_t j = 0; j < 3; ++j) {
            const double c = x[0] * centres[j][0] + x[1] * centres[j][1];
            if (c > best) {
                best = c;
                nearest = j;
            }
        }
        for (std::size_t j = 0; j < 3; ++j)
            share[j].add(j == nearest ? 1.0 : 0.0);
        cosine.add(best);
    }
    for (std::size_t j = 0; j < 3; ++j) {
        INFO("centre " << j);
        check_mean(share[j], 1.0 / 3.0);
    }
    check_mean(cosine, mean_resultant_length(kappa, d));
}

TEST_CASE("the density starts: the same seed gives the same particles, parse and to_string") {
    for (const char* init : {"perturbed:3,0.5", "vonmises:2,20", "vonmises:5,0"}) {
        INFO(init);
        const initial_state a = draw(init, 64, 7, 42), b = draw(init, 64, 7, 42);
        const initial_state other = draw(init, 64, 7, 43);
        CHECK(a.theta == b.theta);
        CHECK(a.theta != other.theta);
        // Token after token from one stream: a larger n extends a smaller one's tokens.
        const initial_state more = draw(init, 80, 7, 42);
        CHECK(std::equal(a.theta.begin(), a.theta.end(), more.theta.begin()));
        CHECK(initial_spec::parse(init).to_string() == init);
    }
    const initial_spec perturbed = initial_spec::parse("perturbed:4,-0.25");
    CHECK(perturbed.kind == initial_kind::perturbed);
    CHECK(perturbed.degree == 4);
    CHECK(perturbed.amplitude == -0.25);
    const initial_spec vonmises = initial_spec::parse("vonmises:1,1e4");
    CHECK(vonmises.kind == initial_kind::vonmises);
    CHECK(vonmises.degree == 1);
    CHECK(vonmises.amplitude == 1e4);
    CHECK(vonmises.to_string() == "vonmises:1,10000");
    for (const char* bad :
         {"perturbed:0,0.5", "perturbed:3,2", "perturbed:3,-1.01", "perturbed:3", "perturbed:3,",
          "perturbed:,0.5", "perturbed:3,0.5,1", "perturbed:3,nan", "perturbed: 3,0.5",
          "perturbed:3, 0.5", "perturbed:1.5,0.5", "perturbed:-1,0.5"})
        CHECK_THROWS_WITH_AS(initial_spec::parse(bad),
                             doctest::Contains("expected perturbed:K,EPS"), input_error);
    for (const char* bad : {"vonmises:0,1", "vonmises:2,-1", "vonmises:2,inf", "vonmises:2",
                            "vonmises:2,1x", "vonmises:1e1,2", "vonmises:1234567,1"})
        CHECK_THROWS_WITH_AS(initial_spec::parse(bad),
                             doctest::Contains("expected vonmises:Q,KAPPA"), input_error);
    CHECK_THROWS_WITH_AS(initial_spec::parse("vonmise:1,2"),
                         doctest::Contains("perturbed:K,EPS, vonmises:Q,KAPPA"), input_error);
    // Under layernorm the tokens live in the hyperplane sum_c x_c = 0, which e_d is not in.
    CHECK_THROWS_WITH_AS(
        make_initial(initial_spec::parse("vonmises:1,2"), 8, 5, 1, 1.0, norm_kind::layernorm),
        doctest::Contains("layernorm"), input_error);
}
