#pragma once
// Observables of one frame (docs/model.md §5), in O(n d) memory:
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
#include "nadyn/model/cluster_history.hpp"

#include <array>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

struct attention_weights; // weights.hpp

inline constexpr std::array<std::string_view, 15> observable_names{
    "mean_cos",   "gap",       "velocity",   "variance",     "displacement",
    "r_mean",     "r_min",     "r_max",      "min_cos",      "clusters",
    "norm_error", "step_size", "step_error", "argmax_flips", "attention_entropy"};
// norm_error is max_k | ‖theta_k‖ - 1 |, the numerical contract of section 6; step_size is
// the step the integrator tries next (dopri5's controller state, dt otherwise), which a
// resumed run needs to continue bit for bit; step_error is the step-doubling estimate of
// the local error of one fixed step (integrate.hpp; NaN for dopri5 and layers);
// argmax_flips and attention_entropy describe the attention itself (docs/model.md §11,
// attention_observables.hpp).

// What each observable means, as written into every trajectory file (the `description` and
// `unit` attributes of /observables/<name>, and `nadyn inspect --describe`). `integer`:
// stored as int64 (a count), not float64. Time t is continuous depth (one layer = dt).
struct observable_info {
    std::string_view name, description, unit;
    bool integer = false;
};

inline constexpr std::array<observable_info, 15> observable_table{{
    {"mean_cos",
     "mean cosine <theta_k, theta_l> over all pairs k != l of token directions, "
     "(|S|^2 - n) / (n (n-1)) with S = sum_k theta_k; 1 when all tokens coincide, 0 for "
     "orthogonal ones (1 for n = 1)",
     "1"},
    {"gap",
     "1 - mean_cos = mean of 1 - <theta_k, theta_l> over k != l, computed as n/(n-1) * variance "
     "so that it keeps its relative accuracy as the tokens collapse",
     "1"},
    {"velocity",
     "d mean_cos / dt at this state, 2 <S, sum_k d theta_k/dt> / (n (n-1)) from the ODE "
     "right-hand side (not by differencing frames); with --integrator layers, the ODE's value at "
     "the layer's state",
     "1/t"},
    {"variance",
     "mean over tokens of |theta_k - m|^2 with m = S / n the (unnormalised) mean direction", "1"},
    {"displacement",
     "mean over tokens of the angle between theta_k(t) and theta_k(0), "
     "2 asin(|theta_k(t) - theta_k(0)| / 2); counts rotations of the whole cloud too",
     "rad"},
    {"r_mean", "mean token magnitude r_k (x_k = r_k theta_k)", "r"},
    {"r_min", "smallest token magnitude r_k; the model needs r_k > 0", "r"},
    {"r_max", "largest token magnitude r_k", "r"},
    {"min_cos",
     "smallest cosine <theta_k, theta_l> over pairs k != l (1: a single point; 1 for n = 1)", "1"},
    {"clusters",
     "number of clusters: connected components of the graph joining k and l when "
     "<theta_k, theta_l> >= 1 - cluster_eps (single linkage; cluster_eps in /parameters)",
     "count", true},
    {"norm_error",
     "max over tokens of | |theta_k| - 1 | after the projection onto the sphere (numerical "
     "contract: <= 1e-12)",
     "1"},
    {"step_size",
     "the step the integrator tries next: dopri5's controller step (what a resumed run needs to "
     "continue bit for bit), dt for rk4, euler and layers",
     "t"},
    {"step_error",
     "step-doubling estimate of the local error of one fixed step from this state: "
     "max(max |theta(dt) - theta(dt/2 twice)|, max_k |r relative difference|) / (2^p - 1), p = 4 "
     "for rk4, 1 for euler; warned about above 1e-6; NaN for dopri5 (controlled by rtol/atol) and "
     "layers (no discretisation)",
     "1"},
    {"argmax_flips",
     "fraction of (token, head) pairs whose most-attended key argmax_j w_kj differs between the "
     "attention with norm noise and the noiseless attention at the same state (ties to the "
     "lowest index); 0 without --norm-noise (docs/model.md section 11)",
     "1"},
    {"attention_entropy",
     "mean over tokens and heads of the softmax row's entropy -sum_j w_kj log w_kj divided by "
     "log n: 0 when each token attends to one key, 1 for uniform attention (0 for n = 1); of the "
     "attention the run uses (with its norm noise; docs/model.md section 11)",
     "1"},
}};

static_assert(
    [] {
        for (std::size_t i = 0; i < observable_names.size(); ++i)
            if (observable_table[i].name != observable_names[i]) return false;
        return true;
    }(),
    "observable_table describes observable_names, in the same order");

// The description of one of observable_names (nullptr for a name nadyn does not define).
constexpr const observable_info* find_observable_info(std::string_view name) {
    for (const auto& entry : observable_table)
        if (entry.name == name) return &entry;
    return nullptr;
}

// Observables a run computes only when it asks for them (--observe), written after the
// others in this order:
//
//   unselectable  fraction of the keys attention uses, K_h y_j (y_j = theta_j, or r_j theta_j
//                 for no-norm), that lie in the convex hull of the other keys (no query can
//                 select them; docs/model.md §12, unselectable.hpp), mean over the heads.
//                 n linear programs per frame.
//   pair_change   mean over pairs k < l of |<theta_k, theta_l> - <theta'_k, theta'_l>|, theta'
//                 the directions of the previous recorded frame: how much the pairwise
//                 cosines moved since it (a rotation of every token together moves none).
//                 NaN at the first frame of a run. A second Gram pass per frame, in blocks.
//   angle         mean over k of the angle between theta_k and theta'_k,
//                 2 asin(|theta_k - theta'_k| / 2): how far each token moved since the
//                 previous recorded frame, rotations included. NaN at the first frame.
// Both keep the previous frame's directions (n d doubles); a resumed run takes them from
// the file's last kept frame, so it continues as an uninterrupted run would.
//   energy        the interaction energy E = (1 / (2 beta n^2)) sum_{i,j} exp(beta <Q_h y_i,
//                 K_h y_j>) of the heads (docs/model.md §5.1), recorded as
//                 (1 / beta) log((1 / (H n^2)) sum_h sum_{i,j} exp(beta <Q_h y_i, K_h y_j>))
//                 = (1 / beta) log(2 beta E / c), c = 1 (heads' mean) or H (sum): increasing
//                 in E, finite at every beta, its beta -> 0 limit the mean logit per beta.
//                 O(H n^2 d) per frame (interaction_energy).
//   effective_rank  exp(-sum_i p_i log p_i), p_i = s_i / sum_j s_j over the singular values
//                 s_i of the n x d matrix of directions (Eigen's BDCSVD on the n x d matrix,
//                 not the d x d Gram matrix, whose eigenvalues square the condition and
//                 leave zero singular values at ~1e-8 instead of ~1e-16): 1 for one cluster,
//                 min(n, d) for orthonormal directions. O(n d^2) per frame.
//   pair_density  fraction of pairs k < l with <theta_k, theta_l> >= 1 - cluster_eps, the
//                 links of `clusters`; counted in compute()'s Gram blocks.
//   modes         K values per frame (--mode-count K), m_k = (1/n^2) sum_{i,j} G_k(<theta_i,
//   theta_j>)
//                 for k = 1..K, G_k the Gegenbauer polynomial of S^{d-1} with G_k(1) = 1
//                 (zonal_polynomials): the squared norm of the degree-k spherical-harmonic
//                 part of the empirical measure over its value at a point mass, in [0, 1]
//                 (docs/model.md §5). Summed in compute()'s Gram blocks, O(n^2 K).
inline constexpr std::array<std::string_view, 7> optional_observable_names{
    "unselectable", "pair_change", "angle", "energy", "effective_rank", "pair_density", "modes"};

// What each optional observable means (as observable_table), in the same order.
inline constexpr std::array<observable_info, 7> optional_observable_table{{
    {"unselectable",
     "fraction of the keys attention uses, K_h y_j (y_j = theta_j, or r_j theta_j for no-norm), "
     "that lie in the convex hull of the other keys, so that no query can select them; mean over "
     "the heads (docs/model.md section 12)",
     "1"},
    {"pair_change",
     "mean over pairs k < l of |<theta_k, theta_l> - <theta'_k, theta'_l>| with theta' the "
     "directions of the previous recorded frame: the change of the pairwise cosines since that "
     "frame, which a common rotation of all tokens leaves at 0; NaN at the first frame",
     "1"},
    {"angle",
     "mean over tokens of the angle between theta_k and its direction theta'_k at the previous "
     "recorded frame, 2 asin(|theta_k - theta'_k| / 2); counts rotations of the whole cloud too; "
     "NaN at the first frame",
     "rad"},
    {"energy",
     "interaction energy E = (1 / (2 beta n^2)) sum_{i,j} exp(beta <Q_h y_i, K_h y_j>) of the "
     "keys and queries attention reads (y = theta, r theta for no-norm), mean (or sum) over the "
     "heads, recorded as (1 / beta) log((1 / (H n^2)) sum_h sum_{i,j} exp(beta <Q_h y_i, K_h "
     "y_j>)) = (1 / beta) log(2 beta E / c), c = 1 for the heads' mean and H for their sum: "
     "increasing in E, never overflowing, between the mean and the largest logit per beta, and "
     "at beta = 0 its limit, the mean of <Q_h y_i, K_h y_j>; nondecreasing in time when the "
     "dynamics are a gradient flow of E (docs/model.md section 5.1)",
     "1"},
    {"effective_rank",
     "exp of the entropy of the normalised singular values p_i = s_i / sum_j s_j of the n x d "
     "matrix of directions, exp(-sum_i p_i log p_i): 1 when all tokens are one direction (or "
     "its opposite), min(n, d) for orthonormal directions",
     "1"},
    {"pair_density",
     "fraction of pairs k < l whose cosine <theta_k, theta_l> is >= 1 - cluster_eps (the links "
     "of clusters; cluster_eps in /parameters); 1 for n = 1",
     "1"},
    {"modes",
     "spectral modes of the empirical measure, one column per degree k = 1..K (K: the mode_count "
     "parameter, --mode-count): m_k = (1/n^2) sum_{i,j} G_k(<theta_i, theta_j>), G_k the "
     "Gegenbauer polynomial "
     "of S^{d-1} normalised to G_k(1) = 1 (Chebyshev T_k for d = 2): the squared norm of the "
     "measure's degree-k spherical-harmonic part over its value for a single point; in [0, 1], "
     "1 for one cluster, about 1/n for independent uniform directions, "
     "|(1/n) sum_j exp(i k phi_j)|^2 on the circle",
     "1"},
}};

static_assert(
    [] {
        for (std::size_t i = 0; i < optional_observable_names.size(); ++i)
            if (optional_observable_table[i].name != optional_observable_names[i]) return false;
        return true;
    }(),
    "optional_observable_table describes optional_observable_names, in the same order");

// The description of a standard or an optional observable (nullptr for a name nadyn does not
// define): what a trajectory file writes as /observables/<name>'s description and unit, so
// that an optional observable is described like the others.
constexpr const observable_info* find_any_observable_info(std::string_view name) {
    if (const observable_info* standard = find_observable_info(name)) return standard;
    for (const auto& entry : optional_observable_table)
        if (entry.name == name) return &entry;
    return nullptr;
}

struct frame_observables {
    double mean_cos = 1, gap = 0, velocity = 0, variance = 0, displacement = 0;
    double r_mean = 0, r_min = 0, r_max = 0, min_cos = 1, clusters = 1, norm_error = 0;
    double step_size = 0;
    double step_error = 0;
    double argmax_flips = 0, attention_entropy = 0; // attention_observables.hpp
    // Only when requested (optional_observable_names); the motion since the previous
    // recorded frame is NaN where there is none.
    double unselectable = 0;
    double pair_change = std::numeric_limits<double>::quiet_NaN();
    double angle = std::numeric_limits<double>::quiet_NaN();
    double energy = 0;
    double effective_rank = 1, pair_density = 1;
    std::vector<double> modes; // m_1 .. m_K; empty unless asked for
    // The cluster history (cluster_history.hpp) after this frame, when the run tracks it:
    // every token's label, the frame's merge events, and t_k for k = clustering_levels(n).
    std::vector<std::int64_t> cluster_labels;
    std::vector<merge_event> merges;
    std::vector<double> clustering_times;
    // The values of observable_names, in that order.
    [[nodiscard]] std::vector<double> values() const;
    // The value of an optional observable (one of optional_observable_names but modes).
    [[nodiscard]] double optional_value(std::string_view name) const;
    // Appends the values of an optional observable to `out`: modes' K values, or the one
    // value of the others.
    void append_optional(std::string_view name, std::vector<double>& out) const;
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

    // The motion since the previous recorded frame: sets out.angle, and out.pair_change when
    // `pair_change` (a second blocked Gram pass), from theta and the directions of the
    // previous call (or of set_previous_frame); NaN when there are none. Then keeps theta as
    // the previous frame. The result does not depend on the thread count.
    void compute_motion(const double* theta, bool pair_change, frame_observables& out);
    // The previous recorded frame without measuring anything (a resumed run: the file's last
    // kept frame).
    void set_previous_frame(const double* theta);

    // What compute() also measures in its Gram blocks (optional observables): the fraction of
    // pairs linked at cos >= 1 - cluster_eps (out.pair_density). Off by default, so a run
    // that does not ask does no more than before.
    void measure_pairs(bool pair_density) { m_pair_density = pair_density; }
    // And the spectral modes m_1 .. m_K into out.modes (K = 0: none).
    void measure_modes(std::size_t K) { m_modes = K; }
    // Which of compute()'s pairwise observables a run records (--observables): min_cos and
    // clusters (with components()). Both on by default. With neither, pair_density nor
    // modes, compute() skips the Gram pass, its O(n^2 d) part, and leaves min_cos and
    // clusters at their defaults.
    void measure_pairwise(bool min_cos, bool clusters) {
        m_min_cos = min_cos;
        m_clusters = clusters;
    }

    // The single-linkage components of the last compute(): per token the smallest token of
    // its cluster (the graph of `clusters`), what cluster_tracker::update() takes, so the
    // cluster history needs no second pass over the pairs.
    [[nodiscard]] const std::vector<int>& components() const { return m_components; }

  private:
    std::size_t m_n, m_d, m_block;
    std::vector<double> m_initial;
    double m_cluster_eps;
    int m_threads;                                    // 0: omp_get_max_threads() at each call
    std::vector<std::vector<double>> m_gram;          // block x n per thread
    std::vector<std::vector<int>> m_parents;          // union-find forest per thread
    std::vector<double> m_previous;                   // n x d, empty before the first frame
    std::vector<std::vector<double>> m_previous_gram; // block x n per thread
    bool m_pair_density = false;
    std::size_t m_modes = 0;
    bool m_min_cos = true, m_clusters = true;
    std::vector<int> m_components; // n, after compute()
};

// The observable `energy` (docs/model.md §5.1) of the n x d rows y attention reads (theta_k,
// r_k theta_k for no-norm, a ⊙ theta_k + b under layernorm) and the heads' Q_h, K_h (an
// empty matrix is the identity; V and norm noise play no part):
//
//     energy = (1 / beta) log((1 / (H n^2)) sum_h sum_{i,j} exp(beta <Q_h y_i, K_h y_j>))
//
// evaluated as a log-sum-exp with the largest logit subtracted (no overflow at any beta), or,
// when every |beta <Q_h y_i, K_h y_j>| <= 1, as log1p of the mean of expm1 (full relative
// accuracy as beta -> 0); beta = 0 gives the limit, the mean of <Q_h y_i, K_h y_j>. The logits
// are formed in row blocks of 128 (O(128 n) memory per thread, `workspace`), the blocks of all
// heads shared among `threads` OpenMP threads (0: omp_get_max_threads()) and folded in block
// order: the result does not depend on the thread count.
double interaction_energy(const double* inputs, std::size_t n, std::size_t d, double beta,
                          const attention_weights& weights, std::vector<double>& workspace,
                          int threads = 1);
// G_1(x) .. G_K(x) into out[0 .. K-1]: the Gegenbauer polynomials of S^{d-1} (parameter
// lambda = (d-2)/2; Chebyshev T_k for d = 2) normalised to G_k(1) = 1, by the recurrence
//   G_0 = 1, G_1 = x, G_{k+1} = ((2k + d - 2) x G_k - k G_{k-1}) / (k + d - 2),
// the three-term recurrence of C_k^lambda divided by C_k^lambda(1): its values stay in
// [-1, 1] on [-1, 1] (C_k^lambda(1) itself overflows for large d and k).
void zonal_polynomials(std::size_t K, std::size_t d, double x, double* out);

// Values per frame of each observable named: K = `modes` for modes, 1 for the others (the
// widths of the files' /observables/<name>/value rows).
// The one place that knows an observable's width.
constexpr std::size_t observable_width(std::string_view name, std::size_t modes) {
    return name == "modes" ? modes : 1;
}
inline std::vector<std::size_t> observable_widths(const std::vector<std::string>& names,
                                                  std::size_t modes) {
    std::vector<std::size_t> widths;
    for (const std::string& name : names)
        widths.push_back(observable_width(name, modes));
    return widths;
}

// effective_rank of the n x d row-major directions theta (see optional_observable_names):
// exp of the entropy of the normalised singular values; 1 when every singular value but one
// is zero, and 0 for a matrix of zeros (no direction at all).
double effective_rank(const double* theta, std::size_t n, std::size_t d);

} // namespace nadyn
