// Issue 39, "a researcher's day without a trip to the source": the small surprises of the
// command line, one test case each.
#include "cli_support.hpp"

#include "nadyn/experiment/experiment.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

using namespace nadyn_test;

namespace {

const char* const two_axes = "[run]\nn = 6\nd = 3\nT = 0.4\ndt = 0.1\nintegrator = \"euler\"\n"
                             "[sweep]\nbeta = [1, 4]\nseed = [1, 2, 3]\n";

std::string refusal(const nadyn::experiment& e, const std::string& point) {
    try {
        (void)e.find_point(point);
    } catch (const nadyn::input_error& error) {
        return error.what();
    }
    return "accepted";
}

} // namespace

TEST_CASE("--point is axis=value,... or an index, and a one-run sweep needs none") {
    const auto e = nadyn::experiment::parse(two_axes, "exp.toml");
    CHECK(e.find_point("beta=4,seed=2") == 4);
    CHECK(e.find_point("seed=2,beta=4.0") == 4); // any order, equal as a number
    CHECK(e.find_point("4") == 4);
    CHECK(e.find_point("0") == 0);
    CHECK(contains(refusal(e, ""), "the sweep has 6 runs: pass --point axis=value,..."));
    CHECK(contains(refusal(e, ""), "beta in {1, 4}; seed in {1, 2, 3}; or a run's index, 0 to 5"));
    CHECK(contains(refusal(e, "6"), "--point 6: the sweep has 6 runs"));
    CHECK(contains(refusal(e, "beta=4"), "names no value of the axis seed"));
    CHECK(contains(refusal(e, "beta=2,seed=1"), "beta = 2 is not a value of the axis"));
    CHECK(contains(refusal(e, "gamma=1"), "'gamma=1' is not axis=value"));
    const auto one = nadyn::experiment::parse(
        "[run]\nn = 6\nd = 3\nT = 0.4\n[sweep]\nbeta = [2]\nseed = [7]\n", "one.toml");
    CHECK(one.find_point("") == 0);
    CHECK(one.find_point("beta=2") == 0);
}

TEST_CASE("nadyn rerun and nadyn inspect --merges take --point the same way") {
    const std::string dir = scratch_dir("frictions/point");
    write_text(dir + "/exp.toml", two_axes);
    REQUIRE(run_nadyn({"sweep", "exp.toml", "--out", "s.h5", "--quiet"}, in_dir(dir)).status == 0);
    const run_result by_value =
        run_nadyn({"rerun", "s.h5", "--point", "beta=4,seed=2", "--out", "a.h5"}, in_dir(dir));
    CHECK(by_value.status == 0);
    CHECK(contains(by_value.out, "(beta=4 seed=2)"));
    const run_result by_index =
        run_nadyn({"rerun", "s.h5", "--point", "4", "--out", "b.h5"}, in_dir(dir));
    CHECK(by_index.status == 0);
    CHECK(contains(by_index.out, "(beta=4 seed=2)"));
    const run_result merges_by_index =
        run_nadyn({"inspect", "s.h5", "--merges", "--point", "4"}, in_dir(dir));
    CHECK(merges_by_index.status == 0);
    CHECK(contains(merges_by_index.out, "s.h5 (beta=4 seed=2)"));
    const run_result missing = run_nadyn({"rerun", "s.h5", "--out", "c.h5"}, in_dir(dir));
    CHECK(missing.status == 2);
    CHECK(line_count(missing.err) == 1);
    CHECK(contains(missing.err, "pass --point axis=value,..."));
    CHECK(contains(missing.err, "beta in {1, 4}"));
    CHECK_FALSE(fs::exists(dir + "/c.h5"));

    write_text(dir + "/one.toml", "[run]\nn = 6\nd = 3\nT = 0.4\ndt = 0.1\n[sweep]\nbeta = [3]\n");
    REQUIRE(run_nadyn({"sweep", "one.toml", "--out", "one.h5", "--quiet"}, in_dir(dir)).status ==
            0);
    const run_result only = run_nadyn({"rerun", "one.h5", "--out", "only.h5"}, in_dir(dir));
    CHECK(only.status == 0);
    CHECK(contains(only.out, "(beta=3)"));
    CHECK(run_nadyn({"inspect", "one.h5", "--merges"}, in_dir(dir)).status == 0);
}

TEST_CASE("a misspelt key of an experiment file gets a suggestion, as a misspelt flag does") {
    auto message = [](const std::string& text) {
        try {
            (void)nadyn::experiment::parse(text, "exp.toml");
        } catch (const nadyn::input_error& error) {
            return std::string(error.what());
        }
        return std::string("accepted");
    };
    const std::string key = message("[run]\nn = 8\nbeat = 2\n");
    CHECK(
        contains(key, "exp.toml:3: unknown key 'run.beat'; did you mean 'run.beta'? valid keys:"));
    CHECK(contains(message("[run]\nn = 8\n[sweep]\nsed = [1, 2]\n"),
                   "unknown sweep axis 'sweep.sed'; did you mean 'sweep.seed'?"));
    CHECK(contains(message("[rum]\nn = 8\n"),
                   "unknown table 'rum'; did you mean 'run'? valid tables: run, sweep"));
    // Nothing close: the list alone, as before.
    CHECK(contains(message("[run]\nzzzzzzzz = 1\n"), "unknown key 'run.zzzzzzzz'; valid keys:"));
    // The density solver's experiments too (model = "meanfield").
    const std::string dir = scratch_dir("frictions/toml");
    write_text(dir + "/mf.toml", "[run]\nmodel = \"meanfield\"\nbeta = 1\npoints = 64\nT = 0.1\n"
                                 "[sweep]\nbetta = [1, 2]\n");
    const run_result density = run_nadyn({"sweep", "mf.toml", "--dry-run"}, in_dir(dir));
    CHECK(density.status == 2);
    CHECK(contains(density.err, "unknown key 'sweep.betta'; did you mean 'sweep.beta'?"));
}

TEST_CASE("a negative beta runs, with one warning that says what it means") {
    const std::string dir = scratch_dir("frictions/negative_beta");
    const run_result run = run_nadyn({"simulate", "--n", "6", "--d", "3", "--beta", "-1", "--T",
                                      "0.2", "--out", "neg.h5", "--quiet"},
                                     in_dir(dir));
    CHECK(run.status == 0);
    CHECK(count_of(run.err, "beta < 0") == 1);
    CHECK(contains(run.err, "attends most to the keys least aligned with its query"));
    CHECK(contains(run.err, "docs/model.md section 1, Negative beta"));
    const run_result positive = run_nadyn({"simulate", "--n", "6", "--d", "3", "--beta", "1", "--T",
                                           "0.2", "--out", "pos.h5", "--quiet"},
                                          in_dir(dir));
    CHECK(positive.status == 0);
    CHECK_FALSE(contains(positive.err, "beta < 0"));
    write_text(dir + "/neg.toml", "[run]\nn = 6\nd = 3\nT = 0.2\n[sweep]\nbeta = [-2, -1, 1]\n"
                                  "seed = [1, 2]\n");
    const run_result sweep =
        run_nadyn({"sweep", "neg.toml", "--out", "neg_sweep.h5", "--quiet"}, in_dir(dir));
    CHECK(sweep.status == 0);
    CHECK(count_of(sweep.err, "beta < 0") == 1); // once for the sweep, not once per run
}
