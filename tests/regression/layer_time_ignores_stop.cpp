// Regression: `--layer-time 1e-12` with per-layer weights ran for ever and ignored SIGTERM. With
// the default T = 20 it implies 2e13 layers, refused up front now with that number. A shorter
// tau that passes the bound can still put millions of redraws inside one step of dt (tau = 1e-9,
// dt = 0.01: 1e7), which the step crossed without looking at the stop token, so only the 8 s
// grace period ended the run (exit 142 then, the file left `running`). The step now polls the
// token between redraws: the run stops at once, from the step's start, with status
// `interrupted` and exit 143.
#include "cli_support.hpp"

#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

namespace {

using namespace nadyn_test;

} // namespace

TEST_CASE("--layer-time 1e-12 is refused with the number of layers it implies") {
    const std::string dir = scratch_dir("layer_time_ignores_stop/refused");
    const run_result r = run_nadyn({"simulate", "--weights", "random-per-layer", "--layer-time",
                                    "1e-12", "--out", "x.h5", "--quiet"},
                                   in_dir(dir));
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "T / layer-time is too large (2e+13 layers of weights"));
    CHECK(list_files(dir).empty());
}

TEST_CASE("SIGTERM stops a step that crosses millions of per-layer redraws at once") {
    const std::string dir = scratch_dir("layer_time_ignores_stop/stop");
    const std::string out = dir + "/x.h5";
    child_process child(nadyn_path,
                        {"simulate", "--n", "4", "--d", "2", "--weights", "random-per-layer",
                         "--layer-time", "1e-9", "--T", "1", "--out", out, "--quiet"});
    // Frame 0 is written before the first step; then the run is inside that step's redraws.
    REQUIRE(wait_until([&] { return fs::exists(out) && fs::file_size(out) > 0; },
                       std::chrono::seconds(30)));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const auto signalled = std::chrono::steady_clock::now();
    child.send_signal(SIGTERM);
    const run_result r = child.wait(std::chrono::seconds(30));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
    INFO("stderr: " << r.err);
    CHECK(r.signal == 0);
    CHECK(r.status == 143);
    CHECK(seconds < 5.0); // well inside the 8 s grace period: the stop token, not the alarm
    CHECK(contains(r.out, "interrupted: "));
    const nadyn::trajectory_reader file(out);
    CHECK(file.status() == "interrupted");
    REQUIRE(file.frame_count() >= 1);
    CHECK(file.times().back() == 0.0); // the step's start: the first step never ended
}
