// Runs that end badly: SIGKILL in SWMR mode leaves every flushed frame readable (by the
// library, nadyn inspect and h5dump after h5clear), a live file is readable while it grows,
// a numerical blow-up stops with exit 1 naming time and token and keeps the last good frame,
// a magnitude driven through zero is the same kind of failure, a write failure (file size
// limit) is exit 1 with the frames so far readable, and rerun stops on SIGINT like simulate.
#include "cli_support.hpp"
#include "run_files.hpp"

#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <thread>

using namespace nadyn_test;
using nadyn::testing::frames_in;

namespace {

// The horizon of runs that must outlast a signal sent once their first frames are on disk:
// T = 400 takes 1.3 s for 64 tokens and 3 s for 128 in the default build (T = 40 ended before
// the kill there, with the frame buffer). The sanitizer build's nadyn is about ten times
// slower, so a tenth of it lasts as long there (T = 400 outlasted the tests' 60 s waits).
#if defined(__SANITIZE_ADDRESS__)
constexpr int long_horizon = 40;
#else
constexpr int long_horizon = 400;
#endif
const std::string long_T = std::to_string(long_horizon);

// The arguments of `run` writing to `out`.
std::vector<std::string> writing_to(std::vector<std::string> run, const std::string& out) {
    run.push_back("--out");
    run.push_back(out);
    return run;
}

// Runs `run` to `full` uninterrupted, and to `part` killed with SIGKILL after 3 frames.
// `run` must last well over the time its first frames take to reach the disk (the frame
// buffer writes the first frame, then blocks of up to 64 frames or 0.5 s): a run that ends
// before the kill would test nothing, so that is checked, not assumed.
void full_and_killed(const std::vector<std::string>& run, const std::string& full,
                     const std::string& part) {
    REQUIRE(run_nadyn(writing_to(run, full)).status == 0);
    child_process child(nadyn_path, writing_to(run, part));
    const run_result killed = signal_when(child, SIGKILL, [&] { return frames_in(part) >= 3; });
    REQUIRE(killed.signal == SIGKILL);
    REQUIRE(nadyn::trajectory_reader(part).status() == "running");
}

// The resumed run of `part` is the uninterrupted `full`, frame for frame.
void resumes_to(const std::string& part, const std::string& full) {
    const run_result resumed = run_nadyn({"simulate", "--resume", part, "--quiet"});
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    const nadyn::trajectory_reader a(full), b(part);
    CHECK(b.status() == "complete");
    REQUIRE(a.frame_count() == b.frame_count());
    CHECK(a.steps() == b.steps());
    for (std::size_t f = 0; f < a.frame_count(); ++f)
        CHECK(a.positions(f) == b.positions(f));
}

} // namespace

TEST_CASE("SIGKILL during a SWMR run: the file is readable live and after the kill") {
    const std::string dir = scratch_dir("kill_and_faults/kill");
    const std::string out = dir + "/killed.h5";
    child_process child(nadyn_path, {"simulate", "--n", "128", "--d", "8", "--T", "1000", "--dt",
                                     "0.01", "--every", "20", "--out", out, "--quiet"});
    // Read while it is written (SWMR reader), until a few frames are there.
    REQUIRE(wait_until([&] { return frames_in(out) >= 3; }, std::chrono::seconds(60)));
    const run_result live = run_nadyn({"inspect", out});
    CHECK(live.status == 0);
    CHECK(contains(live.out, "status      running"));
    child.send_signal(SIGKILL);
    const run_result killed = child.wait(std::chrono::seconds(30));
    CHECK(killed.signal == SIGKILL);

    std::size_t frames = 0;
    {
        const nadyn::trajectory_reader file(out);
        frames = file.frame_count();
        CHECK(frames >= 3);
        CHECK(file.status() == "running"); // it never finished
        const auto steps = file.steps();
        for (std::size_t f = 0; f < frames; ++f) {
            CHECK(steps[f] == static_cast<std::int64_t>(20 * f)); // no frame lost or torn
            const auto theta = file.positions(f);
            for (std::size_t k = 0; k < 128; ++k) {
                double norm2 = 0.0;
                for (std::size_t c = 0; c < 8; ++c)
                    norm2 += theta[k * 8 + c] * theta[k * 8 + c];
                CHECK(std::abs(std::sqrt(norm2) - 1.0) < 1e-12);
            }
        }
    } // the reader closes: h5clear below needs the file to itself
    const run_result inspect = run_nadyn({"inspect", out, "--csv"});
    CHECK(inspect.status == 0);
    CHECK(split_lines(inspect.out).size() == 1 + frames);
    // Other HDF5 tools need the writer's SWMR mark cleared first (h5clear -s).
    if (executable_exists("/usr/bin/h5clear") && executable_exists("/usr/bin/h5dump")) {
        CHECK(run_program("/usr/bin/h5clear", {"-s", out}).status == 0);
        CHECK(run_program("/usr/bin/h5dump", {"-H", out}).status == 0);
    }
    // And the run continues where it was killed (here: to a shorter horizon than planned,
    // which is refused, since --T may only grow).
    const run_result shorter = run_nadyn({"simulate", "--resume", out, "--T", "0.6", "--quiet"});
    CHECK(shorter.status == 2);
    CHECK(contains(shorter.err, "cannot shorten"));
}

TEST_CASE("a blow-up stops with exit 1, names time and token, keeps the last good frame") {
    const std::string dir = scratch_dir("kill_and_faults/nan");
    const std::string out = dir + "/nan.h5";
    // pre-ln with r0 = 1e-300: the speed 1/r overflows inside the first RK4 stages.
    const run_result r =
        run_nadyn({"simulate", "--scheme", "pre-ln", "--r0", "1e-300", "--n", "8", "--d", "3",
                   "--T", "1", "--dt", "0.1", "--out", out, "--quiet"});
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "non-finite"));
    CHECK(contains(r.err, "at t = "));
    CHECK(contains(r.err, "in token "));
    const nadyn::trajectory_reader file(out);
    CHECK(file.status() == "failed");
    REQUIRE(file.frame_count() >= 1);
    const auto theta = file.positions(file.frame_count() - 1);
    for (double v : theta)
        CHECK(std::isfinite(v));
}

TEST_CASE("a write failure (file size limit) is exit 1 and the frames so far stay readable") {
    const std::string dir = scratch_dir("kill_and_faults/full");
    const std::string out = dir + "/full.h5";
    // ulimit -f caps the file at 1 MiB (2048 blocks of 512 bytes), about 60 frames of
    // 17 KiB: the run stops mid-way, as on a full disk.
    const std::string command = "trap '' XFSZ; ulimit -f 2048; exec " + nadyn_path +
                                " simulate --n 128 --d 16 --T 10 --dt 0.01 --every 10 --out " +
                                out + " --quiet";
    const run_result r = run_program("/bin/sh", {"-c", command});
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, out));
    CHECK(contains(r.err, "no space"));
    const nadyn::trajectory_reader file(out);
    CHECK(file.status() == "failed");
    CHECK(file.frame_count() >= 2);
    const auto steps = file.steps();
    for (std::size_t f = 0; f < file.frame_count(); ++f)
        CHECK(steps[f] == static_cast<std::int64_t>(10 * f));
}

TEST_CASE("a run killed with SIGKILL resumes without h5clear and matches the uninterrupted run") {
    const std::string dir = scratch_dir("kill_and_faults/kill_resume");
    const std::string full = dir + "/full.h5", part = dir + "/part.h5";
    full_and_killed({"simulate", "--n", "64", "--d", "8", "--T", long_T, "--dt", "0.01", "--every",
                     "20", "--quiet", "--seed", "4"},
                    full, part);
    resumes_to(part, full);
}

namespace {

// What a SWMR writer killed inside a frame leaves: one series a row longer than the others,
// its chunk past the end of allocation the superblock records (a SWMR writer updates that
// record only when it flushes the file, not a dataset). Made here by a child process that
// reopens the killed file, writes that row, flushes the dataset alone and exits.
void write_torn_row(const std::string& path) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const hid_t access = H5Pcreate(H5P_FILE_ACCESS);
        hbool_t clear = true;
        H5Pset_libver_bounds(access, H5F_LIBVER_V110, H5F_LIBVER_V110);
        H5Pset(access, "clear_status_flags", &clear);
        const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, access);
        if (file < 0) _exit(3);
        const hid_t value = H5Dopen2(file, "particles/tokens/position/value", H5P_DEFAULT);
        const hid_t old_space = H5Dget_space(value);
        hsize_t dims[3] = {0, 0, 0};
        H5Sget_simple_extent_dims(old_space, dims, nullptr);
        H5Sclose(old_space);
        hsize_t grown[3] = {dims[0] + 1, dims[1], dims[2]};
        if (H5Dset_extent(value, grown) < 0) _exit(4);
        const hid_t space = H5Dget_space(value);
        const hsize_t start[3] = {dims[0], 0, 0}, count[3] = {1, dims[1], dims[2]};
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
        const hid_t memory = H5Screate_simple(3, count, nullptr);
        const std::vector<double> row(dims[1] * dims[2], 0.5);
        if (H5Dwrite(value, H5T_NATIVE_DOUBLE, memory, space, H5P_DEFAULT, row.data()) < 0)
            _exit(5);
        if (H5Dflush(value) < 0) _exit(6);
        _exit(0); // killed: no file flush, no close
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
}

} // namespace

TEST_CASE("a run killed inside a frame resumes: nothing is allocated over its last blocks") {
    const std::string dir = scratch_dir("kill_and_faults/torn_frame");
    const std::string full = dir + "/full.h5", part = dir + "/part.h5";
    full_and_killed({"simulate", "--n", "64", "--d", "8", "--T", long_T, "--dt", "0.01", "--every",
                     "20", "--seed", "4", "--quiet"},
                    full, part);
    write_torn_row(part);
    resumes_to(part, full);
}

TEST_CASE("a reader holding the file open does not disturb the run") {
    const std::string dir = scratch_dir("kill_and_faults/reader");
    const std::string out = dir + "/held.h5";
    // Long enough (long_T: about 3 s) that the reader below opens the file while it is
    // written; a frame every time unit.
    const auto frames = static_cast<std::size_t>(long_horizon) + 1;
    child_process child(nadyn_path, {"simulate", "--n", "128", "--d", "8", "--T", long_T, "--dt",
                                     "0.01", "--every", "100", "--out", out, "--quiet"});
    REQUIRE(wait_until([&] { return frames_in(out) >= 1; }, std::chrono::seconds(60)));
    run_result finished;
    {
        const nadyn::trajectory_reader held(out); // open until the run has ended
        // The run was still going when the reader opened it: otherwise this test would
        // check nothing about a concurrent reader.
        REQUIRE(held.status() == "running");
        REQUIRE(held.frame_count() < frames);
        finished = child.wait(std::chrono::seconds(60));
        CHECK(held.frame_count() >= 1);
    }
    INFO(finished.err);
    CHECK(finished.status == 0);
    const nadyn::trajectory_reader file(out);
    CHECK(file.status() == "complete");
    CHECK(file.frame_count() == frames);
}

TEST_CASE("the README's V = -I example: magnitudes driven through zero fail with exit 1") {
    const std::string dir = scratch_dir("kill_and_faults/negative_v");
    const std::string init = dir + "/init.h5", weights = dir + "/weights.h5";
    const std::string out = dir + "/fromfile.h5";
    // 32 tokens in d = 4, magnitudes 1 .. 2, and V = -I (Q = K = I): pre-ln's radial rate
    // <theta_k, A_k> is negative, so r_k reaches zero in finite time.
    std::vector<double> theta0(32 * 4), r0(32), eye(16, 0.0), minus_eye(16, 0.0);
    for (std::size_t k = 0; k < 32; ++k) {
        for (std::size_t c = 0; c < 4; ++c)
            theta0[k * 4 + c] = std::sin(1.0 + 3.7 * double(k) + 1.3 * double(c)); // spread
        r0[k] = 1.0 + double(k) / 31.0;
    }
    for (std::size_t c = 0; c < 4; ++c) {
        eye[c * 5] = 1.0;
        minus_eye[c * 5] = -1.0;
    }
    write_h5(init, {{"theta0", {32, 4}, theta0}, {"r0", {32}, r0}});
    write_h5(weights, {{"Q", {4, 4}, eye}, {"K", {4, 4}, eye}, {"V", {4, 4}, minus_eye}});
    const run_result r = run_nadyn({"simulate", "--scheme", "pre-ln", "--n", "32", "--d", "4",
                                    "--init", "file:" + init, "--weights", "file:" + weights, "--T",
                                    "5", "--out", out, "--quiet"});
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "left the model's domain (r > 0) at t = "));
    CHECK(contains(r.err, "magnitude of token "));
    CHECK(contains(r.err, ": r = -"));
    const nadyn::trajectory_reader file(out);
    CHECK(file.status() == "failed");
    REQUIRE(file.frame_count() >= 2);
    const auto r_min = file.observable("r_min");
    CHECK(r_min.back() > 0.0);
    CHECK(file.times().back() < 5.0);
    for (double v : file.magnitudes(file.frame_count() - 1))
        CHECK(v > 0.0);

    // post-ln keeps r = r0: the same inputs run to the end.
    const run_result post = run_nadyn({"simulate", "--scheme", "post-ln", "--n", "32", "--d", "4",
                                       "--init", "file:" + init, "--weights", "file:" + weights,
                                       "--T", "1", "--out", out, "--force", "--quiet"});
    CHECK(post.status == 0);
}

TEST_CASE("nadyn rerun interrupted by SIGINT exits 130 and marks the file interrupted") {
    const std::string dir = scratch_dir("kill_and_faults/rerun_sigint");
    const std::string first = dir + "/first.h5", again = dir + "/again.h5";
    const std::vector<std::string> long_run{"--n",  "128",  "--d",  "8",       "--T",
                                            "1000", "--dt", "0.01", "--every", "20"};
    // A recorded run to rerun: itself stopped by SIGINT (its parameters still say T = 1000).
    {
        std::vector<std::string> args{"simulate"};
        args.insert(args.end(), long_run.begin(), long_run.end());
        args.insert(args.end(), {"--out", first, "--quiet"});
        child_process child(nadyn_path, args);
        const run_result stopped =
            signal_when(child, SIGINT, [&] { return frames_in(first) >= 2; });
        REQUIRE(stopped.status == 130);
    }
    child_process child(nadyn_path, {"rerun", first, "--out", again});
    const run_result r = signal_when(child, SIGINT, [&] { return frames_in(again) >= 3; });
    INFO(r.err);
    CHECK(r.signal == 0); // handled, not killed by the signal
    CHECK(r.status == 130);
    CHECK(contains(r.out, "interrupted rerun of"));
    CHECK(contains(r.out, "kept the frames in " + again));
    const nadyn::trajectory_reader file(again);
    CHECK(file.status() == "interrupted");
    CHECK(file.frame_count() >= 3);
    // The frames before the stop are the recorded run's (same inputs, same arithmetic).
    const nadyn::trajectory_reader original(first);
    CHECK(file.positions(1) == original.positions(1));
}
