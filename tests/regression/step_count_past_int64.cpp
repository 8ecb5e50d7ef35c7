// Regression: step_count() cast T / dt to int64 without a bound. Past 2^63 (dt = 1e-20 with
// T = 0.5, T = 1e300, dt = 5e-324) the cast is undefined; on x86 it gave INT64_MIN, which the
// registry's "< 2^40" check accepted, and the run wrote one frame (the initial state, after
// no step) and said "complete". A sweep with such a dt marked its runs complete on an empty
// time axis, and a resume with such a --T rewrote the file's T before failing. Every count
// that does not fit below 2^40 is now refused up front: status 2, one line, no file written
// or changed.
#include "cli_support.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

namespace {

using namespace nadyn_test;

void check_refused(const run_result& r, const std::string& expected) {
    INFO("stderr: " << r.err);
    INFO("stdout: " << r.out);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.rfind("nadyn: ", 0) == 0);
    CHECK(contains(r.err, expected));
}

} // namespace

TEST_CASE("step_count refuses a ratio that does not fit instead of casting it") {
    CHECK(nadyn::step_count(0.5, 0.01) == 50);
    CHECK(nadyn::step_count(0.0, 1e-300) == 0);
    for (const auto& [T, dt] : std::vector<std::pair<double, double>>{
             {0.5, 1e-20}, {1e300, 0.01}, {0.5, 5e-324}, {1.0, 1.0 / double(nadyn::max_steps)}}) {
        INFO("T = " << T << ", dt = " << dt);
        CHECK_THROWS_AS((void)nadyn::step_count(T, dt), nadyn::input_error);
    }
    CHECK(nadyn::step_count(1.0, 2.0 / double(nadyn::max_steps)) == nadyn::max_steps / 2);
}

TEST_CASE("simulate refuses T / dt past the step limit, in every integrator") {
    const std::vector<std::vector<std::string>> cases = {
        {"--T", "0.5", "--dt", "1e-20"},
        {"--T", "1e300"},
        {"--T", "0.5", "--dt", "5e-324"},
        {"--T", "0.5", "--dt", "1e-18"}, // fits in int64, past the limit: refused before too
        {"--T", "0.5", "--dt", "1e-20", "--integrator", "layers"},
        {"--T", "0.5", "--dt", "1e-20", "--integrator", "euler"},
        {"--T", "1e300", "--integrator", "dopri5"},
        {"--T", "0.5", "--dt", "1e-20", "--frame-times", "0.1,0.2"},
    };
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const std::string dir = scratch_dir("step_count/simulate_" + std::to_string(i));
        std::vector<std::string> args{"simulate", "--n", "8", "--out", "x.h5", "--quiet"};
        args.insert(args.end(), cases[i].begin(), cases[i].end());
        const run_result r = run_nadyn(args, in_dir(dir));
        INFO("case " << i);
        check_refused(r, "T / dt is too large");
        CHECK(list_files(dir).empty());
    }
}

TEST_CASE("per-layer redraws past the limit are refused (--layer-time)") {
    for (const char* draws : {"--weights=gaussian-per-layer", "--norm-noise=0.1"}) {
        const std::string dir = scratch_dir("step_count/layer_time");
        const run_result r = run_nadyn({"simulate", "--n", "8", "--T", "0.5", draws, "--layer-time",
                                        "1e-300", "--out", "x.h5", "--quiet"},
                                       in_dir(dir));
        INFO(draws);
        check_refused(r, "T / layer-time is too large");
        CHECK(list_files(dir).empty());
    }
}

TEST_CASE("a sweep with a dt past the limit is refused before its file exists") {
    const std::string dir = scratch_dir("step_count/sweep");
    write_text(dir + "/tiny_dt.toml", "[run]\nn = 8\nT = 0.5\n[sweep]\ndt = [0.01, 1e-300]\n");
    const run_result r =
        run_nadyn({"sweep", "tiny_dt.toml", "--out", "s.h5", "--quiet"}, in_dir(dir));
    check_refused(r, "T / dt is too large");
    CHECK(contains(r.err, "run 1"));
    CHECK(list_files(dir) == std::vector<std::string>{"tiny_dt.toml"});
}

TEST_CASE("a resume whose --T is past the limit leaves the file as it was") {
    const std::string dir = scratch_dir("step_count/resume");
    const run_result made = run_nadyn(
        {"simulate", "--n", "8", "--T", "0.5", "--every", "5", "--out", "x.h5", "--quiet"},
        in_dir(dir));
    REQUIRE(made.status == 0);
    const file_snapshot before = snapshot(dir + "/x.h5");
    for (const char* horizon : {"1e300", "1e13"}) {
        const run_result r =
            run_nadyn({"simulate", "--resume", "x.h5", "--T", horizon, "--quiet"}, in_dir(dir));
        INFO("--T " << horizon);
        check_refused(r, "T / dt is too large");
        CHECK(snapshot(dir + "/x.h5") == before);
    }
}
