// nadyn table noise (docs/model.md §11): the files, the rows, and the numbers mathematics
// fixes: no flips without noise, fractions in [0, 1], entropies in [0, 1].
#include "cli_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace nadyn_test;

TEST_CASE("table noise writes noise.md and noise.csv with a row per norm, beta and sigma") {
    const std::string dir = std::string(NADYN_TEST_TMPDIR) + "/table_noise";
    std::filesystem::remove_all(dir);
    const run_result r = run_nadyn(
        {"table",     "noise", "--out-dir",      dir, "--no-figures", "--format", "csv",
         "--noise-n", "12",    "--noise-d",      "6", "--noise-T",    "1",        "--noise-betas",
         "0",         "2",     "--noise-sigmas", "0", "0.1",          "--seeds",  "1",
         "2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(std::filesystem::exists(dir + "/noise.md"));
    std::ifstream file(dir + "/noise.csv");
    std::stringstream text;
    text << file.rdbuf();
    CHECK(text.str() == r.out);
    const auto lines = split_lines(r.out);
    REQUIRE(lines.size() == 1 + 2 * 2 * 2); // header, 2 norms x 2 betas x 2 sigmas
    CHECK(lines[0] == "norm,beta,sigma,seeds,flips_mean,flips_spread,entropy_mean,entropy_spread");
    for (std::size_t i = 1; i < lines.size(); ++i) {
        CAPTURE(lines[i]);
        std::stringstream fields(lines[i]);
        std::string norm, beta, sigma, seeds, flips, flips_spread, entropy, entropy_spread;
        std::getline(fields, norm, ',');
        std::getline(fields, beta, ',');
        std::getline(fields, sigma, ',');
        std::getline(fields, seeds, ',');
        std::getline(fields, flips, ',');
        std::getline(fields, flips_spread, ',');
        std::getline(fields, entropy, ',');
        std::getline(fields, entropy_spread, ',');
        CHECK((norm == "pre-ln" || norm == "qkv-norm"));
        CHECK(seeds == "2");
        // No noise, no flips; beta = 0 ties every key (ties go to the lowest index), so the
        // noise cannot move the top key, and the attention is uniform: entropy exactly 1.
        if (sigma == "0" || beta == "0") CHECK(std::stod(flips) == 0.0);
        if (beta == "0") CHECK(entropy == "1.000000");
        CHECK(std::stod(flips) >= 0.0);
        CHECK(std::stod(flips) <= 1.0);
        CHECK(std::stod(entropy) >= 0.0);
        CHECK(std::stod(entropy) <= 1.0);
        if (sigma == "0.1" && beta == "2") CHECK(std::stod(flips) > 0.0);
    }
}

TEST_CASE("table noise refuses bad settings with one line and status 2") {
    const run_result r = run_nadyn({"table", "noise", "--no-figures", "--noise-sigmas", "-0.1"});
    CHECK(r.status == 2);
    CHECK(contains(r.err, "noise-sigmas must be >= 0"));
    CHECK(line_count(r.err) == 1);
}
