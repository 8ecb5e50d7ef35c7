#pragma once
// Observables of one frame (MODEL.md section 5), in O(n d) memory:
//
//   mean_cos      mean of <theta_k, theta_l> over k != l       = (‖S‖^2 - n) / (n (n-1))
//   gap           mean of 1 - <theta_k, theta_l> over k != l   = n / (n-1) * variance
//   velocity      d mean_cos / dt = 2 <S, sum_k d theta_k/dt> / (n (n-1)), from the RHS
//   variance      mean over k of ‖theta_k - m‖^2, m = S / n     (sum of squared differences,
//                 so the gap keeps its relative accuracy near a cluster)
//   displacement  mean over k of the angle between theta_k(t) and theta_k(0)
//   r_mean, r_min, r_max
//   min_cos       smallest <theta_k, theta_l>, k != l           (Gram matrix in blocks)
//   clusters      connected groups of the graph cos >= 1 - eps (single linkage, blocks)
//
// with S = sum_k theta_k. A single token (n = 1) is one cluster: mean_cos = min_cos = 1,
// gap = variance = velocity = 0.
#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

namespace nadyn {

inline constexpr std::array<std::string_view, 12> observable_names{
    "mean_cos", "gap",   "velocity", "variance", "displacement", "r_mean",
    "r_min",    "r_max", "min_cos",  "clusters", "norm_error",   "step_size"};
// norm_error is max_k | ‖theta_k‖ - 1 |, the numerical contract of section 6; step_size is
// the step the integrator tries next (dopri5's controller state, dt otherwise), which a
// resumed run needs to continue bit for bit.

struct frame_observables {
    double mean_cos = 1, gap = 0, velocity = 0, variance = 0, displacement = 0;
    double r_mean = 0, r_min = 0, r_max = 0, min_cos = 1, clusters = 1, norm_error = 0;
    double step_size = 0;
    [[nodiscard]] std::vector<double> values() const;
};

class observables_calculator {
  public:
    // theta_initial: the n x d directions at t = 0 (for the displacement).
    // threads: OpenMP threads of the pairwise pass (0: omp_get_max_threads() at each call).
    observables_calculator(std::size_t n, std::size_t d, std::vector<double> theta_initial,
                           double cluster_eps, std::size_t block = 0, int threads = 0);

    // theta n x d, r n, dtheta the RHS of the directions (n x d) at this state.
    frame_observables compute(const double* theta, const double* r, const double* dtheta);

    // The cheap part only (no pairwise pass): mean_cos, gap, variance, velocity.
    frame_observables compute_moments(const double* theta, const double* dtheta) const;

  private:
    std::size_t m_n, m_d, m_block;
    std::vector<double> m_initial;
    double m_cluster_eps;
    int m_threads;                           // 0: omp_get_max_threads() at each call
    std::vector<std::vector<double>> m_gram; // block x n per thread
    std::vector<std::vector<int>> m_parents; // union-find forest per thread
};

} // namespace nadyn
