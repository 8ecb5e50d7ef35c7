#pragma once
// Shared set-up for the numeric and invariant suites: the symmetric orthogonal start and
// small random configurations, built through the library's public API.
#include "nadyn/model/initial.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/system.hpp"

#include <cmath>
#include <vector>

namespace nadyn::testing {

// theta_k = e_k (n <= d), r_k = r0: the start of docs/model.md §3.
inline state_type symmetric_start(std::size_t n, std::size_t d, double r0 = 1.0) {
    initial_state s = make_initial(initial_spec::parse("orthogonal"), n, d, 0, r0);
    state_type x(state_size(n, d));
    std::copy(s.theta.begin(), s.theta.end(), x.begin());
    std::copy(s.r.begin(), s.r.end(), x.begin() + static_cast<std::ptrdiff_t>(n * d));
    return x;
}

inline state_type uniform_start(std::size_t n, std::size_t d, std::uint64_t seed, double r0 = 1.0) {
    initial_state s = make_initial(initial_spec::parse("uniform"), n, d, seed, r0);
    state_type x(state_size(n, d));
    std::copy(s.theta.begin(), s.theta.end(), x.begin());
    std::copy(s.r.begin(), s.r.end(), x.begin() + static_cast<std::ptrdiff_t>(n * d));
    return x;
}

// A d x d matrix of Gaussian entries times `scale` (random Q, K, V for the kernel tests).
inline matrix random_matrix(random_source& source, std::size_t d, double scale) {
    matrix m(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            m(i, j) = scale * source.normal();
    return m;
}

inline double relative_error(double value, double reference) {
    return std::abs(value - reference) / std::abs(reference);
}

inline double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

} // namespace nadyn::testing
