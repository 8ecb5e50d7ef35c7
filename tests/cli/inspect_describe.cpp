// nadyn inspect --describe prints what every observable of the file means, from the file.
#include "cli_support.hpp"
#include "nadyn/experiment/observable_table.hpp"

#include "nadyn/model/observables.hpp"

#include <doctest/doctest.h>

using namespace nadyn_test;

TEST_CASE("inspect --describe prints a description for every observable of the file") {
    const std::string dir = scratch_dir("inspect_describe");
    const std::string out = dir + "/run.h5";
    REQUIRE(run_nadyn({"simulate", "--n", "8", "--T", "0.2", "--out", out, "--force", "--quiet"})
                .status == 0);
    const run_result r = run_nadyn({"inspect", out, "--describe"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto lines = split_lines(r.out);
    for (const nadyn::observable& entry : nadyn::model_observables()) {
        if (entry.optional) continue;
        CAPTURE(entry.name);
        bool found = false;
        for (const auto& line : lines) {
            if (line.rfind("  " + std::string(entry.name) + " ", 0) != 0) continue;
            found = true;
            CHECK(contains(line, std::string(entry.description)));
            CHECK_FALSE(contains(line, "not stored in this file"));
        }
        CHECK(found);
    }
    CHECK(contains(r.out, "parameters (/parameters/descriptions)"));
}
