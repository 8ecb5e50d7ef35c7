#pragma once
// The starts of the density solver (--init of `nadyn meanfield`, docs/model.md §16.5), the
// same densities from which `nadyn simulate` draws its particles i.i.d. (the analytic ones'
// formulas and samplers are the model layer's, nadyn/start_density.hpp):
//
//   uniform              rho = 1 (a stationary state)
//   perturbed:K,EPS      rho = 1 + EPS G_K(x_d), G_K the degree-K Gegenbauer polynomial of
//                        S^{d-1} with G_K(1) = 1 (on the circle cos(K theta), theta the angle
//                        to e_d); |EPS| <= 1
//   vonmises:Q,KAPPA     Q equal von Mises bumps exp(KAPPA (<x, c_j> - 1)), normalised, at
//                        c_j = cos(2 pi j/Q) e_d + sin(2 pi j/Q) e_1 (Q equally spaced
//                        centres on the great circle through e_d and e_1)
//   noise:EPS[,KMAX]     rho = 1 + EPS sum_{k=1..KMAX} sum_a xi_{k,a} Y_{k,a}, xi i.i.d. standard
//                        normal from the seed: the white noise whose coefficients have the
//                        variance 1/n of n uniform particles' empirical measure at n = EPS^-2
//                        (KMAX default: 64, or half the grid's degree if lower: the modes
//                        above ~3 sqrt(2 beta) do not grow, and the pointwise size of the
//                        noise, EPS sqrt(2 KMAX) on the circle, must stay below 1)
#include <cstdint>
#include <string>
#include <vector>

namespace nadyn::meanfield {

class density_geometry;

inline constexpr std::size_t default_noise_degree = 64;

struct density_init {
    enum class kind { uniform, perturbed, vonmises, noise };
    kind family = kind::noise;
    std::size_t degree = 0;   // K of perturbed, Q of vonmises, KMAX of noise (0: default)
    double amplitude = 0.01;  // EPS, KAPPA, EPS

    // The forms above; input_error naming the valid forms otherwise.
    static density_init parse(const std::string& text);
    [[nodiscard]] std::string to_string() const;
};

// rho at the geometry's nodes (input_error when the density is negative somewhere or the
// grid cannot hold its degree).
std::vector<double> make_density(const density_init& init, density_geometry& geometry,
                                 std::uint64_t seed);

// The density's value at a unit vector x of R^d, for the analytic starts (uniform, perturbed,
// vonmises; not noise, whose value is defined on the grid): what the particles sample.
double density_value(const density_init& init, const double* x, std::size_t d);
// Its largest value (the rejection sampler's bound).
double density_bound(const density_init& init, std::size_t d);

} // namespace nadyn::meanfield
