// Regression: `nadyn simulate --resume` of data/resume_hangs.h5 (a complete run with one damaged
// byte in the metadata of /observables/step_error/step) never ended and ignored SIGTERM: HDF5
// retried the damaged read during the first frame write, 100 times with a growing sleep (a
// SWMR writer's retries; H5Fstart_swmr_write sets them whatever the file access list says),
// where no stop token is polled. Two fixes, each tested here:
// - the resume reads the file, and walks every object (verify_readable: headers, attributes,
//   both ends of every dataset), in a child process first: the damage is met as an error at
//   once, exit 1, the file untouched;
// - whatever else holds a stopped run where it polls no stop token (a library call, one long
//   computation), it ends 8 s after SIGINT or SIGTERM with the signal's own status (130, 143:
//   before, 142 for SIGALRM) and one line saying so, the frames flushed so far kept.
#include "cli_support.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <string>

namespace {

using namespace nadyn_test;

} // namespace

TEST_CASE("--resume of a file whose metadata HDF5 retries is refused at once, untouched") {
    const std::string dir = scratch_dir("resume_hangs/resume");
    const std::string file = dir + "/h.h5";
    fs::copy_file(std::string(NADYN_TEST_DATA_DIR) + "/resume_hangs.h5", file,
                  fs::copy_options::overwrite_existing);
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
    const file_snapshot before = snapshot(file);
    for (const char* horizon : {"1", "0.5"}) { // extended, and the recorded T (run again)
        const auto started = std::chrono::steady_clock::now();
        child_process child(nadyn_path, {"simulate", "--resume", file, "--T", horizon, "--quiet"});
        const run_result r = child.wait(std::chrono::seconds(30));
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        INFO("--T " << horizon << ": " << r.err);
        CHECK(r.signal == 0);
        CHECK(r.status == 1);
        CHECK(seconds < 10.0);
        CHECK(line_count(r.err) == 1);
        CHECK(contains(r.err, "observables/step_error/step"));
        CHECK(contains(r.err, "incorrect metadata checksum"));
        CHECK(snapshot(file) == before);
    }
}

TEST_CASE("a run that polls no stop token ends 8 s after SIGINT or SIGTERM with its status") {
    // One frame of 200000 tokens: its pairwise observables alone take minutes, during which
    // the run polls no stop token, so only the grace period can end it.
    for (const int sig : {SIGTERM, SIGINT}) {
        const std::string dir = scratch_dir("resume_hangs/grace");
        const std::string out = dir + "/big.h5";
        fs::remove(out);
        child_process child(nadyn_path, {"simulate", "--n", "200000", "--d", "16", "--threads", "1",
                                         "--positions", "none", "--out", out, "--quiet"});
        REQUIRE(wait_until([&] { return fs::exists(out) && fs::file_size(out) > 0; },
                           std::chrono::seconds(30)));
        const auto signalled = std::chrono::steady_clock::now();
        child.send_signal(sig);
        const run_result r = child.wait(std::chrono::seconds(30));
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
        INFO((sig == SIGTERM ? "SIGTERM: " : "SIGINT: ") << r.err);
        CHECK(r.signal == 0);
        CHECK(r.status == 128 + sig);
        CHECK(seconds >= 7.5);
        CHECK(seconds < 10.0);
        CHECK(line_count(r.err) == 1);
        CHECK(contains(r.err, std::string("nadyn: stopped by ") +
                                  (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                                  ", but the run did not end within 8 s"));
        CHECK(fs::exists(out)); // the file and what it flushed are kept
    }
}
