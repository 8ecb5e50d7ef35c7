#pragma once
// The analytic start densities, one set of functions for both pictures of the same start:
// the particles of `nadyn simulate --init` draw their directions i.i.d. from them
// (initial.hpp), and the density solver of `nadyn meanfield --init` starts from the density
// itself (meanfield/density_init.hpp). Densities are with respect to the uniform measure
// sigma on S^{d-1} and need not be normalised (a sampler needs no normalisation; the solver
// normalises by its quadrature). e_a is the a-th unit vector, x_d the last coordinate.
//
//   perturbed:K,EPS    rho(x) = 1 + EPS G_K(x_d), G_K the degree-K Gegenbauer polynomial of
//                      S^{d-1} with G_K(1) = 1 (docs/model.md §5; on the circle
//                      cos(K theta), theta the angle to e_d); K >= 1, |EPS| <= 1, so
//                      0 <= rho <= 1 + |EPS| and integral rho dsigma = 1
//   vonmises:Q,KAPPA   rho(x) = sum_{j<Q} exp(KAPPA (<x, c_j> - 1)),
//                      c_j = cos(2 pi j/Q) e_d + sin(2 pi j/Q) e_1: Q equal von Mises-Fisher
//                      bumps at equally spaced centres on the great circle through e_d and
//                      e_1 (Q = 1: e_d); KAPPA >= 0, 0 < rho <= Q
//
// The samplers are exact: perturbed by rejection from sigma with acceptance
// rho(x) / (1 + |EPS|) (on average 1 + |EPS| <= 2 uniform points per draw); vonmises as the
// mixture it is, a centre c_j uniformly (every bump has the same integral, by rotation),
// then the von Mises-Fisher distribution around it by Wood's algorithm (A. T. A. Wood,
// Simulation of the von Mises Fisher distribution, Commun. Statist. Simul. 23 (1994)
// 157-164): the cosine w = <x, c_j> by rejection from a Beta proposal, then
// x = w c_j + sqrt(1 - w^2) v with v uniform on the unit sphere orthogonal to c_j. Every step
// is written with 1 - w rather than w, so large KAPPA (1e4 and beyond) keeps its relative
// accuracy, and nothing overflows for any d. O(d) per draw.
//   noise:EPS[,KMAX]   on the circle (d = 2) only: rho(x) = 1 + EPS sum_{k<=KMAX} sqrt 2
//                      (a_k cos k theta + b_k sin k theta), theta the angle of x from e_1,
//                      (a_k, b_k) standard normal drawn a_1 b_1 a_2 b_2 ... first from the
//                      start's stream (KMAX default 64): the white noise of the density
//                      solver's circle (meanfield/circle.hpp), which draws the same numbers
//                      from the same stream, so the two pictures share the very realisation.
//                      Sampled by rejection from sigma with the bound 1 + EPS sqrt 2 sum
//                      (|a_k| + |b_k|); refused when rho < 0 somewhere.
#include <cstddef>
#include <vector>

namespace nadyn {

class random_source;

// G_k(t) = C_k^{(d-2)/2}(t) / C_k^{(d-2)/2}(1) by the recurrence of docs/model.md §5,
// G_0 = 1, G_1 = t, G_{m+1} = ((2m + d - 2) t G_m - m G_{m-1}) / (m + d - 2); d >= 2.
double gegenbauer(std::size_t k, std::size_t d, double t);

// 1 + amplitude G_degree(x_d) at a unit vector x of R^d.
double perturbed_density(std::size_t degree, double amplitude, const double* x, std::size_t d);
// Its largest value over the sphere's bound, 1 + |amplitude| (|G_k| <= 1).
double perturbed_density_bound(double amplitude);

// sum_{j < centres} exp(kappa (<x, c_j> - 1)) at a unit vector x of R^d (d >= 2).
double vonmises_density(std::size_t centres, double kappa, const double* x, std::size_t d);
// Its bound, the number of centres (each term is at most 1).
double vonmises_density_bound(std::size_t centres);
// c_j of `centres` centres in R^d (d entries written).
void vonmises_centre(std::size_t j, std::size_t centres, std::size_t d, double* c);

// One draw from perturbed:degree,amplitude on S^{d-1} into x (d entries, a unit vector).
void draw_perturbed(random_source& source, std::size_t degree, double amplitude, std::size_t d,
                    double* x);
// One draw from vonmises:centres,kappa on S^{d-1} into x (d >= 2; kappa = 0 is uniform).
void draw_vonmises(random_source& source, std::size_t centres, double kappa, std::size_t d,
                   double* x);

// The noise start's KMAX when none is given.
inline constexpr std::size_t default_noise_modes = 64;
// (a_1, b_1, ..., a_kmax, b_kmax), standard normal, in that order from `source`.
std::vector<double> draw_circle_noise(random_source& source, std::size_t kmax);
// 1 + eps sum_k sqrt 2 (a_k cos k theta + b_k sin k theta) at the angle theta.
double circle_noise_density(const std::vector<double>& coefficients, double eps, double theta);
// The rejection bound 1 + eps sqrt 2 sum (|a_k| + |b_k|), and the density's least value on
// 32 KMAX equispaced angles (the check that it is a density).
double circle_noise_bound(const std::vector<double>& coefficients, double eps);
double circle_noise_minimum(const std::vector<double>& coefficients, double eps);

} // namespace nadyn
