#pragma once
// The random-weights check of "Normalization in Attention Dynamics" (arXiv 2510.22026), still
// computed in C++: the discrete transformer with random per-layer weights. (The initial and
// terminal velocities are the studies studies/initial/ and studies/terminal/.)
#include "nadyn/fit.hpp"
#include "nadyn/scheme.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace nadyn {

// ---- random weights ---------------------------------------------------------------------
// The discrete transformer (--integrator layers) with Gaussian Q, K, V drawn per layer. How
// fast tokens approach each other is measured by rotation-invariant quantities only (a
// fresh V rotates a collapsed cluster as a whole, which moves every token without bringing
// any two closer):
//   gain          (mean_cos(b) - mean_cos(a)) / (b - a): the rise of the mean cosine per layer
//   pair_change   mean over layers in (a, b] and pairs k < l of |cos_kl(i) - cos_kl(i-1)|
// over the windows layer 1, layers 1-5 and the first 10% of layers. The mean angle a token
// moves per layer (`angle`, which counts such rotations) is kept as a separate column.
struct random_table_settings {
    std::size_t n = 128, d = 512, layers = 200;
    double beta = 0.0; // 0: sqrt(d)
    double h = 1.0;    // layer step (1: a literal transformer)
    double r0 = 1.0, alpha = 1.0;
    std::vector<std::uint64_t> seeds{1, 2, 3};
};
// The --quick preset: the same model at n = 64, d = 256 (beta = sqrt d), 100 layers, 2 seeds.
random_table_settings quick_random_settings();

// The checks `nadyn table` and nadyn.table() share: input_error naming the bad setting.
void validate(const random_table_settings& s);

// Layers (first, last] of one window, with its name for the tables.
struct layer_window {
    std::size_t first, last;
    std::string name;
};
// layer 1, layers 1-5, first 10% (at least one layer; windows beyond `layers` are shortened).
std::vector<layer_window> random_speed_windows(std::size_t layers);

struct window_speed {
    double gain;        // rise of mean_cos per layer
    double pair_change; // mean |change of a pairwise cosine| per layer
    double angle;       // mean angle a token moves per layer (rad), rotations included
};
struct random_run_result {
    std::vector<double> mean_cos;      // layers 0 .. L
    std::vector<double> pair_change;   // layers 1 .. L (index i-1 for layer i)
    std::vector<double> angle;         // layers 1 .. L
    std::vector<window_speed> windows; // one per random_speed_windows(L)
    law_fit collapse;                  // best law of the gap over the last half of the layers
    double final_mean_cos = 0.0;
};
// One run (one scheme, one seed): the per-run computation, free of any table logic.
// threads: the run's own (0: all cores); the result does not depend on it.
random_run_result random_weights_run(scheme id, const random_table_settings& s, std::uint64_t seed,
                                     int threads = 0);

struct mean_spread {
    double mean = 0.0, spread = 0.0; // over seeds (spread: standard deviation)
};
struct random_row {
    scheme id;
    std::vector<mean_spread> gain, pair_change, angle; // one per window
    double collapse_mean = 0.0, collapse_spread = 0.0; // parameter of the majority law
    decay_law collapse_law = decay_law::exponential;   // the law most seeds chose
    std::size_t collapse_votes = 0;
    mean_spread final_mean_cos;
    // Verdicts (assign_random_verdicts): per window, fast/moderate/slow of the gain against
    // the median over schemes; of the absolute angle over the first 10% likewise.
    std::vector<std::string> ours_early;
    std::string ours_angle, ours_collapse, paper_early, paper_collapse;
    std::string verdict; // which windows agree with the paper's words, in plain text
};
// The row of one scheme from its runs (one per seed, in s.seeds order); no verdicts yet.
random_row random_weights_row(scheme id, const random_table_settings& s,
                              const std::vector<random_run_result>& runs);
// Verdicts need every row: "fast" above 1.5x, "slow" below 1/1.5x the median over schemes.
void assign_random_verdicts(std::vector<random_row>& rows);

// Progress: called as each run starts (scheme, index of the seed, total runs done so far).
using random_progress = std::function<void(scheme id, std::size_t seed_index, std::size_t done)>;
// Called with each scheme's row (no verdicts yet) and its runs as soon as they finish, in the
// schemes' order.
using random_row_sink =
    std::function<void(const random_row& row, const std::vector<random_run_result>& runs)>;
// Every scheme's row, with verdicts. The runs are scheduled as `nadyn sweep` schedules its
// runs (run_scheduler.hpp): side by side when they are small, one at a time with every core
// when they are large; the numbers are the same either way. Callbacks run one at a time.
std::vector<random_row> random_weights_table(const random_table_settings& s,
                                             const random_row_sink& on_row = {},
                                             const random_progress& progress = {});

// ---- formatting -------------------------------------------------------------------------
// The random-weights table in Markdown: the description and the header of the measurement
// table, one measurement row (printable as soon as the scheme is done), and the verdict table
// (after every row); random_table_markdown is all three.
std::string random_table_header(const random_table_settings& s);
std::string random_measurement_row(const random_row& row, const random_table_settings& s);
std::string random_verdict_table(const std::vector<random_row>& rows,
                                 const random_table_settings& s);
std::string random_table_markdown(const std::vector<random_row>& rows,
                                  const random_table_settings& s);
std::string random_table_csv(const std::vector<random_row>& rows, const random_table_settings& s);
// mean_cos per layer of every run: scheme,seed,layer,mean_cos (the figure's data).
std::string
random_mean_cos_csv(const std::vector<std::pair<scheme, std::vector<random_run_result>>>& runs,
                    const random_table_settings& s);

} // namespace nadyn
