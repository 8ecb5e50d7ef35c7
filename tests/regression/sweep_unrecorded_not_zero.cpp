// Regression (issue 39 item 4): in a sweep whose runs differ in what they record (an
// observables axis, which a program builds through the library: the experiment files refuse
// one), the runs without clusters were stored as measured: merge_count 0 (so "merge events:
// 0"), a plateau of length 0. Their entries are now fill values (merge_count -1, the
// _FillValue; plateau NaN and -1) and /recorded marks which runs record which observable, so
// that no reader takes unrecorded for zero; the history of such a run is "not recorded".
#include "cli_support.hpp"

#include "experiment/sweep_engine.hpp"
#include "files/hdf5.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace nadyn_test;

namespace {

template <class T> std::vector<T> values_of(const std::string& path, const char* name, hid_t type) {
    const auto guard = nadyn::detail::hdf5_lock();
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    const auto data = file.open_dataset(name);
    std::size_t count = 1;
    for (auto n : data.shape())
        count *= n;
    std::vector<T> out(count);
    data.read_all(type, out.data());
    return out;
}

// Two runs without clusters (seed 1, 2), then two with them.
nadyn::experiment mixed_observables() {
    nadyn::experiment e;
    e.source = "sweep_unrecorded_not_zero";
    e.base.n = 8;
    e.base.d = 3;
    e.base.beta = 1.0;
    e.base.integration.T = 20.0;
    e.positions = nadyn::sweep_positions::none;
    e.axes = {{"observables", {"mean_cos", "mean_cos,clusters"}}, {"seed", {"1", "2"}}};
    return e;
}

} // namespace

TEST_CASE("runs that do not record clusters keep fill values, and the file says which") {
    const std::string dir = scratch_dir("sweep_unrecorded_not_zero");
    const std::string path = dir + "/s.h5";
    const nadyn::experiment e = mixed_observables();
    nadyn::sweep_options options;
    options.overwrite = true;
    const nadyn::sweep_summary summary = nadyn::run_sweep(e, path, options);
    REQUIRE(summary.complete == 4);

    const auto merges = values_of<std::int64_t>(path, "merge_count", H5T_NATIVE_INT64);
    REQUIRE(merges.size() == 4);
    CHECK(merges[0] == -1); // not recorded, not "no merge events"
    CHECK(merges[1] == -1);
    CHECK(merges[2] >= 1); // 8 tokens at beta = 1 merge by T = 20
    CHECK(merges[3] >= 1);
    const auto plateau = values_of<double>(path, "plateau_length", H5T_NATIVE_DOUBLE);
    CHECK(std::isnan(plateau[0]));
    CHECK(std::isnan(plateau[1]));
    CHECK(plateau[2] > 0.0);
    const auto count = values_of<std::int64_t>(path, "plateau_clusters", H5T_NATIVE_INT64);
    CHECK(count[0] == -1);
    CHECK(count[2] >= 1);
    {
        const auto guard = nadyn::detail::hdf5_lock();
        const auto file = nadyn::detail::hdf5_file::open_read_only(path);
        const auto fill = file.open_dataset("merge_count").read_attribute("_FillValue");
        REQUIRE(fill);
        CHECK(std::get<std::int64_t>(*fill) == -1);
    }

    // /recorded over (observables, seed, observable): 1 where the run records it.
    const nadyn::sweep_layout layout = nadyn::detail::layout_of(e);
    const auto index_of = [&](const char* name) {
        return std::size_t(std::find(layout.observables.begin(), layout.observables.end(), name) -
                           layout.observables.begin());
    };
    const std::size_t clusters = index_of("clusters"), mean_cos = index_of("mean_cos");
    REQUIRE(clusters < layout.observables.size());
    const auto recorded = values_of<signed char>(path, "recorded", H5T_NATIVE_SCHAR);
    REQUIRE(recorded.size() == 4 * layout.observables.size());
    for (std::size_t run = 0; run < 4; ++run) {
        INFO("run " << run);
        CHECK(recorded[run * layout.observables.size() + clusters] == (run >= 2 ? 1 : 0));
        CHECK(recorded[run * layout.observables.size() + mean_cos] == 1);
    }

    // The history of a run without clusters is "not recorded", never zero merge events.
    try {
        (void)nadyn::read_sweep_history(path, layout, 0);
        FAIL("a run without clusters gave a history");
    } catch (const nadyn::input_error& error) {
        CHECK(contains(error.what(), "merge events not recorded (add clusters to observables)"));
    }
    const nadyn::sweep_run_history history = nadyn::read_sweep_history(path, layout, 2);
    CHECK(history.merge_count == std::size_t(merges[2]));
}

TEST_CASE("a sweep whose runs all record the same observables has no /recorded") {
    const std::string dir = scratch_dir("sweep_unrecorded_not_zero/uniform");
    nadyn::experiment e = mixed_observables();
    e.axes = {{"seed", {"1", "2"}}};
    nadyn::sweep_options options;
    options.overwrite = true;
    REQUIRE(nadyn::run_sweep(e, dir + "/s.h5", options).complete == 2);
    const auto guard = nadyn::detail::hdf5_lock();
    CHECK_FALSE(nadyn::detail::hdf5_file::open_read_only(dir + "/s.h5").has("recorded"));
}
