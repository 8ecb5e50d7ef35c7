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
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

struct attention_weights; // weights.hpp
struct frame_observables;

// An observable is one row of a table (observable_table() in experiment/observable_table.hpp
// assembles the rows of every layer; the model's own are model_observables()): its name,
// what it means, its unit, its width, the pass over the frame it needs, and its computation.
// The row drives --observables / --observe (names, help), the file's /observables/<name>
// (description, unit, type, width), the sweep file's variables, nadyn inspect --describe
// and the generated table of docs/file-format.md.

// The pass over a frame an observable's value comes from. The run makes each pass only when
// a recorded observable needs it.
enum class observable_pass {
    moments,   // O(n d) sums over the tokens (observables_calculator::compute_moments)
    gram,      // the pairwise pass over the Gram matrix in blocks, O(n^2 d)
    attention, // the pass over each head's logits (attention_observables.hpp), O(H n^2 d)
    motion,    // the motion since the previous recorded frame (compute_motion)
    own,       // its own computation, from the frame's state alone
};

// Values per frame: one, or K (the run's mode_count) for a spectral observable.
enum class observable_width { scalar, modes };

// What an observable's computation reads at a frame.
struct frame_context {
    std::size_t n = 0, d = 0;
    const double* theta = nullptr;              // n x d directions, row-major
    const double* r = nullptr;                  // n magnitudes
    const double* input = nullptr;              // n x d rows attention reads (theta_k, r_k theta_k,
                                                // a ⊙ theta_k + b)
    const attention_weights* weights = nullptr; // this frame's heads
    double beta = 0;                            // the logits' inverse temperature
    int threads = 1;                            // OpenMP threads an own computation may use
    double next_step = 0, step_error = 0;       // the integrator's (integrate.hpp)
    const frame_observables* passes = nullptr;  // what the shared passes measured
};

// The computation: out[0 .. width) from the frame; `workspace` is the observable's own,
// kept across the frames of a run.
using observable_value = void (*)(const frame_context& frame, std::vector<double>& workspace,
                                  double* out);

struct observable {
    std::string_view name;
    // What it means, written into every trajectory file (the `description` and `unit`
    // attributes of /observables/<name>, nadyn inspect --describe, docs/file-format.md).
    std::string_view description, unit;
    // What it costs, in a few words (--observe's help; empty: nothing to say).
    std::string_view cost = {};
    // false: a standard observable, recorded unless --observables leaves it out; true:
    // computed only when --observe asks for it, written after the standard ones.
    bool optional = false;
    bool integer = false; // stored as int64 (a count), not float64
    observable_width width = observable_width::scalar;
    observable_pass pass = observable_pass::own;
    observable_value value = nullptr;
    // The name files written before this one was renamed call it (read and resumed as it).
    std::string_view legacy_name = {};

    // Values per frame with `modes` = K.
    [[nodiscard]] constexpr std::size_t values_per_frame(std::size_t modes) const {
        return width == observable_width::modes ? modes : 1;
    }
};

// Values per frame of each row, with `modes` = K.
inline std::vector<std::size_t> observable_widths(const std::vector<const observable*>& rows,
                                                  std::size_t modes) {
    std::vector<std::size_t> widths;
    for (const observable* row : rows)
        widths.push_back(row->values_per_frame(modes));
    return widths;
}

// The model layer's rows, standard ones first, in file order.
std::span<const observable> model_observables();
// The model's row named `name` (or, for a renamed one, its legacy name), nullptr if none.
const observable* find_model_observable(std::string_view name);

// What the passes of a frame measured, and the frame's values by observable.
struct frame_observables {
    double mean_cos = 1, gap = 0, velocity = 0, variance = 0, displacement = 0;
    double r_mean = 0, r_min = 0, r_max = 0, min_cos = 1, clusters = 1, norm_error = 0;
    double argmax_flips = 0, attention_entropy = 0; // attention_observables.hpp
    // The motion since the previous recorded frame, NaN where there is none.
    double pair_change = std::numeric_limits<double>::quiet_NaN();
    double angle = std::numeric_limits<double>::quiet_NaN();
    double pair_density = 1;
    std::vector<double> modes; // m_1 .. m_K; empty unless asked for
    // The values of the observables the run records (run_config::recorded_observables), one
    // column per observable in that order, each its values_per_frame wide: what the writers
    // take.
    std::vector<double> values;
    // The cluster history (cluster_history.hpp) after this frame, when the run tracks it:
    // every token's label, the frame's merge events, and t_k for k = clustering_levels(n).
    std::vector<std::int64_t> cluster_labels;
    std::vector<merge_event> merges;
    std::vector<double> clustering_times;
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

    // Whether compute() measures displacement and norm_error, a loop over the tokens with an
    // asin each (on by default). Off: both NaN; a run that records neither skips the loop,
    // 4% of the float sweep of examples/simuformer.toml, which records pair_density alone.
    void measure_displacement(bool on) { m_displacement = on; }
    // Whether compute() measures the moments (compute_moments(): mean_cos, gap, variance,
    // velocity; on by default). Off: the four NaN, and a run that records none of them skips
    // two sequential passes over the n d coordinates (2% of the float sweep of
    // examples/simuformer.toml).
    void measure_moments(bool on) { m_moments = on; }

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
    bool m_displacement = true;
    bool m_moments = true;
    std::vector<int> m_components; // n, after compute()
};

// The observable `log_energy` (docs/model.md §5.1) of the n x d rows y attention reads (theta_k,
// r_k theta_k for no-norm, a ⊙ theta_k + b under layernorm) and the heads' Q_h, K_h (an
// empty matrix is the identity; V and norm noise play no part):
//
//     log_energy = (1 / beta) log((1 / (H n^2)) sum_h sum_{i,j} exp(beta <Q_h y_i, K_h y_j>))
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

// effective_rank of the n x d row-major directions theta (its row in observable_table.cpp):
// exp of the entropy of the normalised singular values; 1 when every singular value but one
// is zero, and 0 for a matrix of zeros (no direction at all).
double effective_rank(const double* theta, std::size_t n, std::size_t d);

} // namespace nadyn
