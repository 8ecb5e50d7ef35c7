#pragma once
// `nadyn table noise` (docs/model.md §11, Menary et al.): how often noise on the norms of
// q, k and v changes which key a token attends to most (argmax_flips), for sparse (large
// beta) and isotropic (small beta) attention, under pre-ln with the plain maps and with
// QKV-Norm, gaussian weights; the attention_entropy beside it says how sparse the attention
// is. Each entry is the mean over the frames of a run, then the mean and spread over seeds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nadyn {

struct noise_table_settings {
    std::size_t n = 64, d = 64;
    double T = 4.0, dt = 0.05;             // rk4
    double layer_time = 0.5;               // the noise is redrawn every layer time
    std::vector<double> betas{1.0, 100.0}; // isotropic, sparse
    std::vector<double> sigmas{0.0, 0.01, 0.02, 0.05, 0.1, 0.2}; // 0: the check row
    std::vector<std::uint64_t> seeds{1, 2, 3};
};

struct noise_row {
    bool qkv_norm = false;
    double beta = 0, sigma = 0;
    std::size_t seeds = 0;
    double flips_mean = 0, flips_spread = 0;     // argmax_flips, mean over frames
    double entropy_mean = 0, entropy_spread = 0; // attention_entropy, mean over frames
};

// The checks `nadyn table noise` applies: input_error naming the bad setting.
void validate(const noise_table_settings& settings);

// One row per (norm, beta, sigma): pre-ln then QKV-Norm, betas and sigmas in the given order.
std::vector<noise_row> noise_table(const noise_table_settings& settings);
std::string noise_table_csv(const std::vector<noise_row>& rows);
std::string noise_table_markdown(const std::vector<noise_row>& rows,
                                 const noise_table_settings& settings);
// The claim, the method and what the table shows, as results/README.md states them.
std::string noise_table_claim();

} // namespace nadyn
