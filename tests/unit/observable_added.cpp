// An observable that exists only in the test tree, added as ARCHITECTURE.md's recipe says: one
// row (name, meaning, unit, width, pass, computation). --observe takes it, a run computes it
// at every frame, the file carries it with its description and unit, --observe's help and the
// generated docs table list it, with nothing else written for it.
#include "nadyn/experiment/observable_table.hpp"
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/files/h5md.hpp"
#include "tools/observable_reference.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace {

using namespace nadyn;

// The spread of the magnitudes, max_k r_k / min_k r_k, from the frame's state.
void magnitude_spread(const frame_context& frame, std::vector<double>&, double* out) {
    const auto [least, most] = std::minmax_element(frame.r, frame.r + frame.n);
    *out = *most / *least;
}

constexpr observable spread_row{
    .name = "r_spread",
    .description = "largest over smallest token magnitude, max_k r_k / min_k r_k (an observable "
                   "of the test tree)",
    .unit = "1",
    .cost = "O(n)",
    .optional = true,
    .pass = observable_pass::own,
    .value = magnitude_spread};

} // namespace

TEST_CASE("an observable outside the library is one row of the table") {
    // Unknown until added: --observe lists the valid choices.
    run_config before;
    CHECK_THROWS_WITH_AS(assign_parameter(before, "observe", "r_spread"),
                         doctest::Contains("unknown observable 'r_spread'"), input_error);

    add_observable(spread_row);
    CHECK(find_observable("r_spread") == find_observable("r_spread"));
    CHECK(find_observable("r_spread")->description == spread_row.description);
    // A name is one observable; a standard row belongs to the library.
    CHECK_THROWS_AS(add_observable(spread_row), std::invalid_argument);
    observable standard = spread_row;
    standard.name = "r_spread_standard";
    standard.optional = false;
    CHECK_THROWS_AS(add_observable(standard), std::invalid_argument);

    std::filesystem::create_directories(NADYN_TEST_TMPDIR);
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/observable_added.h5";
    run_config c;
    assign_parameter(c, "scheme", "no-norm"); // magnitudes that move apart
    assign_parameter(c, "n", "12");
    assign_parameter(c, "d", "3");
    assign_parameter(c, "T", "1");
    assign_parameter(c, "observe", "r_spread,angle");
    // The table's order: the library's optional observables, then those added.
    CHECK(c.observe == std::vector<std::string>{"angle", "r_spread"});
    simulation(c).run_to_file(path, true);

    const trajectory_reader file(path);
    const auto names = file.observable_names();
    REQUIRE(names.size() >= 2);
    CHECK(names[names.size() - 2] == "angle");
    CHECK(names.back() == "r_spread");
    CHECK(file.describe_observable("r_spread").description == spread_row.description);
    CHECK(file.describe_observable("r_spread").unit == "1");
    const std::vector<double> spread = file.observable("r_spread");
    const std::vector<double> r_min = file.observable("r_min"), r_max = file.observable("r_max");
    REQUIRE(spread.size() == file.frame_count());
    REQUIRE(file.frame_count() > 2);
    for (std::size_t f = 0; f < spread.size(); ++f)
        CHECK(spread[f] == r_max[f] / r_min[f]);
    CHECK(spread.back() > spread.front()); // it measures the run, not a constant

    // --observe's help and the generated docs table know it too.
    CHECK(observe_help().find("r_spread (O(n))") != std::string::npos);
    CHECK(tools::observable_reference(true).find("| `r_spread` | 1 | 1 | own |") !=
          std::string::npos);
}
