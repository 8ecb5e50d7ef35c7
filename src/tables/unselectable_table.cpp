#include "nadyn/unselectable_table.hpp"

#include "nadyn/random.hpp"
#include "nadyn/unselectable.hpp"

#include <cmath>
#include <cstdio>

namespace nadyn {

namespace {

// Streams of the table's keys, away from the simulation's (initial, weights, layers).
constexpr std::uint64_t unselectable_stream = 1u << 20;

double mean_of(const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v)
        s += x;
    return s / double(v.size());
}

// Sample standard deviation (0 for one seed).
double spread_of(const std::vector<double>& v) {
    if (v.size() < 2) return 0.0;
    const double m = mean_of(v);
    double s = 0.0;
    for (double x : v)
        s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size() - 1));
}

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

} // namespace nadyn
