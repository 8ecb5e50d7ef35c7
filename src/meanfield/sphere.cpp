#include "nadyn/meanfield/sphere.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/funk_hecke.hpp"
#include "nadyn/model/random.hpp"

#include <libsharp/sharp.h>
#include <libsharp/sharp_almhelpers.h>
#include <libsharp/sharp_geomhelpers.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace nadyn::meanfield {

namespace {

constexpr std::size_t largest_degree = 2048;

// libsharp's harmonics are orthonormal on the unit sphere's area 4 pi, ours on sigma: the
// same function has libsharp coefficients sqrt(4 pi) times ours.
const double sharp_per_sigma = std::sqrt(4.0 * std::numbers::pi);

} // namespace

struct sphere_geometry::transforms {
    sharp_geom_info* geometry = nullptr;
    sharp_alm_info* layout = nullptr;
    // Index of the (hypothetical) coefficient (0, m) in the triangular layout: (l, m) sits at
    // first[m] + l for l = m..L.
    std::vector<std::ptrdiff_t> first;
    int max_degree = 0;

    explicit transforms(int lmax) : max_degree(lmax) {
        const int nphi = 2 * lmax + 2;
        // stride_lat = nphi: ring r starts at r * nphi, rings in libsharp's order (north to
        // south, checked by the constructor below).
        sharp_make_gauss_geom_info(lmax + 1, nphi, 0.0, 1, nphi, &geometry);
        sharp_make_triangular_alm_info(lmax, lmax, 1, &layout);
        first.resize(static_cast<std::size_t>(lmax) + 1);
        for (int m = 0; m <= lmax; ++m)
            first[static_cast<std::size_t>(m)] = sharp_alm_index(layout, 0, m);
    }
    ~transforms() {
        sharp_destroy_alm_info(layout);
        sharp_destroy_geom_info(geometry);
    }
    transforms(const transforms&) = delete;
    transforms& operator=(const transforms&) = delete;

    // f(l, m, index) for every stored coefficient (m >= 0 only: a real map's a_{l,-m} is
    // (-1)^m conj(a_lm)).
    template <class F> void for_each(F&& f) const {
        for (int m = 0; m <= max_degree; ++m)
            for (int l = m; l <= max_degree; ++l)
                f(static_cast<std::size_t>(l), static_cast<std::size_t>(m),
                  static_cast<std::size_t>(first[static_cast<std::size_t>(m)] + l));
    }

    // The maps and coefficient sets as libsharp wants them: arrays of pointers, double
    // precision. Spin 0 reads/writes alm[0], map[0]; spin 1 and the gradient both of each.
    void execute(sharp_jobtype job, int spin, std::complex<double>* alm0,
                 std::complex<double>* alm1, double* map0, double* map1, int flags = 0) const {
        void* alm[2] = {alm0, alm1};
        void* map[2] = {map0, map1};
        sharp_execute(job, spin, alm, map, geometry, layout, SHARP_DP | flags, nullptr, nullptr);
    }
};

sphere_geometry::sphere_geometry(std::size_t max_degree, const field_parameters& field)
    : m_max_degree(max_degree), m_field(field),
      m_reads_attention_norm(info(field.scheme.id).uses_attention_norm) {
    if (max_degree < 2 || max_degree > largest_degree)
        throw input_error("the sphere's max_degree must be in 2.." +
                          std::to_string(largest_degree) + ", not " + std::to_string(max_degree));
    if (!(field.beta >= 0.0) || !std::isfinite(field.beta))
        throw input_error("the sphere's density solver needs a finite beta >= 0");
    const std::size_t L = max_degree;
    m_kernel_ratios = kernel_ratios(field.beta, 3, L + 1);
    m_radial_ratios = radial_kernel_ratios(field.beta, 3, m_kernel_ratios, L);
    m_gradient_scale.resize(L + 1);
    for (std::size_t l = 0; l <= L; ++l)
        // w_1 / w_0 = beta / 3 + O(beta^3) and w_l / w_0 = O(beta^l): at beta = 0 only degree 1
        // keeps a gradient, the mean of y (A = integral y rho dsigma).
        m_gradient_scale[l] =
            field.beta > 0.0 ? m_kernel_ratios[l] / field.beta : (l == 1 ? 1.0 / 3.0 : 0.0);

    m_transforms = std::make_unique<transforms>(static_cast<int>(L));
    const std::size_t nphi = ring_size();
    const std::size_t n = ring_count() * nphi;
    if (static_cast<std::size_t>(sharp_map_size(m_transforms->geometry)) != n)
        throw input_error("libsharp's Gauss grid has an unexpected size"); // not reached

    m_points.assign(3 * n, 0.0);
    m_weights.assign(n, 0.0);
    double total = 0.0;
    const sharp_geom_info& geometry = *m_transforms->geometry;
    for (int p = 0; p < geometry.npairs; ++p)
        for (const sharp_ringinfo* ring : {&geometry.pair[p].r1, &geometry.pair[p].r2}) {
            if (ring->nph <= 0) continue; // the equator ring of an odd count has no partner
            const auto start = static_cast<std::size_t>(ring->ofs);
            for (std::size_t j = 0; j < nphi; ++j) {
                const double phi = ring->phi0 + 2.0 * std::numbers::pi * static_cast<double>(j) /
                                                    static_cast<double>(nphi);
                double* x = &m_points[3 * (start + j)];
                x[0] = ring->sth * std::cos(phi);
                x[1] = ring->sth * std::sin(phi);
                x[2] = ring->cth;
                m_weights[start + j] = ring->weight;
                total += ring->weight;
            }
        }
    // libsharp's weights sum to 4 pi (the area); sigma's to 1.
    for (double& w : m_weights)
        w /= total;

    m_map.resize(n);
    m_kernel_map.resize(n);
    if (m_reads_attention_norm) m_radial_map.resize(n);
    m_theta_map.resize(n);
    m_phi_map.resize(n);
    const auto count = static_cast<std::size_t>(sharp_alm_count(m_transforms->layout));
    for (coefficients* alm : {&m_rho_alm, &m_kernel_alm, &m_gradient_alm, &m_curl_alm})
        alm->assign(count, 0.0);
    if (m_reads_attention_norm) m_radial_alm.assign(count, 0.0);
    m_power.resize(L + 1);
}

sphere_geometry::~sphere_geometry() = default;

void sphere_geometry::analyse(const double* rho) {
    std::copy(rho, rho + size(), m_map.begin());
    m_transforms->execute(SHARP_MAP2ALM, 0, m_rho_alm.data(), nullptr, m_map.data(), nullptr);
}

void sphere_geometry::degree_power(std::vector<double>& out) const {
    std::fill(out.begin(), out.end(), 0.0);
    m_transforms->for_each([&](std::size_t l, std::size_t m, std::size_t i) {
        // a_{l,-m} has the magnitude of a_lm: the m > 0 entries stand for two.
        out[l] += (m == 0 ? 1.0 : 2.0) * std::norm(m_rho_alm[i]);
    });
    const double per_sigma = 1.0 / (sharp_per_sigma * sharp_per_sigma);
    for (double& p : out)
        p *= per_sigma;
}

void sphere_geometry::rate(const double* rho, double t, double* drho) {
    const transforms& sht = *m_transforms;
    analyse(rho);
    sht.for_each([&](std::size_t l, std::size_t, std::size_t i) {
        m_kernel_alm[i] = m_kernel_ratios[l] * m_rho_alm[i];
        m_gradient_alm[i] = m_gradient_scale[l] * m_rho_alm[i];
        if (m_reads_attention_norm) m_radial_alm[i] = m_radial_ratios[l] * m_rho_alm[i];
    });
    // Z, and grad Z / beta as (d/dtheta, (1/sin theta) d/dphi): libsharp's first-derivative
    // synthesis is the plain tangent gradient of the map its coefficients synthesise (checked
    // against Y_10 and Y_11 by hand; the tests check the growth rates that rest on it).
    sht.execute(SHARP_ALM2MAP, 0, m_kernel_alm.data(), nullptr, m_kernel_map.data(), nullptr);
    sht.execute(SHARP_ALM2MAP_DERIV1, 1, m_gradient_alm.data(), nullptr, m_theta_map.data(),
                m_phi_map.data());
    if (m_reads_attention_norm)
        sht.execute(SHARP_ALM2MAP, 0, m_radial_alm.data(), nullptr, m_radial_map.data(), nullptr);

    // The flux rho X in place of the gradient. Only ngpt and peri-ln read ‖A‖; the other
    // schemes' divisor is the same at every node.
    const std::size_t n = size();
    const double uniform_inverse_speed = inverse_speed(m_field, t, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        const double inverse_z = 1.0 / m_kernel_map[i];
        const double a_theta = m_theta_map[i] * inverse_z; // P_x A
        const double a_phi = m_phi_map[i] * inverse_z;
        double speed = uniform_inverse_speed;
        if (m_reads_attention_norm) {
            const double along = m_radial_map[i] * inverse_z; // <x, A>
            speed = inverse_speed(m_field, t,
                                  std::sqrt(along * along + a_theta * a_theta + a_phi * a_phi));
        }
        m_theta_map[i] = rho[i] * speed * a_theta;
        m_phi_map[i] = rho[i] * speed * a_phi;
    }

    // The weak form's projections sum_i w_i F_i . grad conj(Y_lm)(x_i) through libsharp's
    // spin-1 analysis: it is the weighted adjoint of the gradient synthesis divided by
    // sqrt(l (l + 1)), whatever F (checked on random maps), so its E coefficients times
    // sqrt(l (l + 1)) are the projections. The B (curl) part is what a gradient cannot see.
    sht.execute(SHARP_MAP2ALM, 1, m_gradient_alm.data(), m_curl_alm.data(), m_theta_map.data(),
                m_phi_map.data());
    sht.for_each([&](std::size_t l, std::size_t, std::size_t i) {
        const auto ld = static_cast<double>(l);
        // l = 0: grad Y_00 = 0, so the mass is conserved exactly, not to quadrature error.
        m_gradient_alm[i] *= l == 0 ? 0.0 : std::sqrt(ld * (ld + 1.0));
    });
    sht.execute(SHARP_ALM2MAP, 0, m_gradient_alm.data(), nullptr, drho, nullptr);
}

void sphere_geometry::modes(const double* rho, std::size_t count, double* out) {
    analyse(rho);
    degree_power(m_power);
    for (std::size_t k = 1; k <= count; ++k)
        out[k - 1] = k <= m_max_degree ? m_power[k] / (2.0 * static_cast<double>(k) + 1.0) : 0.0;
}

double sphere_geometry::pair_integral(const double* rho) {
    analyse(rho);
    degree_power(m_power);
    double sum = 0.0;
    for (std::size_t l = 0; l <= m_max_degree; ++l)
        sum += m_kernel_ratios[l] * m_power[l];
    return sum; // relative to w_0 = sinh(beta) / beta, which overflows past beta = 710
}

double sphere_geometry::tail(const double* rho) {
    analyse(rho);
    double largest = 0.0;
    m_transforms->for_each([&](std::size_t l, std::size_t, std::size_t i) {
        if (3 * l > 2 * m_max_degree) largest = std::max(largest, std::abs(m_rho_alm[i]));
    });
    // Both in libsharp's normalisation: the factor sqrt(4 pi) cancels.
    return largest / std::abs(m_rho_alm[0].real());
}

std::size_t sphere_geometry::peaks(const double* rho, double floor) const {
    const std::size_t rings = ring_count(), nphi = ring_size();
    const auto at = [&](std::size_t r, std::size_t j) { return rho[r * nphi + (j % nphi)]; };
    // v exceeds the three nodes of ring r nearest to longitude j.
    const auto above_ring = [&](double v, std::size_t r, std::size_t j) {
        return v > at(r, j + nphi - 1) && v > at(r, j) && v > at(r, j + 1);
    };
    std::size_t count = 0;
    for (std::size_t r = 1; r + 1 < rings; ++r)
        for (std::size_t j = 0; j < nphi; ++j) {
            const double v = at(r, j);
            if (v > floor && v > at(r, j + nphi - 1) && v > at(r, j + 1) &&
                above_ring(v, r - 1, j) && above_ring(v, r + 1, j))
                ++count;
        }
    for (const auto& [r, next] :
         {std::pair{std::size_t{0}, std::size_t{1}}, std::pair{rings - 1, rings - 2}}) {
        // The first of the ring's largest values stands for them all.
        std::size_t best = 0;
        for (std::size_t j = 1; j < nphi; ++j)
            if (at(r, j) > at(r, best)) best = j;
        const double v = at(r, best);
        if (v > floor && above_ring(v, next, best)) ++count;
    }
    return count;
}

void sphere_geometry::add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                                      double* rho) const {
    random_source random(seed);
    coefficients alm(m_rho_alm.size(), 0.0);
    const transforms& sht = *m_transforms;
    const std::size_t top = std::min(kmax, m_max_degree);
    // xi_c C_lm + xi_s S_lm = 2 Re(a Y'_lm) with Y' libsharp's harmonic and
    // a = sqrt(4 pi) (xi_c - i xi_s) / sqrt(2); for m = 0, a = sqrt(4 pi) xi.
    const double scale = eps * sharp_per_sigma;
    for (std::size_t l = 1; l <= top; ++l) {
        alm[static_cast<std::size_t>(sht.first[0]) + l] = scale * random.normal();
        for (std::size_t m = 1; m <= l; ++m) {
            const double cosine = random.normal();
            const double sine = random.normal();
            alm[static_cast<std::size_t>(sht.first[m]) + l] =
                std::complex<double>(cosine, -sine) * (scale / std::numbers::sqrt2);
        }
    }
    // SHARP_ADD: the synthesis is added to rho in place.
    sht.execute(SHARP_ALM2MAP, 0, alm.data(), nullptr, rho, nullptr, SHARP_ADD);
}

} // namespace nadyn::meanfield
