// The trajectory writer's frame buffer (issue 38 item 4): frames are held in memory and
// written in blocks, and nothing that ends a run loses one. A reader of the live file (nadyn
// inspect, another process) sees the first frame at once and the others block by block; a run
// stopped by SIGINT and a run that leaves the model's domain keep every frame they computed.
#include "cli_support.hpp"
#include "run_files.hpp"

#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <regex>

using namespace nadyn_test;
using nadyn::testing::frames_in;

namespace {

// Frames another process (nadyn inspect --csv, one line per frame after the header) reads.
std::size_t frames_seen_by_inspect(const std::string& path) {
    const run_result r = run_nadyn({"inspect", path, "--csv"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    return split_lines(r.out).size() - 1;
}

nadyn::trajectory_layout small_layout(const nadyn::frame_buffering& buffering) {
    nadyn::trajectory_layout layout;
    layout.n = 4;
    layout.d = 3;
    layout.observables = {{"energy"}};
    layout.scheme = "pre-ln";
    layout.buffering = buffering;
    return layout;
}

void write_frames(nadyn::trajectory_writer& writer, std::size_t first, std::size_t count) {
    for (std::size_t f = first; f < first + count; ++f) {
        std::vector<double> theta(12), r(4);
        for (std::size_t i = 0; i < theta.size(); ++i)
            theta[i] = std::sin(double(i) + 10.0 * double(f));
        for (std::size_t i = 0; i < r.size(); ++i)
            r[i] = 1.0 + double(i) + double(f);
        writer.write_frame(static_cast<std::int64_t>(f), 0.5 * double(f), theta.data(), r.data(),
                           {double(f)});
    }
}

// The number `pattern`'s group matches in a summary or error line.
double summary_number(const std::string& out, const std::string& pattern) {
    std::smatch match;
    REQUIRE(std::regex_search(out, match, std::regex(pattern)));
    return std::strtod(match[1].str().c_str(), nullptr);
}

} // namespace

TEST_CASE("frames reach the file in blocks: the first at once, then a full buffer or a flush") {
    const std::string dir = scratch_dir("frame_buffer/blocks");
    const std::string out = dir + "/blocks.h5";
    nadyn::frame_buffering buffering;
    buffering.frames = 4;
    buffering.max_seconds = 1e9; // never by age in this test
    {
        nadyn::trajectory_writer writer(out, small_layout(buffering), false);
        write_frames(writer, 0, 1);
        CHECK(frames_seen_by_inspect(out) == 1); // the first frame at once
        write_frames(writer, 1, 3);
        CHECK(writer.frames_written() == 4);
        CHECK(writer.frames_on_disk() == 1);
        CHECK(frames_seen_by_inspect(out) == 1); // three frames held
        write_frames(writer, 4, 1);              // the fourth held frame fills the buffer
        CHECK(writer.frames_on_disk() == 5);
        CHECK(frames_seen_by_inspect(out) == 5);
        write_frames(writer, 5, 2);
        CHECK(frames_seen_by_inspect(out) == 5);
        writer.flush();
        CHECK(frames_seen_by_inspect(out) == 7);
        write_frames(writer, 7, 2);
        writer.finish(nadyn::run_status::complete, {}); // writes the held frames first
    }
    const nadyn::trajectory_reader file(out);
    REQUIRE(file.frame_count() == 9);
    CHECK(file.steps() == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8});
    CHECK(file.observable("energy") == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8});
    for (std::size_t f = 0; f < 9; ++f) {
        const std::vector<double> theta = file.positions(f);
        for (std::size_t i = 0; i < theta.size(); ++i)
            CHECK(theta[i] == std::sin(double(i) + 10.0 * double(f)));
        CHECK(file.magnitudes(f).front() == 1.0 + double(f));
    }
}

TEST_CASE("held frames are written once the oldest is max_seconds old, and by the destructor") {
    const std::string dir = scratch_dir("frame_buffer/age");
    const std::string out = dir + "/age.h5";
    nadyn::frame_buffering buffering;
    buffering.frames = 1000;
    buffering.max_seconds = 0.0; // every frame is as old as allowed: written at once
    {
        nadyn::trajectory_writer writer(out, small_layout(buffering), false);
        write_frames(writer, 0, 3);
        CHECK(writer.frames_on_disk() == 3);
        CHECK(frames_seen_by_inspect(out) == 3);
    }
    const std::string kept = dir + "/destroyed.h5";
    buffering.max_seconds = 1e9;
    {
        nadyn::trajectory_writer writer(kept, small_layout(buffering), false);
        write_frames(writer, 0, 5);
        CHECK(writer.frames_on_disk() == 1);
    } // destroyed without finish (an exception the run did not catch): the frames are written
    const nadyn::trajectory_reader file(kept);
    CHECK(file.status() == "running");
    CHECK(file.frame_count() == 5);
}

TEST_CASE("SIGINT during a buffered run keeps every frame computed up to the stop") {
    const std::string dir = scratch_dir("frame_buffer/sigint");
    const std::string out = dir + "/stopped.h5";
    // A frame every step of a small run: thousands of frames a second, so that the buffer
    // holds frames (up to 64) whenever the signal lands.
    child_process child(nadyn_path, {"simulate", "--n", "32", "--d", "3", "--T", "1000", "--dt",
                                     "0.01", "--every", "1", "--out", out, "--quiet"});
    const run_result r = signal_when(child, SIGINT, [&] { return frames_in(out) >= 3; });
    INFO("stdout: " << r.out);
    INFO("stderr: " << r.err);
    CHECK(r.signal == 0);
    REQUIRE(r.status == 130);
    const auto computed =
        static_cast<std::size_t>(summary_number(r.out, "interrupted: ([0-9]+) frames"));
    const double last_time = summary_number(r.out, "frames, t = ([0-9.e+-]+)");
    const nadyn::trajectory_reader file(out);
    CHECK(file.status() == "interrupted");
    CHECK(computed > 3);
    CHECK(file.frame_count() == computed); // none held back
    CHECK(file.parameters().integer("frames") == static_cast<std::int64_t>(computed));
    // Frames at every step, then the state at the stop (written when the stop is seen).
    const auto steps = file.steps();
    for (std::size_t f = 0; f + 1 < steps.size(); ++f)
        CHECK(steps[f] == static_cast<std::int64_t>(f));
    CHECK(std::abs(file.times().back() - last_time) <= 1e-5 * std::max(1.0, last_time));
}

TEST_CASE("a run that leaves the model's domain keeps every frame before the failure") {
    const std::string dir = scratch_dir("frame_buffer/domain");
    const std::string init = dir + "/init.h5", weights = dir + "/weights.h5";
    const std::string out = dir + "/failed.h5";
    // The README's V = -I example (tests/cli/kill_and_faults.cpp): pre-ln drives the
    // magnitudes through zero in finite time; a frame every step, so that frames are held.
    std::vector<double> theta0(32 * 4), r0(32), eye(16, 0.0), minus_eye(16, 0.0);
    for (std::size_t k = 0; k < 32; ++k) {
        for (std::size_t c = 0; c < 4; ++c)
            theta0[k * 4 + c] = std::sin(1.0 + 3.7 * double(k) + 1.3 * double(c));
        r0[k] = 1.0 + double(k) / 31.0;
    }
    for (std::size_t c = 0; c < 4; ++c) {
        eye[c * 5] = 1.0;
        minus_eye[c * 5] = -1.0;
    }
    write_h5(init, {{"theta0", {32, 4}, theta0}, {"r0", {32}, r0}});
    write_h5(weights, {{"Q", {4, 4}, eye}, {"K", {4, 4}, eye}, {"V", {4, 4}, minus_eye}});
    const run_result r = run_nadyn({"simulate",
                                    "--scheme",
                                    "pre-ln",
                                    "--n",
                                    "32",
                                    "--d",
                                    "4",
                                    "--init",
                                    "file:" + init,
                                    "--weights",
                                    "file:" + weights,
                                    "--T",
                                    "5",
                                    "--dt",
                                    "0.001",
                                    "--every",
                                    "1",
                                    "--out",
                                    out,
                                    "--quiet"});
    INFO(r.err);
    REQUIRE(r.status == 1);
    CHECK(contains(r.err, "left the model's domain (r > 0) at t = "));
    const double failed_at = summary_number(r.err, "at t = ([0-9.e+-]+)");
    const nadyn::trajectory_reader file(out);
    CHECK(file.status() == "failed");
    const std::size_t frames = file.frame_count();
    CHECK(frames > 64); // more than one buffer's worth
    CHECK(file.parameters().integer("frames") == static_cast<std::int64_t>(frames));
    // Every step's frame up to the last one before the failure: none is missing at the end.
    const auto steps = file.steps();
    for (std::size_t f = 0; f < frames; ++f)
        CHECK(steps[f] == static_cast<std::int64_t>(f));
    CHECK(file.times().back() < failed_at);
    CHECK(file.times().back() >= failed_at - 0.0011);
    for (double v : file.magnitudes(frames - 1))
        CHECK(v > 0.0);
}
