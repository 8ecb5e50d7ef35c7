// A sweep file records every observable its runs compute, in
// the type a single-run file uses. A sweep with observe = "unselectable" wrote no
// `unselectable` dataset, and `clusters` was float64 in sweep files but int64 in single-run
// files.
#include "cli_support.hpp"

#include "files/hdf5.hpp"
#include "nadyn/experiment/unselectable.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <variant>

using namespace nadyn_test;

namespace {

template <class T>
std::vector<T> read_all(const std::string& path, const std::string& dataset, hid_t type) {
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    const auto data = file.open_dataset(dataset);
    std::size_t count = 1;
    for (auto n : data.shape())
        count *= n;
    std::vector<T> out(count);
    data.read_all(type, out.data());
    return out;
}

std::string text_attribute(const std::string& path, const std::string& dataset,
                           const std::string& name) {
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    const auto value = file.open_dataset(dataset).read_attribute(name);
    REQUIRE(value);
    REQUIRE(std::holds_alternative<std::string>(*value));
    return std::get<std::string>(*value);
}

// The stored type of a dataset: its class and size in bytes.
std::pair<H5T_class_t, std::size_t> stored_type(const std::string& path,
                                                const std::string& dataset) {
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    const hid_t id = H5Dopen2(file.id(), dataset.c_str(), H5P_DEFAULT);
    REQUIRE(id >= 0);
    const hid_t type = H5Dget_type(id);
    const std::pair<H5T_class_t, std::size_t> out{H5Tget_class(type), H5Tget_size(type)};
    H5Tclose(type);
    H5Dclose(id);
    return out;
}

} // namespace

TEST_CASE("a sweep with observe = \"unselectable\" records it, described, at every frame") {
    const std::string dir = scratch_dir("sweep_observables/unselectable");
    write_text(dir + "/exp.toml", R"([run]
n = 10
d = 2
T = 1
dt = 0.1
integrator = "euler"
observe = "unselectable"
positions = "final"

[sweep]
scheme = ["pre-ln", "no-norm"]
seed = [1, 2]
)");
    REQUIRE(run_nadyn({"sweep", "exp.toml", "--out", "s.h5"}, in_dir(dir)).status == 0);
    const std::string path = dir + "/s.h5";
    const auto fractions = read_all<double>(path, "unselectable", H5T_NATIVE_DOUBLE);
    const std::size_t frames = 11;
    REQUIRE(fractions.size() == 4 * frames);
    CHECK(contains(text_attribute(path, "unselectable", "description"), "convex hull"));
    const auto positions = read_all<double>(path, "positions", H5T_NATIVE_DOUBLE);
    const auto magnitudes = read_all<double>(path, "magnitudes", H5T_NATIVE_DOUBLE);
    for (std::size_t run = 0; run < 4; ++run) {
        CAPTURE(run);
        // Runs in row-major order over (scheme, seed): 0, 1 pre-ln; 2, 3 no-norm.
        if (run < 2) {
            // Pre-LN's keys are the directions on the circle: distinct points of a strictly
            // convex curve, all selectable, at every frame.
            for (std::size_t f = 0; f < frames; ++f)
                CHECK(fractions[run * frames + f] == 0.0);
            continue;
        }
        for (std::size_t f = 0; f < frames; ++f)
            CHECK(std::isfinite(fractions[run * frames + f]));
        // No-norm's keys are the tokens r_j theta_j: the last frame's fraction, recomputed
        // from the final positions the file holds.
        std::vector<double> tokens(positions.begin() + long(run * 20),
                                   positions.begin() + long((run + 1) * 20));
        for (std::size_t k = 0; k < 10; ++k)
            for (std::size_t a = 0; a < 2; ++a)
                tokens[2 * k + a] *= magnitudes[run * 10 + k];
        CHECK(fractions[run * frames + frames - 1] ==
              nadyn::unselectable_fraction(tokens.data(), 10, 2));
    }

    // Without observe, no such dataset.
    write_text(dir + "/plain.toml", R"([run]
n = 4
T = 0.2
dt = 0.1

[sweep]
seed = [1, 2]
)");
    REQUIRE(run_nadyn({"sweep", "plain.toml", "--out", "plain.h5"}, in_dir(dir)).status == 0);
    CHECK_FALSE(nadyn::detail::hdf5_file::open_read_only(dir + "/plain.h5").has("unselectable"));
}

TEST_CASE("clusters is int64 in a sweep file as in a single-run file; -1 fills missing frames") {
    const std::string dir = scratch_dir("sweep_observables/clusters");
    // Two horizons: the shorter run writes 6 of the 11 frames of the file's frame axis.
    write_text(dir + "/exp.toml", R"([run]
n = 6
d = 3
dt = 0.1
every = 1
integrator = "euler"

[sweep]
T = [0.5, 1.0]
)");
    REQUIRE(run_nadyn({"sweep", "exp.toml", "--out", "s.h5"}, in_dir(dir)).status == 0);
    REQUIRE(run_nadyn({"simulate", "--n", "6", "--d", "3", "--T", "1", "--dt", "0.1", "--every",
                       "1", "--integrator", "euler", "--out", "one.h5", "--quiet"},
                      in_dir(dir))
                .status == 0);
    const std::string sweep = dir + "/s.h5", single = dir + "/one.h5";
    const auto single_type = stored_type(single, "observables/clusters/value");
    CHECK(single_type.first == H5T_INTEGER);
    CHECK(single_type.second == 8);
    CHECK(stored_type(sweep, "clusters") == single_type);
    // The fill value, as a CF attribute xarray masks.
    const auto file = nadyn::detail::hdf5_file::open_read_only(sweep);
    const auto fill = file.open_dataset("clusters").read_attribute("_FillValue");
    REQUIRE(fill);
    CHECK(std::get<std::int64_t>(*fill) == -1);
    CHECK(contains(text_attribute(sweep, "clusters", "description"), "-1"));

    const auto clusters = read_all<std::int64_t>(sweep, "clusters", H5T_NATIVE_INT64);
    const auto alone =
        read_all<std::int64_t>(single, "observables/clusters/value", H5T_NATIVE_INT64);
    REQUIRE(clusters.size() == 2 * 11);
    REQUIRE(alone.size() == 11);
    // The T = 1 run is the single run; the T = 0.5 run has frames 0..5, then the fill.
    for (std::size_t f = 0; f < 11; ++f) {
        CAPTURE(f);
        CHECK(clusters[11 + f] == alone[f]);
        if (f <= 5) {
            CHECK(clusters[f] >= 1);
            CHECK(clusters[f] <= 6);
        } else {
            CHECK(clusters[f] == -1);
        }
    }
    // nadyn inspect's summary reads the last frame each run wrote, not the fill.
    const run_result inspect = run_nadyn({"inspect", "s.h5"}, in_dir(dir));
    REQUIRE(inspect.status == 0);
    CHECK_FALSE(contains(inspect.out, "-1 ±"));
    CHECK_FALSE(contains(inspect.out, "nan"));
}
