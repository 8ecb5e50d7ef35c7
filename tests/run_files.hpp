#pragma once
// Shared by the suites that compare runs through their files (rerun, resume, frame times):
// a scratch path per suite, a run stopped after a few frames, and the bitwise comparison of
// every frame of two files.
#include "nadyn/experiment/run.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>

namespace nadyn::testing {

// NADYN_TEST_TMPDIR/<folder>/<name>.h5, the folder made and any earlier file removed.
inline std::string scratch_h5(const std::string& folder, const std::string& name) {
    const std::string dir = std::string(NADYN_TEST_TMPDIR) + "/" + folder;
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/" + name + ".h5";
    std::filesystem::remove(path);
    return path;
}

// Runs into `path` and stops it once `frames` frames are on disk (the stop is seen at the
// next step, which writes one more frame off the regular cadence).
inline void run_stopped(simulation& run, const std::string& path, std::size_t frames) {
    std::atomic<bool> stop{false};
    std::size_t written = 0;
    const run_summary s = run.run_to_file(path, true, &stop, {}, [&](double, std::int64_t) {
        if (++written == frames) stop = true;
    });
    REQUIRE(s.outcome == integration_outcome::interrupted);
}

// The frames a reader sees in `path` now: 0 while the file cannot be read (not yet made, or
// its header not yet flushed by the run writing it).
inline std::size_t frames_in(const std::string& path) {
    try {
        return trajectory_reader(path).frame_count();
    } catch (const std::exception&) {
        return 0;
    }
}

// Every frame of the two files bitwise: steps, times, every observable (NaN equal to NaN,
// as step_error of dopri5 and layers), positions and magnitudes; and the second complete.
inline void check_same_frames(const std::string& a_path, const std::string& b_path) {
    const trajectory_reader a(a_path), b(b_path);
    REQUIRE(a.frame_count() == b.frame_count());
    CHECK(a.steps() == b.steps());
    CHECK(a.times() == b.times());
    for (const auto& name : a.observable_names()) {
        CAPTURE(name);
        const auto x = a.observable(name), y = b.observable(name);
        REQUIRE(x.size() == y.size());
        CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0);
    }
    for (std::size_t f = 0; f < a.frame_count(); ++f) {
        CHECK(a.positions(f) == b.positions(f));
        CHECK(a.magnitudes(f) == b.magnitudes(f));
    }
    CHECK(b.status() == "complete");
}

} // namespace nadyn::testing
