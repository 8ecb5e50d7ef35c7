#pragma once
// `nadyn table unselectable` (docs/model.md §12, Brody et al.): the fraction of unselectable
// keys among n Gaussian keys in d dimensions, raw (no scaling: no-norm's keys) and after
// LayerNorm's scaling step (each key projected to the unit sphere, where the fraction is
// exactly 0), as the mean and spread over seeds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nadyn {

struct unselectable_table_settings {
    std::vector<std::size_t> ns{16, 64, 256};
    std::vector<std::size_t> ds{2, 3, 8, 32};
    std::vector<std::uint64_t> seeds{1, 2, 3, 4, 5};
};

struct unselectable_row {
    std::size_t n = 0, d = 0, seeds = 0;
    double raw_mean = 0, raw_spread = 0;       // Gaussian keys as drawn
    double sphere_mean = 0, sphere_spread = 0; // the same keys scaled to unit norm
};

// Keys of (seed, n, d): n x d standard normal entries, from their own stream.
std::vector<double> gaussian_keys(std::uint64_t seed, std::size_t n, std::size_t d);

std::vector<unselectable_row> unselectable_table(const unselectable_table_settings& settings);
std::string unselectable_table_csv(const std::vector<unselectable_row>& rows);
std::string unselectable_table_markdown(const std::vector<unselectable_row>& rows,
                                        const unselectable_table_settings& settings);
// The claim and the method, as results/README.md states them above the table.
std::string unselectable_table_claim();

} // namespace nadyn
