#include "nadyn/model/funk_hecke.hpp"

#include "nadyn/model/error.hpp"

#include <algorithm>
#include <cmath>

namespace nadyn {

std::vector<double> kernel_ratios(double beta, std::size_t d, std::size_t max_degree) {
    if (!(beta >= 0.0) || !std::isfinite(beta))
        throw input_error("beta must be a finite number >= 0");
    if (d < 2) throw input_error("d must be at least 2");
    std::vector<double> ratios(max_degree + 1, 0.0);
    ratios[0] = 1.0;
    if (beta == 0.0 || max_degree == 0) return ratios;
    const double nu = 0.5 * static_cast<double>(d) - 1.0;
    // The recurrence's dominant solution downwards is I; started with (0, tiny) at order top,
    // the relative error at order m is about (I_top / I_m)^2 ... far below round-off once top
    // exceeds both max_degree + nu and beta by a margin growing like sqrt of the larger.
    const double scale = std::max(static_cast<double>(max_degree) + nu, beta);
    const auto top =
        static_cast<std::size_t>(std::ceil(scale + 40.0 + 10.0 * std::sqrt(scale))) + max_degree;
    double upper = 0.0, current = 1e-300; // I_{top+1}, I_top (up to a common factor)
    for (std::size_t k = top; k > 0; --k) {
        const double m = static_cast<double>(k) + nu;
        const double lower = upper + (2.0 * m / beta) * current; // I_{k-1+nu}
        upper = current;
        current = lower;
        if (k - 1 <= max_degree) ratios[k - 1] = current;
        if (current > 1e250) { // rescale everything kept so far, the same factor
            upper *= 1e-250;
            current *= 1e-250;
            for (std::size_t j = k - 1; j <= max_degree && j < ratios.size(); ++j)
                ratios[j] *= 1e-250;
        }
    }
    const double norm = ratios[0];
    for (double& r : ratios)
        r /= norm;
    return ratios;
}

std::vector<double> radial_kernel_ratios(double beta, std::size_t d,
                                         const std::vector<double>& ratios,
                                         std::size_t max_degree) {
    if (ratios.size() < max_degree + 2)
        throw input_error("radial_kernel_ratios needs the ratios up to max_degree + 1");
    std::vector<double> out(max_degree + 1);
    for (std::size_t k = 0; k <= max_degree; ++k)
        out[k] = beta == 0.0 ? (k == 1 ? 1.0 / static_cast<double>(d) : 0.0)
                             : ratios[k + 1] + (static_cast<double>(k) / beta) * ratios[k];
    return out;
}

double harmonic_dimension(std::size_t k, std::size_t d) {
    if (d == 2) return k == 0 ? 1.0 : 2.0;
    // N_k = (2k + d - 2) (k + d - 3)! / (k! (d - 2)!), through lgamma to stay finite.
    const double kk = static_cast<double>(k), dd = static_cast<double>(d);
    if (k == 0) return 1.0;
    return (2.0 * kk + dd - 2.0) *
           std::exp(std::lgamma(kk + dd - 2.0) - std::lgamma(kk + 1.0) - std::lgamma(dd - 1.0));
}

} // namespace nadyn
