#pragma once
// Funk-Hecke multipliers of the attention kernel exp(beta <x, y>) on S^{d-1} (docs/model.md
// §13.2): convolution with it acts on the degree-k spherical harmonics as the scalar
//
//     w_k = Gamma(d/2) (2/beta)^nu I_{k+nu}(beta),     nu = d/2 - 1,
//
// and with t exp(beta t) (the kernel of <x, A(x)>, the attention's radial part) as
// dw_k/dbeta = Gamma(d/2) (2/beta)^nu (I_{k+nu+1}(beta) + (k/beta) I_{k+nu}(beta)).
// Softmax attention only needs them relative to w_0, which stays finite where w_0 overflows
// (beta > 700), so these return ratios.
#include <cstddef>
#include <vector>

namespace nadyn {

// w_k / w_0 = I_{k+nu}(beta) / I_nu(beta) for k = 0..max_degree (the first is 1), for
// beta > 0 and d >= 2, by Miller's backward recurrence I_{m-1} = I_{m+1} + (2m/beta) I_m
// (stable downwards; started far enough above max_degree + nu and beta that the start's error
// has decayed below round-off). beta = 0 gives 1, 0, 0, ...
std::vector<double> kernel_ratios(double beta, std::size_t d, std::size_t max_degree);

// (dw_k/dbeta) / w_0 for k = 0..max_degree, from ratios of length max_degree + 2:
// ratios[k + 1] + (k / beta) ratios[k] (at beta = 0 its limit: 1/d at k = 1, else 0).
std::vector<double> radial_kernel_ratios(double beta, std::size_t d,
                                         const std::vector<double>& ratios, std::size_t max_degree);

// N_k, the dimension of the degree-k spherical harmonics on S^{d-1}, as a double (it
// overflows no integer type for the sizes used here, but is only ever a weight).
double harmonic_dimension(std::size_t k, std::size_t d);

} // namespace nadyn
