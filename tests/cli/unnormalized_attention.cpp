// `--attention unnormalized` from the command line (docs/model.md §8): recorded in the file,
// rerun and resumed bitwise, an unknown value refused with exit 2, and an overflowing
// exponential stopping the run with exit 1, a one-line message and only finite values in the
// file.
#include "cli_support.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

using namespace nadyn_test;

namespace {

bool all_finite(const std::vector<double>& values) {
    return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

} // namespace

TEST_CASE("an unknown --attention is exit 2 naming the choices, and no file is written") {
    const std::string dir = scratch_dir("unnormalized/bad");
    const std::string out = dir + "/bad.h5";
    const run_result r = run_nadyn({"simulate", "--attention", "plain", "--n", "4", "--d", "3",
                                    "--T", "0.1", "--out", out, "--quiet"});
    CHECK(r.status == 2);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "valid choices: softmax, unnormalized"));
    CHECK(!fs::exists(out));
}

TEST_CASE("an overflow of the unnormalised attention is exit 1 with only finite frames") {
    const std::string dir = scratch_dir("unnormalized/overflow");
    for (const char* integrator : {"rk4", "dopri5", "layers"}) {
        CAPTURE(integrator);
        const std::string out = dir + "/" + integrator + ".h5";
        // no-norm reads r theta: beta r^2 grows with r until exp(beta r^2) / n overflows.
        // dopri5 at its default tolerances follows the blow-up to its step floor instead.
        const bool adaptive = std::string(integrator) == "dopri5";
        const run_result r = run_nadyn({"simulate",
                                        "--scheme",
                                        "no-norm",
                                        "--attention",
                                        "unnormalized",
                                        "--beta",
                                        adaptive ? "5" : "2",
                                        "--n",
                                        "8",
                                        "--d",
                                        "3",
                                        "--integrator",
                                        integrator,
                                        "--T",
                                        "50",
                                        "--dt",
                                        adaptive ? "0.001" : "0.01",
                                        "--rtol",
                                        "1e-3",
                                        "--atol",
                                        "1e-3",
                                        "--every",
                                        "1",
                                        "--out",
                                        out,
                                        "--quiet"});
        INFO(r.err);
        CHECK(r.status == 1);
        CHECK(line_count(r.err) == 1);
        CHECK(contains(r.err, "unnormalized attention overflowed at t = "));
        CHECK(contains(r.err, "--beta"));
        const nadyn::trajectory_reader file(out);
        CHECK(file.status() == "failed");
        CHECK(file.parameters().text("attention") == "unnormalized");
        REQUIRE(file.frame_count() >= 2);
        for (std::size_t f = 0; f < file.frame_count(); ++f) {
            CHECK(all_finite(file.positions(f)));
            CHECK(all_finite(file.magnitudes(f)));
        }
        // step_error is NaN by design at frames without an estimate; never Inf.
        for (const std::string& name : file.observable_names()) {
            const std::vector<double> values = file.observable(name);
            if (name == "step_error")
                CHECK(std::none_of(values.begin(), values.end(),
                                   [](double v) { return std::isinf(v); }));
            else
                CHECK_MESSAGE(all_finite(values), name);
        }
    }
}

TEST_CASE("unnormalised runs rerun and resume bitwise") {
    const std::string dir = scratch_dir("unnormalized/rerun");
    const std::string full = dir + "/full.h5", part = dir + "/part.h5", again = dir + "/again.h5";
    const std::vector<std::string> flags = {
        "--attention", "unnormalized", "--scheme", "pre-ln", "--weights", "gaussian", "--heads",
        "2",           "--n",          "23",       "--d",    "4",         "--beta",   "2",
        "--dt",        "0.05",         "--every",  "4",      "--quiet"};
    auto simulate = [&](const std::string& out, std::vector<std::string> extra) {
        std::vector<std::string> args = {"simulate"};
        args.insert(args.end(), flags.begin(), flags.end());
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"--out", out});
        return run_nadyn(args);
    };
    REQUIRE(simulate(full, {"--T", "2"}).status == 0);
    REQUIRE(run_nadyn({"rerun", full, "--out", again}).status == 0);
    // Stopped at T = 1, then resumed to T = 2.
    std::vector<std::string> shorter = {"--T", "1"};
    REQUIRE(simulate(part, shorter).status == 0);
    const run_result resumed = run_nadyn({"simulate", "--resume", part, "--T", "2", "--quiet"});
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    const nadyn::trajectory_reader a(full), b(again), c(part);
    CHECK(a.parameters().text("attention") == "unnormalized");
    REQUIRE(a.frame_count() == b.frame_count());
    REQUIRE(a.frame_count() == c.frame_count());
    for (std::size_t f = 0; f < a.frame_count(); ++f) {
        CHECK(a.positions(f) == b.positions(f));
        CHECK(a.positions(f) == c.positions(f));
        CHECK(a.magnitudes(f) == c.magnitudes(f));
    }
    // The attention of a file cannot change on resume.
    const run_result changed =
        run_nadyn({"simulate", "--resume", part, "--attention", "softmax", "--T", "3", "--quiet"});
    CHECK(changed.status == 2);
    CHECK(contains(changed.err, "attention"));
}

TEST_CASE("nadyn reduced --attention unnormalized: gamma'(0) = 2/n, unknown values refused") {
    // post-ln's closed form of docs/model.md §8 in the first CSV row (t = 0).
    const run_result r =
        run_nadyn({"reduced", "--scheme", "post-ln", "--attention", "unnormalized", "--n", "40",
                   "--beta", "3", "--T", "1", "--samples", "1", "--csv"});
    REQUIRE(r.status == 0);
    const std::vector<std::string> lines = split_lines(r.out);
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] == "t,gamma,gap,velocity,r");
    // t, gamma, gap, velocity, r
    double values[5] = {};
    CHECK(std::sscanf(lines[1].c_str(), "%lf,%lf,%lf,%lf,%lf", &values[0], &values[1], &values[2],
                      &values[3], &values[4]) == 5);
    CHECK(values[3] == doctest::Approx(2.0 / 40.0).epsilon(1e-13));
    const run_result bad = run_nadyn({"reduced", "--attention", "none"});
    CHECK(bad.status == 2);
    CHECK(contains(bad.err, "valid choices: softmax, unnormalized"));
    const run_result too_hot =
        run_nadyn({"reduced", "--attention", "unnormalized", "--beta", "800"});
    CHECK(too_hot.status == 2);
    CHECK(line_count(too_hot.err) == 1);
}
