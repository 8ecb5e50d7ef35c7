// What a sweep says of its runs (issue 39): an axis's generated values are shown and recorded
// in their shortest exact text (0.1, not 0.10000000000000001) while the coordinate keeps the
// exact values, and each run's parameter record says what the sweep file keeps of the
// positions, not the "all" of the run that hands every frame to the sweep.
#include "cli_support.hpp"

#include "files/hdf5.hpp"
#include "nadyn/experiment/experiment.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include <hdf5.h>

using namespace nadyn_test;

namespace {

// The runs' parameter records, in run order.
std::vector<std::string> parameter_records(const std::string& path) {
    const auto guard = nadyn::detail::hdf5_lock();
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    const auto data = file.open_dataset("parameters");
    std::size_t count = 1;
    for (auto n : data.shape())
        count *= n;
    std::vector<char*> text(count, nullptr);
    data.read_all(nadyn::detail::hdf5_string_type(), text.data());
    std::vector<std::string> out;
    for (char* record : text) {
        out.emplace_back(record ? record : "");
        H5free_memory(record);
    }
    return out;
}

std::vector<double> coordinate(const std::string& path, const std::string& name) {
    const auto guard = nadyn::detail::hdf5_lock();
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    const auto data = file.open_dataset(name);
    std::vector<double> out(data.shape().at(0));
    data.read_all(H5T_NATIVE_DOUBLE, out.data());
    return out;
}

const char* const linspace_experiment = "[run]\nn = 6\nd = 2\nT = 0.2\ndt = 0.1\n"
                                        "positions = \"none\"\n"
                                        "[sweep]\nbeta = { linspace = [0.1, 0.3, 3] }\n";

} // namespace

TEST_CASE("a linspace axis prints and records short values, and its coordinate stays exact") {
    const std::string dir = scratch_dir("sweep_records/short");
    write_text(dir + "/e.toml", linspace_experiment);
    const run_result plan = run_nadyn({"sweep", "e.toml", "--dry-run"}, in_dir(dir));
    REQUIRE(plan.status == 0);
    CHECK(contains(plan.out, "beta (3): 0.1, 0.2, 0.3\n"));
    const run_result sweep =
        run_nadyn({"sweep", "e.toml", "--out", "s.h5", "--quiet"}, in_dir(dir));
    REQUIRE(sweep.status == 0);
    const run_result inspect = run_nadyn({"inspect", "s.h5"}, in_dir(dir));
    REQUIRE(inspect.status == 0);
    CHECK(contains(inspect.out, "\nbeta=0.1 "));
    CHECK(contains(inspect.out, "\nbeta=0.3 "));
    CHECK_FALSE(contains(inspect.out, "0.1000000"));
    // The values themselves are the generator's, bit for bit.
    const std::vector<double> exact = nadyn::spaced_values("linspace", 0.1, 0.3, 3);
    const std::vector<double> stored = coordinate(dir + "/s.h5", "beta");
    REQUIRE(stored.size() == exact.size());
    CHECK(std::memcmp(stored.data(), exact.data(), exact.size() * sizeof(double)) == 0);
    const std::vector<std::string> records = parameter_records(dir + "/s.h5");
    REQUIRE(records.size() == 3);
    CHECK(contains(records[0], "; beta=0.1; "));
    CHECK(contains(records[2], "; beta=0.3; "));
    CHECK(contains(records[0], "; T=0.2; dt=0.1; "));
}

TEST_CASE("each run's record says what the sweep file keeps of the positions") {
    const std::string dir = scratch_dir("sweep_records/positions");
    for (const std::string kept : {"none", "final", "all"}) {
        write_text(dir + "/e.toml", "[run]\nn = 4\nd = 2\nT = 0.2\ndt = 0.1\npositions = \"" +
                                        kept + "\"\n[sweep]\nseed = [1, 2]\n");
        const std::string out = "s_" + kept + ".h5";
        const run_result sweep =
            run_nadyn({"sweep", "e.toml", "--out", out, "--quiet"}, in_dir(dir));
        REQUIRE(sweep.status == 0);
        for (const std::string& record : parameter_records(dir + "/" + out)) {
            INFO(kept << ": " << record);
            CHECK(contains(record, "; positions=" + kept + "; "));
        }
    }
}
