// The trajectory writer's frame buffer (issue 38 item 4): frames are held in memory and
// written in blocks, and nothing that ends a run loses one. A reader of the live file (nadyn
// inspect, another process) sees the first frame at once and the others block by block; a run
// stopped by SIGINT and a run that leaves the model's domain keep every frame they computed.
#include "cli_support.hpp"
#include "experiment/frame_sink.hpp"
#include "run_files.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
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

// Frames f = first .. first + count - 1 of a 4 x 3 run into a trajectory_writer or a
// frame_sink.
template <class Writer> void write_frames(Writer& writer, std::size_t first, std::size_t count) {
    for (std::size_t f = first; f < first + count; ++f) {
        std::vector<double> theta(12), r(4);
        for (std::size_t i = 0; i < theta.size(); ++i)
            theta[i] = std::sin(double(i) + 10.0 * double(f));
        for (std::size_t i = 0; i < r.size(); ++i)
            r[i] = 1.0 + double(i) + double(f);
        writer.write_frame(static_cast<std::int64_t>(f), 0.5 * double(f), theta.data(), r.data(),
                           {double(f)}, nullptr);
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

// The file of `nadyn simulate` is made on another thread while the run takes its first steps
// (src/experiment/frame_sink.hpp): the frames computed meanwhile are held and handed over in
// order, and an error of the file's is still the run's error.
TEST_CASE("frames given while the file is being opened are written in order once it is") {
    const std::string dir = scratch_dir("frame_buffer/opening");
    const std::string late = dir + "/opened_late.h5", direct = dir + "/direct.h5";
    nadyn::frame_buffering buffering;
    buffering.frames = 2;
    std::promise<std::unique_ptr<nadyn::trajectory_writer>> opening;
    int opened = 0;
    {
        nadyn::detail::frame_sink sink(
            opening.get_future(), [&](nadyn::trajectory_writer&) { ++opened; }, 4, 3, true);
        write_frames(sink, 0, 3); // held: the writer is not there yet
        CHECK(opened == 0);
        CHECK_FALSE(std::filesystem::exists(late));
        opening.set_value(
            std::make_unique<nadyn::trajectory_writer>(late, small_layout(buffering), false));
        write_frames(sink, 3, 2); // takes the writer: frames 0-2 first, then 3 and 4
        CHECK(opened == 1);
        CHECK(sink.writer().frames_written() == 5);
        write_frames(sink, 5, 1);
    } // the sink and then the writer go: the frames still in the writer's buffer are written
    {
        nadyn::trajectory_writer writer(direct, small_layout(buffering), false);
        write_frames(writer, 0, 6);
    }
    const nadyn::trajectory_reader a(late), b(direct);
    REQUIRE(a.frame_count() == 6);
    CHECK(a.steps() == b.steps());
    CHECK(a.times() == b.times());
    CHECK(a.observable("energy") == b.observable("energy"));
    for (std::size_t f = 0; f < 6; ++f) {
        CHECK(a.positions(f) == b.positions(f));
        CHECK(a.magnitudes(f) == b.magnitudes(f));
    }
}

TEST_CASE("a file that could not be made is the run's error at its next frame and at its end") {
    std::promise<std::unique_ptr<nadyn::trajectory_writer>> opening;
    nadyn::detail::frame_sink sink(opening.get_future(), {}, 4, 3, true);
    write_frames(sink, 0, 2);
    opening.set_exception(std::make_exception_ptr(nadyn::io_error("no space for the header")));
    CHECK_THROWS_WITH_AS(write_frames(sink, 2, 1), "no space for the header", nadyn::io_error);
    CHECK_THROWS_WITH_AS(sink.writer(), "no space for the header", nadyn::io_error);
    CHECK_THROWS_WITH_AS(sink.opened(), "no space for the header", nadyn::io_error);
} // and the sink's destructor does not throw it again

TEST_CASE("a run writes the same file whether the file is made before the run or meanwhile") {
    const std::string dir = scratch_dir("frame_buffer/overlap");
    const std::string meanwhile = dir + "/meanwhile.h5", before = dir + "/before.h5";
    nadyn::run_config c;
    c.scheme_id = nadyn::scheme::post_ln;
    c.n = 24;
    c.d = 3;
    c.beta = 4.0;
    c.weights = nadyn::weights_spec::parse("random");
    c.integration.T = 4.0;
    c.integration.dt = 0.01;
    c.integration.every = 2; // 201 frames: held ones, then more than a buffer's worth
    // A file left by a run stopped before its first frame (HDF5's signature alone) is
    // replaced, with a warning.
    { std::ofstream(meanwhile, std::ios::binary) << "\x89HDF\r\n\x1a\n"; }
    std::vector<std::string> warnings;
    nadyn::simulation a(c);
    a.set_warning_sink([&](const std::string& w) { warnings.push_back(w); });
    const nadyn::run_summary made_meanwhile = a.run_to_file(meanwhile, false);
    REQUIRE(warnings.size() == 1);
    CHECK(contains(warnings[0], "held no frame"));
    // after_frame reads the file at each frame: the file is made before the run.
    nadyn::simulation b(c);
    const nadyn::run_summary made_before =
        b.run_to_file(before, false, nullptr, {}, [](double, std::int64_t) {});
    CHECK(made_meanwhile.frames == 201);
    CHECK(made_before.frames == made_meanwhile.frames);
    nadyn::testing::check_same_frames(before, meanwhile);
    // The header and the end-of-run record: every parameter but the clocks.
    const nadyn::trajectory_reader x(meanwhile), y(before);
    const auto& px = x.parameters().entries();
    const auto& py = y.parameters().entries();
    REQUIRE(px.size() == py.size());
    for (std::size_t i = 0; i < px.size(); ++i) {
        CAPTURE(px[i].first);
        CHECK(px[i].first == py[i].first);
        if (px[i].first != "started" && px[i].first != "finished" &&
            px[i].first != "wall_time_seconds" && px[i].first != "command_line")
            CHECK(px[i].second == py[i].second);
    }
    CHECK(x.status() == "complete");
}
