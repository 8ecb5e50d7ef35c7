// The memory estimate of a run (run_config::memory_bytes) against the peak
// resident memory of the run it estimates: within a factor of 2 when the weights dominate
// (H x 3 x d^2 per copy kept) and when the tokens do (the per-thread blocks of n), and a run
// whose weights cannot fit is refused up front with status 2 instead of dying in bad_alloc.
#include "cli_support.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run_config.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>

using namespace nadyn_test;

namespace {

// "--n 2 --d 8" as a run_config, through the registry as the command line reads it.
nadyn::run_config config_of(const std::vector<std::string>& flags) {
    nadyn::run_config c;
    for (std::size_t i = 0; i + 1 < flags.size(); i += 2)
        nadyn::assign_parameter(c, flags[i].substr(2), flags[i + 1]);
    return c;
}

// The peak resident memory in bytes of `nadyn simulate FLAGS` (a short run): the maximum
// resident set of the children of a fresh Python process that runs it alone.
double peak_bytes(const std::vector<std::string>& flags, const std::string& dir) {
    std::vector<std::string> args = {
        "-c",
        "import resource, subprocess, sys\n"
        "status = subprocess.run(sys.argv[1:]).returncode\n"
        "print('peak_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(status)",
        nadyn_path,
        "simulate",
        "--T",
        "0.01",
        "--dt",
        "0.01",
        "--out",
        "run.h5",
        "--force"};
    args.insert(args.end(), flags.begin(), flags.end());
    // A memory measurement, not a speed one: the n = 30000 run takes tens of seconds on the
    // portable build (SSE2) of a loaded 2-core machine, beyond the default 60 s hang guard.
    run_options options = in_dir(dir);
    options.timeout = std::chrono::minutes(10);
    const run_result r = run_program("/usr/bin/python3", args, options);
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto at = r.out.rfind("peak_kib ");
    REQUIRE(at != std::string::npos);
    return 1024.0 * std::atof(r.out.c_str() + at + 9); // ru_maxrss is in KiB on Linux
}

} // namespace

TEST_CASE("the memory estimate is within a factor of 2 of the peak of weights- and "
          "tokens-dominated runs") {
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer's shadow memory, redzones and quarantine of freed blocks are not the
    // run's, and its slowdown makes the n = 30000 run take minutes.
    MESSAGE("skipped under AddressSanitizer: the peak is the sanitizer's, not the run's");
    return;
#endif
    const std::string dir = scratch_dir("memory_estimate/peak");
    // What does not scale (the program, its libraries, HDF5's buffers): the peak of a tiny run.
    const double baseline = peak_bytes({"--n", "2", "--d", "3"}, dir);
    const std::vector<std::vector<std::string>> runs = {
        {"--n", "2", "--d", "2000", "--weights", "gaussian"}, // 3 d^2: 96 MB a copy
        {"--n", "2", "--d", "1000", "--weights", "gaussian", "--heads", "4"},
        {"--n", "2", "--d", "1500", "--weights", "gaussian-per-layer"}, // redrawn every layer
        {"--n", "30000", "--d", "4"},                                   // blocks of n per thread
        {"--n", "3000", "--d", "256", "--integrator", "dopri5"},        // n x d stages
    };
    for (const auto& flags : runs) {
        std::string label;
        for (const auto& f : flags)
            label += f + " ";
        INFO(label);
        const double estimate = config_of(flags).memory_bytes();
        const double measured = peak_bytes(flags, dir) - baseline;
        INFO("estimate " << estimate / 1e6 << " MB, measured " << measured / 1e6 << " MB");
        CHECK(estimate >= measured / 2.0);
        CHECK(estimate <= measured * 2.0);
    }
}

TEST_CASE("weights that cannot fit are refused up front with status 2") {
    const std::string dir = scratch_dir("memory_estimate/refused");
    const std::vector<std::string> flags = {"--n", "2", "--d", "40000", "--weights", "gaussian"};
    const double physical = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    // 3 copies of 3 d^2 doubles: 115 GB, more than a test machine has.
    REQUIRE(config_of(flags).memory_bytes() > physical);
    std::vector<std::string> args = {"simulate", "--out", "run.h5"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto start = std::chrono::steady_clock::now();
    const run_result r = run_nadyn(args, in_dir(dir));
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "n = 2, d = 40000, 1 head(s) of gaussian weights needs about"));
    CHECK(contains(r.err, "GiB of memory"));
    CHECK(!fs::exists(dir + "/run.h5"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("a sweep's memory figure counts each run's weights, once per run side by side") {
    const std::string dir = scratch_dir("memory_estimate/sweep");
    write_text(dir + "/w.toml", "[run]\nn = 2\nd = 2000\nweights = \"gaussian\"\nT = 0.02\n"
                                "dt = 0.01\n[sweep]\nseed = [1, 2]\n");
    const run_result r = run_nadyn({"sweep", "w.toml", "--jobs", "2", "--dry-run"}, in_dir(dir));
    INFO(r.out);
    REQUIRE(r.status == 0);
    const auto at = r.out.find("memory: about ");
    REQUIRE(at != std::string::npos);
    const double mib = std::atof(r.out.c_str() + at + 14);
    const double one =
        config_of({"--n", "2", "--d", "2000", "--weights", "gaussian"}).memory_bytes() /
        double(1 << 20);
    CHECK(mib == doctest::Approx(2.0 * one).epsilon(0.01));
    CHECK(mib > 2 * 3 * 96e6 / double(1 << 20)); // at least the weights of two runs
}
