// Observables of one frame against direct pairwise computations.
#include "test_support.hpp"

#include "nadyn/model/observables.hpp"

#include <Eigen/QR>
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

using namespace nadyn;

namespace {

double dot(const double* a, const double* b, std::size_t d) {
    double s = 0.0;
    for (std::size_t c = 0; c < d; ++c)
        s += a[c] * b[c];
    return s;
}

} // namespace

TEST_CASE("mean_cos, gap, min_cos and displacement equal their pairwise definitions") {
    const std::size_t n = 300, d = 5; // 300 > 2 blocks of 128: the blocked pass is exercised
    state_type x = testing::uniform_start(n, d, 8, 1.0);
    state_type x0 = testing::uniform_start(n, d, 9, 1.0);
    observables_calculator calc(n, d, std::vector<double>(x0.begin(), x0.begin() + n * d), 1e-3);
    const frame_observables o = calc.compute(x.data(), x.data() + n * d, nullptr);
    double sum = 0.0, smallest = 2.0, angle = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t l = 0; l < n; ++l)
            if (k != l) {
                const double c = dot(&x[k * d], &x[l * d], d);
                sum += c;
                smallest = std::min(smallest, c);
            }
        angle += std::acos(std::clamp(dot(&x[k * d], &x0[k * d], d), -1.0, 1.0));
    }
    const double pairs = double(n) * double(n - 1);
    CHECK(o.mean_cos == doctest::Approx(sum / pairs).epsilon(1e-12));
    CHECK(o.gap == doctest::Approx(1.0 - sum / pairs).epsilon(1e-12));
    CHECK(o.gap == doctest::Approx(double(n) / double(n - 1) * o.variance).epsilon(1e-14));
    CHECK(o.min_cos == doctest::Approx(smallest).epsilon(1e-14));
    CHECK(o.displacement == doctest::Approx(angle / double(n)).epsilon(1e-10));
    CHECK(o.r_mean == 1.0);
    CHECK(o.norm_error < 1e-15);

    // A run that records neither displacement nor norm_error skips their loop: both NaN, the
    // moments and the magnitudes' statistics unchanged.
    observables_calculator skipping(n, d, std::vector<double>(x0.begin(), x0.begin() + n * d),
                                    1e-3);
    skipping.measure_displacement(false);
    const frame_observables s = skipping.compute(x.data(), x.data() + n * d, nullptr);
    CHECK(std::isnan(s.displacement));
    CHECK(std::isnan(s.norm_error));
    CHECK(s.mean_cos == o.mean_cos);
    CHECK(s.min_cos == o.min_cos);
    CHECK(s.r_mean == o.r_mean);
    CHECK(s.r_min == o.r_min);

    // A run that records none of the moments skips compute_moments(): mean_cos, gap, variance
    // and velocity NaN, the pairwise and magnitude statistics unchanged.
    observables_calculator lean(n, d, std::vector<double>(x0.begin(), x0.begin() + n * d), 1e-3);
    lean.measure_moments(false);
    const frame_observables m = lean.compute(x.data(), x.data() + n * d, nullptr);
    CHECK(std::isnan(m.mean_cos));
    CHECK(std::isnan(m.gap));
    CHECK(std::isnan(m.variance));
    CHECK(std::isnan(m.velocity));
    CHECK(m.min_cos == o.min_cos);
    CHECK(m.displacement == o.displacement);
    CHECK(m.r_max == o.r_max);
}

TEST_CASE("clusters counts single-linkage groups at cosine >= 1 - eps") {
    // Four groups on the circle (d = 2) at angles 0, 1, 2, 3 rad, each a chain of tokens
    // spaced 0.01 rad apart: within a chain neighbours are linked (cos 0.01 > 1 - 1e-3),
    // chains are far apart. Single linkage joins a whole chain even where its ends are
    // further apart than the threshold.
    const std::size_t per_group = 90, groups = 4, n = per_group * groups, d = 2;
    std::vector<double> theta(n * d), r(n, 1.0);
    for (std::size_t g = 0; g < groups; ++g)
        for (std::size_t i = 0; i < per_group; ++i) {
            // Interleave the groups so each row block holds several.
            const std::size_t k = i * groups + g;
            const double phi = double(g) + 0.01 * double(i);
            theta[k * d] = std::cos(phi);
            theta[k * d + 1] = std::sin(phi);
        }
    observables_calculator calc(n, d, theta, 1e-3, 64);
    CHECK(calc.compute(theta.data(), r.data(), nullptr).clusters == 4.0);
    // eps below the chain's link (1 - cos 0.01 = 5e-5): every token alone.
    observables_calculator strict(n, d, theta, 1e-5, 64);
    CHECK(strict.compute(theta.data(), r.data(), nullptr).clusters == double(n));
    // eps above every pair (cos >= -1 always): one cluster.
    observables_calculator loose(n, d, theta, 2.0, 64);
    CHECK(loose.compute(theta.data(), r.data(), nullptr).clusters == 1.0);
}

TEST_CASE("velocity is the derivative of mean_cos along the right-hand side") {
    const std::size_t n = 50, d = 4;
    state_type x = testing::uniform_start(n, d, 12);
    attention_system system({n, d, 2.0, false, {scheme::post_ln, 1.0, 0.0}}, attention_weights{});
    state_type f(x.size());
    system(x, f, 0.0);
    observables_calculator calc(n, d, std::vector<double>(x.begin(), x.begin() + n * d), 1e-3);
    const double velocity = calc.compute_moments(x.data(), f.data()).velocity;
    // Central difference of mean_cos along x + h f, renormalised: error O(h^2) ~ 1e-12.
    const double h = 1e-6;
    auto mean_cos_at = [&](double step) {
        state_type y = x;
        for (std::size_t i = 0; i < n * d; ++i)
            y[i] += step * f[i];
        project_to_sphere(y.data(), n, d);
        return calc.compute_moments(y.data(), nullptr).mean_cos;
    };
    const double difference = (mean_cos_at(h) - mean_cos_at(-h)) / (2.0 * h);
    CHECK(velocity == doctest::Approx(difference).epsilon(1e-7));
}

TEST_CASE("the gap keeps its relative accuracy near a cluster") {
    // Tokens at angles +-delta around a pole in d = 2: gap = mean of 1 - cos over pairs.
    // With delta = 1e-9 the gap is ~2e-18, below the spacing of doubles near 1, so
    // 1 - mean_cos computed from the cosines would give 0.
    const double delta = 1e-9;
    const std::size_t n = 2, d = 2;
    std::vector<double> theta{std::cos(delta), std::sin(delta), std::cos(delta), -std::sin(delta)};
    std::vector<double> r(n, 1.0);
    observables_calculator calc(n, d, theta, 1e-3);
    const frame_observables o = calc.compute(theta.data(), r.data(), nullptr);
    const double exact = 1.0 - std::cos(2.0 * delta); // = 2 sin^2(delta) ~ 2e-18
    CHECK(o.gap == doctest::Approx(2.0 * std::sin(delta) * std::sin(delta)).epsilon(1e-6));
    CHECK(exact == 0.0); // what the naive formula gives
}

TEST_CASE("a single token is one cluster") {
    std::vector<double> theta{0.0, 1.0}, r{2.0};
    observables_calculator calc(1, 2, theta, 1e-3);
    const frame_observables o = calc.compute(theta.data(), r.data(), nullptr);
    CHECK(o.mean_cos == 1.0);
    CHECK(o.gap == 0.0);
    CHECK(o.clusters == 1.0);
    CHECK(o.r_max == 2.0);
}

TEST_CASE("pair_change and angle equal their pairwise definitions, for any thread count") {
    const std::size_t n = 300, d = 5; // 300 > 2 blocks of 128: the blocked pass is exercised
    const state_type a = testing::uniform_start(n, d, 11, 1.0);
    const state_type b = testing::uniform_start(n, d, 12, 1.0);
    double change = 0.0, angle = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t l = 0; l < k; ++l)
            change += std::abs(dot(&b[k * d], &b[l * d], d) - dot(&a[k * d], &a[l * d], d));
        angle += std::acos(std::clamp(dot(&a[k * d], &b[k * d], d), -1.0, 1.0));
    }
    const double pairs = 0.5 * double(n) * double(n - 1);
    std::vector<frame_observables> by_threads;
    for (int threads : {1, 2, 3}) {
        CAPTURE(threads);
        observables_calculator calc(n, d, std::vector<double>(a.begin(), a.begin() + n * d), 1e-3,
                                    0, threads);
        frame_observables first, second;
        calc.compute_motion(a.data(), true, first);
        // The first frame has no previous one.
        CHECK(std::isnan(first.pair_change));
        CHECK(std::isnan(first.angle));
        calc.compute_motion(b.data(), true, second);
        CHECK(second.pair_change == doctest::Approx(change / pairs).epsilon(1e-12));
        CHECK(second.angle == doctest::Approx(angle / double(n)).epsilon(1e-10));
        by_threads.push_back(second);
        // Without pair_change only the angle is measured; the previous frame is now b.
        frame_observables third;
        calc.compute_motion(b.data(), false, third);
        CHECK(std::isnan(third.pair_change));
        CHECK(third.angle == 0.0);
    }
    for (const auto& o : by_threads) {
        CHECK(o.pair_change == by_threads[0].pair_change); // bitwise: ordered block sums
        CHECK(o.angle == by_threads[0].angle);
    }
}

TEST_CASE("a common rotation moves every token by its angle and no pairwise cosine") {
    // Tokens on the great circle of the (e_0, e_1) plane in d = 3, rotated about e_2 by phi:
    // each moves by exactly phi, every cosine stays.
    const std::size_t n = 200, d = 3;
    const double phi = 0.3;
    std::vector<double> before(n * d, 0.0), after(n * d, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
        const double psi = 0.05 * double(k);
        before[k * d] = std::cos(psi);
        before[k * d + 1] = std::sin(psi);
        after[k * d] = std::cos(psi + phi);
        after[k * d + 1] = std::sin(psi + phi);
    }
    observables_calculator calc(n, d, before, 1e-3, 64);
    frame_observables o;
    calc.set_previous_frame(before.data());
    calc.compute_motion(after.data(), true, o);
    CHECK(o.angle == doctest::Approx(phi).epsilon(1e-13));
    CHECK(o.pair_change < 1e-15);
}

TEST_CASE("effective_rank: 1 for one cluster, min(n, d) for orthonormal directions") {
    const std::size_t d = 6;
    SUBCASE("one direction, and its opposite: rank 1") {
        const std::size_t n = 300;
        state_type x = testing::uniform_start(1, d, 4, 1.0);
        std::vector<double> theta(n * d);
        for (std::size_t k = 0; k < n; ++k)
            for (std::size_t c = 0; c < d; ++c)
                theta[k * d + c] = (k % 3 == 0 ? -1.0 : 1.0) * x[c];
        CHECK(effective_rank(theta.data(), n, d) == doctest::Approx(1.0).epsilon(1e-12));
    }
    SUBCASE("n <= d orthonormal rows (a rotated basis): rank n") {
        // The rows of a rotation (Q of a QR factorisation of a Gaussian matrix).
        random_source source(21);
        const matrix q =
            Eigen::HouseholderQR<matrix>(testing::random_matrix(source, d, 1.0)).householderQ();
        for (std::size_t n : {std::size_t{1}, std::size_t{4}, d}) {
            CAPTURE(n);
            CHECK(effective_rank(q.data(), n, d) == doctest::Approx(double(n)).epsilon(1e-12));
        }
    }
    SUBCASE("n > d: each basis vector m times, equal singular values sqrt(m): rank d") {
        const std::size_t m = 50, n = m * d;
        std::vector<double> theta(n * d, 0.0);
        for (std::size_t k = 0; k < n; ++k)
            theta[k * d + k % d] = 1.0;
        CHECK(effective_rank(theta.data(), n, d) == doctest::Approx(double(d)).epsilon(1e-12));
    }
    SUBCASE("two orthogonal clusters of a and b tokens: singular values sqrt(a), sqrt(b)") {
        const std::size_t a = 30, b = 70, n = a + b;
        std::vector<double> theta(n * d, 0.0);
        for (std::size_t k = 0; k < n; ++k)
            theta[k * d + (k < a ? 0 : 1)] = 1.0;
        const double p = std::sqrt(double(a)) / (std::sqrt(double(a)) + std::sqrt(double(b)));
        const double expected = std::exp(-p * std::log(p) - (1 - p) * std::log(1 - p));
        CHECK(effective_rank(theta.data(), n, d) == doctest::Approx(expected).epsilon(1e-12));
    }
}

TEST_CASE("pair_density counts the pairs at cosine >= 1 - eps, for any thread count") {
    // Groups of coincident tokens at angles 0, 1, 2, 3 rad on the circle, interleaved over
    // three row blocks of 128: the linked pairs are those inside a group, 4 m (m - 1) / 2.
    const std::size_t m = 90, groups = 4, n = m * groups, d = 2;
    std::vector<double> theta(n * d), r(n, 1.0);
    for (std::size_t k = 0; k < n; ++k) {
        theta[k * d] = std::cos(double(k % groups));
        theta[k * d + 1] = std::sin(double(k % groups));
    }
    const double pairs = 0.5 * double(n) * double(n - 1);
    const double expected = double(groups) * 0.5 * double(m) * double(m - 1) / pairs;
    // And uniform directions in d = 3 at a loose eps, against the pairwise count.
    const std::size_t n3 = 300, d3 = 3;
    const double eps = 0.2;
    const state_type x = testing::uniform_start(n3, d3, 5, 1.0);
    double linked = 0.0;
    for (std::size_t k = 0; k < n3; ++k)
        for (std::size_t l = 0; l < k; ++l)
            linked += dot(&x[k * d3], &x[l * d3], d3) >= 1.0 - eps ? 1.0 : 0.0;
    for (int threads : {1, 2, 3}) {
        CAPTURE(threads);
        observables_calculator calc(n, d, theta, 1e-3, 128, threads);
        CHECK(calc.compute(theta.data(), r.data(), nullptr).pair_density == 1.0); // not asked
        calc.measure_pairs(true);
        CHECK(calc.compute(theta.data(), r.data(), nullptr).pair_density ==
              doctest::Approx(expected).epsilon(1e-15));
        observables_calculator uniform(n3, d3, std::vector<double>(x.begin(), x.begin() + n3 * d3),
                                       eps, 0, threads);
        uniform.measure_pairs(true);
        CHECK(uniform.compute(x.data(), x.data() + n3 * d3, nullptr).pair_density ==
              linked / (0.5 * double(n3) * double(n3 - 1)));
    }
}

TEST_CASE("zonal_polynomials: G_k(1) = 1 and the closed forms for d = 2, 3, 4") {
    constexpr std::size_t K = 40;
    std::vector<double> g(K);
    for (std::size_t d :
         {std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{64}, std::size_t{1000}}) {
        CAPTURE(d);
        zonal_polynomials(K, d, 1.0, g.data());
        for (std::size_t k = 0; k < K; ++k)
            CHECK(g[k] == doctest::Approx(1.0).epsilon(1e-13));
        // Parity: G_k(-x) = (-1)^k G_k(x).
        zonal_polynomials(K, d, -1.0, g.data());
        for (std::size_t k = 0; k < K; ++k)
            CHECK(g[k] == doctest::Approx(k % 2 == 0 ? -1.0 : 1.0).epsilon(1e-13));
    }
    for (double x = -0.99; x < 1.0; x += 0.0733) {
        CAPTURE(x);
        const double angle = std::acos(x);
        zonal_polynomials(K, 2, x, g.data()); // Chebyshev: T_k(cos a) = cos(k a)
        for (std::size_t k = 1; k <= K; ++k)
            CHECK(g[k - 1] == doctest::Approx(std::cos(double(k) * angle)).epsilon(1e-12).scale(1));
        zonal_polynomials(K, 3, x, g.data()); // Legendre polynomials, the library's own
        for (std::size_t k = 1; k <= K; ++k)
            CHECK(g[k - 1] ==
                  doctest::Approx(std::legendre(unsigned(k), x)).epsilon(1e-12).scale(1));
        // d = 4: C_k^1 = U_k, U_k(1) = k + 1: G_k(cos a) = sin((k + 1) a) / ((k + 1) sin a).
        zonal_polynomials(K, 4, x, g.data());
        for (std::size_t k = 1; k <= K; ++k)
            CHECK(g[k - 1] == doctest::Approx(std::sin(double(k + 1) * angle) /
                                              (double(k + 1) * std::sin(angle)))
                                  .epsilon(1e-12)
                                  .scale(1));
    }
}

TEST_CASE("modes: 1 for one cluster, q equally spaced clusters give 1 at multiples of q") {
    constexpr std::size_t K = 12;
    SUBCASE("one cluster, any d; a single token") {
        for (std::size_t d : {std::size_t{2}, std::size_t{3}, std::size_t{16}}) {
            CAPTURE(d);
            const std::size_t n = 200;
            state_type one = testing::uniform_start(1, d, 3, 1.0);
            std::vector<double> theta(n * d), r(n, 1.0);
            for (std::size_t k = 0; k < n; ++k)
                std::copy(one.begin(), one.begin() + static_cast<std::ptrdiff_t>(d),
                          theta.begin() + static_cast<std::ptrdiff_t>(k * d));
            observables_calculator calc(n, d, theta, 1e-3, 64);
            calc.measure_modes(K);
            const frame_observables o = calc.compute(theta.data(), r.data(), nullptr);
            REQUIRE(o.modes.size() == K);
            for (double m : o.modes)
                CHECK(m == doctest::Approx(1.0).epsilon(1e-12));
            observables_calculator single(1, d, std::vector<double>(one.begin(), one.begin() + d),
                                          1e-3);
            single.measure_modes(K);
            CHECK(single.compute(one.data(), one.data() + d, nullptr).modes ==
                  std::vector<double>(K, 1.0));
        }
    }
    SUBCASE("q clusters at angles 2 pi j / q on the circle (d = 2)") {
        for (std::size_t q : {std::size_t{2}, std::size_t{3}, std::size_t{5}}) {
            CAPTURE(q);
            const std::size_t m = 70, n = q * m, d = 2;
            std::vector<double> theta(n * d), r(n, 1.0);
            for (std::size_t k = 0; k < n; ++k) {
                const double phi = 2.0 * std::numbers::pi * double(k % q) / double(q) + 0.3;
                theta[k * d] = std::cos(phi);
                theta[k * d + 1] = std::sin(phi);
            }
            observables_calculator calc(n, d, theta, 1e-3, 64);
            calc.measure_modes(K);
            const frame_observables o = calc.compute(theta.data(), r.data(), nullptr);
            for (std::size_t k = 1; k <= K; ++k) {
                CAPTURE(k);
                CHECK(o.modes[k - 1] ==
                      doctest::Approx(k % q == 0 ? 1.0 : 0.0).scale(1).epsilon(1e-12));
            }
        }
    }
}

TEST_CASE("modes of uniform directions: |mean exp(i k phi)|^2 on the circle, about 1/n") {
    constexpr std::size_t K = 8;
    SUBCASE("d = 2: the Fourier coefficients, for any thread count") {
        const std::size_t n = 400, d = 2;
        const state_type x = testing::uniform_start(n, d, 17, 1.0);
        std::vector<double> fourier(K);
        for (std::size_t k = 1; k <= K; ++k) {
            double re = 0.0, im = 0.0;
            for (std::size_t j = 0; j < n; ++j) {
                const double phi = std::atan2(x[j * d + 1], x[j * d]);
                re += std::cos(double(k) * phi);
                im += std::sin(double(k) * phi);
            }
            fourier[k - 1] = (re * re + im * im) / (double(n) * double(n));
        }
        std::vector<std::vector<double>> by_threads;
        for (int threads : {1, 2, 3}) {
            CAPTURE(threads);
            observables_calculator calc(n, d, std::vector<double>(x.begin(), x.begin() + n * d),
                                        1e-3, 0, threads);
            calc.measure_modes(K);
            const frame_observables o = calc.compute(x.data(), x.data() + n * d, nullptr);
            for (std::size_t k = 0; k < K; ++k)
                CHECK(o.modes[k] == doctest::Approx(fourier[k]).scale(1).epsilon(1e-13));
            by_threads.push_back(o.modes);
        }
        CHECK(by_threads[1] == by_threads[0]); // bitwise: block sums added in block order
        CHECK(by_threads[2] == by_threads[0]);
    }
    SUBCASE("d = 3: n sum_k N_k m_k is about chi-squared with sum_k N_k degrees of freedom") {
        // The degree-k coefficients of n independent uniform points are, for large n, N_k
        // independent normals of variance 1/n (N_k = 2k + 1 harmonics of degree k on S^2),
        // so n N_k m_k ~ chi^2(N_k): the total has mean 80 and deviation sqrt(160) ~ 12.6 for
        // K = 8. Bounds at 5 deviations fail with probability below 1e-6.
        const std::size_t n = 1000, d = 3;
        const state_type x = testing::uniform_start(n, d, 23, 1.0);
        observables_calculator calc(n, d, std::vector<double>(x.begin(), x.begin() + n * d), 1e-3);
        calc.measure_modes(K);
        const frame_observables o = calc.compute(x.data(), x.data() + n * d, nullptr);
        double total = 0.0, dof = 0.0;
        for (std::size_t k = 1; k <= K; ++k) {
            const double harmonics = 2.0 * double(k) + 1.0;
            total += double(n) * harmonics * o.modes[k - 1];
            dof += harmonics;
            CHECK(o.modes[k - 1] >= 0.0);
            CHECK(o.modes[k - 1] < 20.0 / double(n)); // chi^2(N_k) / N_k beyond 20: < 1e-8
        }
        CHECK(std::abs(total - dof) < 5.0 * std::sqrt(2.0 * dof));
    }
}
