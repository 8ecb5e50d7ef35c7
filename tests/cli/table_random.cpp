// nadyn table random: the measurement rows, the verdicts after them, progress on stderr, and
// --quick's preset (overridden by explicit flags).
#include "cli_support.hpp"

#include <doctest/doctest.h>

using namespace nadyn_test;

TEST_CASE("table random prints a row per scheme, then the verdicts, with progress") {
    const run_result r = run_nadyn({"table", "random", "--quick", "--random-n", "12", "--random-d",
                                    "8", "--layers", "20", "--seeds", "1", "2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    // The explicit flags win over --quick's preset.
    CHECK(contains(r.out, "n = 12, d = 8, one head"));
    CHECK(contains(r.out, "20 layers"));
    CHECK(contains(r.out, "2 seeds"));
    CHECK(contains(r.out, "gain, layer 1"));
    CHECK(contains(r.out, "absolute angle, first 10% (rad/layer)"));
    const auto lines = split_lines(r.out);
    std::size_t measurement_rows = 0, verdict_rows = 0;
    bool in_verdicts = false;
    for (const auto& line : lines) {
        if (line.rfind("Verdicts:", 0) == 0) in_verdicts = true;
        for (const char* scheme :
             {"post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"})
            if (line.rfind("| " + std::string(scheme) + " |", 0) == 0)
                ++(in_verdicts ? verdict_rows : measurement_rows);
    }
    CHECK(measurement_rows == 6);
    CHECK(verdict_rows == 6);
    CHECK(contains(r.out, "early agrees"));
    // One progress line per run (6 schemes x 2 seeds) on stderr, as each starts: small runs
    // go side by side, so they may start in any order, but each starts exactly once.
    CHECK(contains(r.err, "(run 1/12,"));
    CHECK(contains(r.err, "(run 12/12,"));
    for (const char* scheme : {"post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"})
        for (const char* seed : {"1", "2"}) {
            const std::string run = std::string(scheme) + ", seed " + seed + " (run ";
            CHECK_MESSAGE(count_of(r.err, run) == 1, run);
        }

    const run_result csv = run_nadyn({"table", "random", "--format", "csv", "--random-n", "8",
                                      "--random-d", "4", "--layers", "20", "--seeds", "1"});
    REQUIRE(csv.status == 0);
    const auto rows = split_lines(csv.out);
    REQUIRE(rows.size() == 7);
    CHECK(rows[0].rfind("scheme,gain_layer1,gain_layer1_spread,", 0) == 0);
}
