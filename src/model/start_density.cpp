#include "nadyn/model/start_density.hpp"

#include <limits>

#include "nadyn/model/random.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace nadyn {

double gegenbauer(std::size_t k, std::size_t d, double t) {
    if (k == 0) return 1.0;
    double prev = 1.0, cur = t;
    const double dd = static_cast<double>(d);
    for (std::size_t m = 1; m < k; ++m) {
        const double mm = static_cast<double>(m);
        const double next = ((2.0 * mm + dd - 2.0) * t * cur - mm * prev) / (mm + dd - 2.0);
        prev = cur;
        cur = next;
    }
    return cur;
}

double perturbed_density(std::size_t degree, double amplitude, const double* x, std::size_t d) {
    return 1.0 + amplitude * gegenbauer(degree, d, x[d - 1]);
}

double perturbed_density_bound(double amplitude) {
    return 1.0 + std::abs(amplitude);
}

namespace {

// The angle of centre j on the great circle through e_d and e_1, written once so that the
// density and the sampler's centres are the same numbers.
double centre_angle(std::size_t j, std::size_t centres) {
    return 2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(centres);
}

// s = 1 - w for the cosine w = <x, mu> of a von Mises-Fisher draw on S^{d-1} (Wood 1994),
// with m = d - 1, b = (-2 kappa + sqrt(4 kappa^2 + m^2)) / m, x0 = (1 - b) / (1 + b):
// Z ~ Beta(m/2, m/2), w = (1 - (1 + b) Z) / (1 - (1 - b) Z), accepted when
// kappa w + m log(1 - x0 w) - kappa x0 - m log(1 - x0^2) >= log U. At large kappa w, x0 and
// 1 - x0 w are all 1 - O(1/kappa), so each is rewritten through quantities computed without a
// difference of nearly equal numbers:
//   b           = (m/2) / (kappa + hypot(kappa, m/2))   (no cancellation, no overflow)
//   1 - w       = 2 b Z / ((1 - Z) + b Z)               (1 - Z exact from the two Gammas)
//   1 - x0      = 2 b / (1 + b),   1 - x0^2 = 4 b / (1 + b)^2
//   1 - x0 w    = (b (2 - s) + s) / (1 + b)
//   kappa (w - x0) = kappa ((1 - x0) - s)
double vonmises_one_minus_cosine(random_source& source, double kappa, std::size_t d) {
    const double m = static_cast<double>(d - 1), half = 0.5 * m;
    const double b = half / (kappa + std::hypot(kappa, half));
    // kappa beyond ~1e308: the bump is a point to double precision.
    if (!(b > 0.0)) return 0.0;
    const double one_minus_x0 = 2.0 * b / (1.0 + b);
    const double log_one_minus_x0_squared = std::log(4.0 * b) - 2.0 * std::log1p(b);
    for (;;) {
        const double g1 = source.gamma(half), g2 = source.gamma(half);
        const double total = g1 + g2;
        if (!(total > 0.0)) continue; // both underflowed (shape 1/2 only): no Z, draw again
        const double z = g1 / total, one_minus_z = g2 / total;
        const double s = 2.0 * b * z / (one_minus_z + b * z);
        const double exponent =
            kappa * (one_minus_x0 - s) +
            m * (std::log(b * (2.0 - s) + s) - std::log1p(b) - log_one_minus_x0_squared);
        if (exponent >= std::log(source.uniform())) return s;
    }
}

} // namespace

double vonmises_density(std::size_t centres, double kappa, const double* x, std::size_t d) {
    double sum = 0.0;
    for (std::size_t j = 0; j < centres; ++j) {
        const double angle = centre_angle(j, centres);
        const double c = std::cos(angle) * x[d - 1] + std::sin(angle) * x[0];
        sum += std::exp(kappa * (c - 1.0));
    }
    return sum;
}

double vonmises_density_bound(std::size_t centres) {
    return static_cast<double>(centres);
}

void vonmises_centre(std::size_t j, std::size_t centres, std::size_t d, double* c) {
    std::fill(c, c + d, 0.0);
    const double angle = centre_angle(j, centres);
    c[d - 1] = std::cos(angle);
    c[0] += std::sin(angle);
}

void draw_perturbed(random_source& source, std::size_t degree, double amplitude, std::size_t d,
                    double* x) {
    const double bound = perturbed_density_bound(amplitude);
    do
        uniform_unit_vector(source, x, d);
    while (!(source.uniform() * bound < perturbed_density(degree, amplitude, x, d)));
}

void draw_vonmises(random_source& source, std::size_t centres, double kappa, std::size_t d,
                   double* x) {
    // Every term is 1: the density is constant.
    if (kappa == 0.0) {
        uniform_unit_vector(source, x, d);
        return;
    }
    // The mixture's component, uniform on 0..Q-1 (min: U Q < Q in exact arithmetic only).
    const auto j = std::min(
        centres - 1, static_cast<std::size_t>(source.uniform() * static_cast<double>(centres)));
    const double angle = centre_angle(j, centres);
    // c_j has two nonzero entries, so the draw needs no d-vector of its own.
    const double c_last = std::cos(angle), c_first = std::sin(angle);
    const double s = vonmises_one_minus_cosine(source, kappa, d);
    // v: a Gaussian vector less its component along c_j, normalised, is uniform on the unit
    // sphere orthogonal to c_j. One almost along c_j leaves a remainder made of round-off and
    // is drawn again; the event is symmetric about c_j, so v stays uniform.
    double norm2 = 0.0;
    for (;;) {
        double total = 0.0;
        for (std::size_t a = 0; a < d; ++a) {
            x[a] = source.normal();
            total += x[a] * x[a];
        }
        const double along = x[0] * c_first + x[d - 1] * c_last;
        x[0] -= along * c_first;
        x[d - 1] -= along * c_last;
        norm2 = 0.0;
        for (std::size_t a = 0; a < d; ++a)
            norm2 += x[a] * x[a];
        if (norm2 > 1e-12 * total) break;
    }
    // x = w c_j + sqrt(1 - w^2) v with 1 - w^2 = s (2 - s).
    const double sine = std::sqrt(s * (2.0 - s)) / std::sqrt(norm2);
    for (std::size_t a = 0; a < d; ++a)
        x[a] *= sine;
    x[0] += (1.0 - s) * c_first;
    x[d - 1] += (1.0 - s) * c_last;
    // A unit vector to round-off already; normalised like every other start's rows.
    double length2 = 0.0;
    for (std::size_t a = 0; a < d; ++a)
        length2 += x[a] * x[a];
    const double inverse = 1.0 / std::sqrt(length2);
    for (std::size_t a = 0; a < d; ++a)
        x[a] *= inverse;
}

std::vector<double> draw_circle_noise(random_source& source, std::size_t kmax) {
    std::vector<double> coefficients(2 * kmax);
    for (double& c : coefficients)
        c = source.normal();
    return coefficients;
}

double circle_noise_density(const std::vector<double>& coefficients, double eps, double theta) {
    double sum = 0.0;
    for (std::size_t k = 1; 2 * k <= coefficients.size(); ++k) {
        const double phase = static_cast<double>(k) * theta;
        sum +=
            coefficients[2 * k - 2] * std::cos(phase) + coefficients[2 * k - 1] * std::sin(phase);
    }
    return 1.0 + eps * std::numbers::sqrt2 * sum;
}

double circle_noise_bound(const std::vector<double>& coefficients, double eps) {
    double sum = 0.0;
    for (const double c : coefficients)
        sum += std::abs(c);
    return 1.0 + std::abs(eps) * std::numbers::sqrt2 * sum;
}

double circle_noise_minimum(const std::vector<double>& coefficients, double eps) {
    const std::size_t samples = std::max<std::size_t>(64, 16 * coefficients.size());
    double lowest = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < samples; ++j)
        lowest = std::min(
            lowest, circle_noise_density(coefficients, eps,
                                         2.0 * std::numbers::pi * double(j) / double(samples)));
    return lowest;
}

} // namespace nadyn
