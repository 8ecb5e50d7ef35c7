#include "nadyn/unselectable_table.hpp"

#include "nadyn/random.hpp"
#include "nadyn/unselectable.hpp"
#include "seed_statistics.hpp"

#include <cmath>
#include <cstdio>

namespace nadyn {

using tables::mean_of;
using tables::spread_of;

namespace {

// Streams of the table's keys, away from the simulation's (initial, weights, layers).
constexpr std::uint64_t unselectable_stream = 1u << 20;

} // namespace

std::vector<double> gaussian_keys(std::uint64_t seed, std::size_t n, std::size_t d) {
    random_source source(stream_seed(seed, unselectable_stream + 4096 * n + d));
    std::vector<double> keys(n * d);
    for (double& x : keys)
        x = source.normal();
    return keys;
}

std::vector<unselectable_row> unselectable_table(const unselectable_table_settings& settings) {
    std::vector<unselectable_row> rows;
    for (std::size_t n : settings.ns)
        for (std::size_t d : settings.ds) {
            std::vector<double> raw, sphere;
            for (std::uint64_t seed : settings.seeds) {
                std::vector<double> keys = gaussian_keys(seed, n, d);
                raw.push_back(unselectable_fraction(keys.data(), n, d));
                for (std::size_t k = 0; k < n; ++k) {
                    double norm2 = 0.0;
                    for (std::size_t c = 0; c < d; ++c)
                        norm2 += keys[k * d + c] * keys[k * d + c];
                    const double norm = std::sqrt(norm2);
                    for (std::size_t c = 0; c < d; ++c)
                        keys[k * d + c] /= norm;
                }
                sphere.push_back(unselectable_fraction(keys.data(), n, d));
            }
            rows.push_back({n, d, settings.seeds.size(), mean_of(raw), spread_of(raw),
                            mean_of(sphere), spread_of(sphere)});
        }
    return rows;
}

std::string unselectable_table_csv(const std::vector<unselectable_row>& rows) {
    std::string out = "n,d,seeds,raw_mean,raw_spread,sphere_mean,sphere_spread\n";
    for (const auto& r : rows) {
        char line[256];
        std::snprintf(line, sizeof line, "%zu,%zu,%zu,%.6f,%.6f,%.6f,%.6f\n", r.n, r.d, r.seeds,
                      r.raw_mean, r.raw_spread, r.sphere_mean, r.sphere_spread);
        out += line;
    }
    return out;
}

std::string unselectable_table_markdown(const std::vector<unselectable_row>& rows,
                                        const unselectable_table_settings& settings) {
    std::string out =
        "Fraction of unselectable keys (in the convex hull of the other keys: no query gives "
        "them the highest score) among n standard Gaussian keys in d dimensions, mean ± "
        "standard deviation over " +
        std::to_string(settings.seeds.size()) +
        " seeds. 'raw': the keys as drawn (no scaling step, as in no-norm); 'LayerNorm "
        "scaling': the same keys divided by their norms (on the sphere).\n\n"
        "| n | d | raw | LayerNorm scaling |\n|---|---|-----|-------------------|\n";
    for (const auto& r : rows) {
        char line[256];
        std::snprintf(line, sizeof line, "| %zu | %zu | %.4f ± %.4f | %.4f ± %.4f |\n", r.n, r.d,
                      r.raw_mean, r.raw_spread, r.sphere_mean, r.sphere_spread);
        out += line;
    }
    return out;
}

std::string unselectable_table_claim() {
    return "Brody et al.'s claim: LayerNorm is a projection onto the hyperplane orthogonal to "
           "(1, ..., 1) followed by a scaling to a fixed norm, and the scaling matters for "
           "attention: without it, some keys lie inside the convex hull of the other keys, so "
           "no query can give them the highest score (\"unselectable\" keys); after the scaling "
           "every key is on a sphere, a strictly convex surface, and every key is selectable. "
           "Ours: n standard Gaussian keys in d dimensions, as drawn (\"raw\", what attention "
           "sees under `no-norm`) and divided by their norms (\"LayerNorm scaling\"). A key is "
           "decided by one linear program (GLPK's simplex: the best margin of a query in a box), "
           "and counted selectable only when the query found beats every other key by more than "
           "a rigorous bound on the rounding of the scores "
           "([docs/model.md §12](../docs/model.md#12-unselectable-keys)). The scaled column is "
           "exactly 0, as the claim says; the raw fraction is large in low dimension (in the "
           "plane only about 2 sqrt(2 pi ln n) of n Gaussian points are hull vertices) and falls "
           "to 0 once n <= d + 1 (affinely independent points are all vertices) and, for larger "
           "n, as d grows. `nadyn table unselectable --seeds 1 2 3 4 5` reproduces it (about "
           "30 s; `/usr/bin/python3 scripts/figure_unselectable.py results` redraws the figure). "
           "The same fraction is available per frame of any run with `--observe "
           "unselectable`.\n";
}

} // namespace nadyn
