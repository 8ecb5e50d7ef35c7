// The Funk-Hecke ratios w_k / w_0 = I_{k+nu}(beta) / I_nu(beta) (growth rates, the density solver)
// against the standard library's Bessel functions where those are finite, and against the
// large-beta expansion where w_0 overflows.
#include "nadyn/model/funk_hecke.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace nadyn;

TEST_CASE("kernel ratios are I_{k+nu}(beta) / I_nu(beta)") {
    for (const std::size_t d : {2u, 3u, 5u, 64u})
        for (const double beta : {0.3, 1.0, 5.0, 40.0, 300.0}) {
            const auto r = kernel_ratios(beta, d, 60);
            const double nu = 0.5 * static_cast<double>(d) - 1.0;
            const double i0 = std::cyl_bessel_i(nu, beta);
            for (std::size_t k = 0; k <= 60; ++k) {
                const double expected = std::cyl_bessel_i(nu + static_cast<double>(k), beta) / i0;
                if (expected < 1e-280) continue;
                CAPTURE(d);
                CAPTURE(beta);
                CAPTURE(k);
                CHECK(r[k] == doctest::Approx(expected).epsilon(1e-12));
            }
        }
}

TEST_CASE("kernel ratios stay finite where w_0 overflows") {
    // I_1(b) / I_0(b) = 1 - 1/(2b) - 1/(8b^2) - 1/(8b^3) + O(b^-4) on the circle.
    const double beta = 5000.0;
    const auto r = kernel_ratios(beta, 2, 4);
    const double expected = 1.0 - 0.5 / beta - 0.125 / (beta * beta) - 0.125 / std::pow(beta, 3);
    CHECK(r[1] == doctest::Approx(expected).epsilon(1e-13));
    // Recurrence I_{k-1} - I_{k+1} = (2k/beta) I_k between the returned ratios.
    for (std::size_t k = 1; k < 4; ++k)
        CHECK(r[k - 1] - r[k + 1] ==
              doctest::Approx(2.0 * static_cast<double>(k) / beta * r[k]).epsilon(1e-12));
}

TEST_CASE("radial ratios are dw_k/dbeta / w_0") {
    // On the circle dI_k/dbeta = (I_{k-1} + I_{k+1}) / 2.
    const double beta = 3.0;
    const auto r = kernel_ratios(beta, 2, 12);
    const auto radial = radial_kernel_ratios(beta, 2, r, 10);
    const double i0 = std::cyl_bessel_i(0.0, beta);
    for (std::size_t k = 1; k <= 10; ++k) {
        const double kd = static_cast<double>(k);
        const double expected =
            0.5 * (std::cyl_bessel_i(kd - 1.0, beta) + std::cyl_bessel_i(kd + 1.0, beta)) / i0;
        CHECK(radial[k] == doctest::Approx(expected).epsilon(1e-12));
    }
    CHECK(radial[0] == doctest::Approx(std::cyl_bessel_i(1.0, beta) / i0).epsilon(1e-12));
    CHECK(radial_kernel_ratios(0.0, 5, kernel_ratios(0.0, 5, 3), 2)[1] == doctest::Approx(0.2));
}

TEST_CASE("harmonic dimensions N_k") {
    CHECK(harmonic_dimension(0, 2) == 1.0);
    CHECK(harmonic_dimension(5, 2) == 2.0);
    CHECK(harmonic_dimension(4, 3) == doctest::Approx(9.0));  // 2k + 1
    CHECK(harmonic_dimension(2, 4) == doctest::Approx(9.0));  // (k + 1)^2
    CHECK(harmonic_dimension(3, 5) == doctest::Approx(30.0)); // (2k+3)(k+2)(k+1)/6
}
