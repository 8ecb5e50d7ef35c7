// Faults of the output file, none of which may lose data or crash: a disk that fills
// up during a sweep, --force on what is not a regular file, two writers of one path, a resume
// of a file another process writes, a disk too small for the header, and the file a run
// killed before its first frame leaves. Each case was reproduced before its fix: a segfault,
// runs marked complete without data, /dev/null removed, a corrupt file, an unopenable file.
// Disk-full cases run on a small tmpfs when this process may mount one (root), and under a
// file size limit (ulimit -f) everywhere.
#include "cli_support.hpp"

#include "files/hdf5.hpp"
#include "files/output_claim.hpp"
#include "nadyn/experiment/observable_table.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/observables.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include <hdf5.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace nadyn_test;
namespace fs = std::filesystem;

namespace {

// A sweep that keeps every position, small: 12 runs that keep every position (21 frames each).
const char* const full_experiment = R"([run]
n = 64
d = 16
T = 4
dt = 0.02
every = 10
weights = "gaussian"
positions = "all"

[sweep]
seed = { range = [1, 4] }
scheme = ["pre-ln", "peri-ln", "post-ln"]
)";

// A tmpfs of `kib` KiB mounted on `dir` for the object's lifetime; mounted() is false where
// this process may not mount (not root, no mount namespace).
struct small_disk {
    std::string dir;
    bool ok = false;
    small_disk(const std::string& where, int kib) : dir(where) {
        fs::create_directories(dir);
        const run_result r = run_program(
            "/bin/mount", {"-t", "tmpfs", "-o", "size=" + std::to_string(kib) + "k", "tmpfs", dir});
        ok = r.status == 0;
    }
    ~small_disk() {
        if (ok) run_program("/bin/umount", {"-l", dir});
    }
    [[nodiscard]] bool mounted() const { return ok; }
};

std::vector<double> read_all(const std::string& path, const std::string& name) {
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    const auto data = file.open_dataset(name);
    std::size_t count = 1;
    for (auto n : data.shape())
        count *= n;
    std::vector<double> values(count);
    data.read_all(H5T_NATIVE_DOUBLE, values.data());
    return values;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Every dataset of the result, but the wall times, bitwise.
void check_same_sweep(const std::string& a, const std::string& b) {
    std::vector<std::string> names{"positions", "magnitudes",      "status",
                                   "frames",    "rhs_evaluations", "accepted_steps"};
    for (auto name : nadyn::observable_names(false))
        names.emplace_back(name);
    for (const auto& name : names) {
        INFO(name);
        CHECK(same_bits(read_all(a, name), read_all(b, name)));
    }
}

// What a sweep file's statuses promise holds: every run marked complete has its frames and a
// finite mean cosine at each of them.
std::size_t check_complete_runs_hold_data(const std::string& path, std::size_t frames) {
    const auto status = read_all(path, "status");
    const auto written = read_all(path, "frames");
    const auto mean_cos = read_all(path, "mean_cos");
    std::size_t complete = 0;
    for (std::size_t i = 0; i < status.size(); ++i) {
        if (status[i] != 1) continue;
        ++complete;
        CHECK(written[i] == double(frames));
        for (std::size_t f = 0; f < frames; ++f)
            CHECK(std::isfinite(mean_cos[i * frames + f]));
    }
    return complete;
}

void write_experiment(const std::string& path) {
    write_text(path, full_experiment);
}

} // namespace

TEST_CASE("a sweep that fills the disk stops with exit 1 and one line, and resumes to the "
          "uninterrupted sweep") {
    const std::string dir = scratch_dir("output_faults/sweep_disk_full");
    write_experiment(dir + "/e.toml");
    const std::string reference = dir + "/reference.h5";
    REQUIRE(run_nadyn({"sweep", dir + "/e.toml", "--out", reference, "--quiet"}).status == 0);
    const small_disk disk(dir + "/disk", 8192);
    if (!disk.mounted()) {
        MESSAGE("skipped: cannot mount a tmpfs here (needs root)");
        return;
    }
    // Leave about 1.3 MiB: room for a few of the 12 runs (185 KiB each).
    const std::string ballast = disk.dir + "/ballast";
    REQUIRE(run_program("/usr/bin/fallocate", {"-l", "6800k", ballast}).status == 0);
    const std::string out = disk.dir + "/s.h5";
    const run_result full =
        run_nadyn({"sweep", dir + "/e.toml", "--out", out, "--quiet", "--jobs", "2"});
    INFO(full.err);
    CHECK(full.status == 1);
    CHECK(line_count(full.err) == 1);
    CHECK(contains(full.err, "no space left"));
    CHECK(contains(full.err, "--resume"));
    {
        // The root status says the sweep failed, and why (issue 35: it stayed "running").
        const auto file = nadyn::detail::hdf5_file::open_read_only(out);
        const auto status = file.read_attribute("status");
        const auto failure = file.read_attribute("failure");
        REQUIRE(status);
        REQUIRE(failure);
        CHECK(std::get<std::string>(*status) == "failed");
        CHECK(contains(std::get<std::string>(*failure), "no space left"));
    }
    const std::size_t kept = check_complete_runs_hold_data(out, 21);
    CHECK(kept >= 1);
    CHECK(kept < 12);
    fs::remove(ballast);
    const run_result resumed = run_nadyn({"sweep", "--resume", out, "--quiet"});
    INFO(resumed.err);
    CHECK(resumed.status == 0);
    CHECK(contains(resumed.out, std::to_string(kept) + " already done"));
    check_same_sweep(reference, out);
}

TEST_CASE("a sweep over the file size limit stops with exit 1, keeps a readable file, and "
          "resumes to the uninterrupted sweep") {
    const std::string dir = scratch_dir("output_faults/sweep_ulimit");
    write_experiment(dir + "/e.toml");
    const std::string reference = dir + "/reference.h5", out = dir + "/s.h5";
    REQUIRE(run_nadyn({"sweep", dir + "/e.toml", "--out", reference, "--quiet"}).status == 0);
    // 2 MiB: a few runs fit.
    const run_result limited =
        run_program("/bin/sh", {"-c", "trap '' XFSZ; ulimit -f 2048; exec " + nadyn_path +
                                          " sweep " + dir + "/e.toml --out " + out + " --quiet"});
    INFO(limited.err);
    CHECK(limited.status == 1);
    CHECK(line_count(limited.err) == 1);
    CHECK(contains(limited.err, "ulimit -f"));
    const std::size_t kept = check_complete_runs_hold_data(out, 21);
    CHECK(kept >= 1);
    CHECK(kept < 12);
    const run_result resumed = run_nadyn({"sweep", "--resume", out, "--quiet"});
    INFO(resumed.err);
    CHECK(resumed.status == 0);
    check_same_sweep(reference, out);
}

TEST_CASE("resume runs again a run marked complete whose results in the file were damaged") {
    const std::string dir = scratch_dir("output_faults/sweep_checksum");
    write_experiment(dir + "/e.toml");
    const std::string reference = dir + "/reference.h5", out = dir + "/s.h5";
    REQUIRE(run_nadyn({"sweep", dir + "/e.toml", "--out", reference, "--quiet"}).status == 0);
    fs::copy_file(reference, out);
    {
        // Run 5's mean_cos at frame 3 overwritten, its status left complete.
        const hid_t file = H5Fopen(out.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        REQUIRE(file >= 0);
        const hid_t data = H5Dopen2(file, "mean_cos", H5P_DEFAULT);
        std::vector<double> values(12 * 21);
        REQUIRE(H5Dread(data, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >=
                0);
        values[5 * 21 + 3] = 0.5;
        REQUIRE(H5Dwrite(data, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >=
                0);
        H5Dclose(data);
        H5Fclose(file);
    }
    const run_result resumed = run_nadyn({"sweep", "--resume", out, "--quiet"});
    INFO(resumed.err);
    CHECK(resumed.status == 0);
    CHECK(contains(resumed.err, "did not match their checksums"));
    CHECK(contains(resumed.out, "1 runs complete"));
    CHECK(contains(resumed.out, "11 already done"));
    check_same_sweep(reference, out);
}

TEST_CASE("--force never removes or writes what is not a regular file") {
    const std::string dir = scratch_dir("output_faults/not_regular");
    std::vector<std::string> targets;
    const std::string fifo = dir + "/fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    targets.push_back(fifo);
    // A character device like /dev/null (only root may make one): the case that removed
    // /dev/null itself, reproduced on a copy.
    const std::string device = dir + "/null";
    if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) targets.push_back(device);
    fs::create_directories(dir + "/directory");
    targets.push_back(dir + "/directory");
    for (const auto& target : targets) {
        struct stat before {};
        REQUIRE(::lstat(target.c_str(), &before) == 0);
        for (const std::vector<std::string>& command :
             {std::vector<std::string>{"simulate", "--T", "1", "--out", target, "--force"},
              std::vector<std::string>{"reduced", "--out", target, "--force"}}) {
            const run_result r = run_nadyn(command);
            INFO(target, " ", r.err);
            CHECK(r.status == 2);
            CHECK(line_count(r.err) == 1);
            CHECK(contains(r.err, target));
            struct stat after {};
            REQUIRE(::lstat(target.c_str(), &after) == 0);
            CHECK(after.st_ino == before.st_ino);
            CHECK((after.st_mode & S_IFMT) == (before.st_mode & S_IFMT));
        }
    }
    write_experiment(dir + "/e.toml");
    const run_result sweep = run_nadyn({"sweep", dir + "/e.toml", "--out", fifo, "--force"});
    CHECK(sweep.status == 2);
    CHECK(line_count(sweep.err) == 1);
    CHECK(fs::is_fifo(fifo));
}

TEST_CASE("two runs given the same output: one writes it, the other is refused with exit 2") {
    const std::string dir = scratch_dir("output_faults/two_writers");
    const std::string reference = dir + "/reference.h5";
    const std::vector<std::string> run{"simulate", "--n", "128", "--d", "8", "--T", "2", "--quiet"};
    auto with = [&](const std::string& out, bool force) {
        std::vector<std::string> args = run;
        args.insert(args.end(), {"--out", out});
        if (force) args.emplace_back("--force");
        return args;
    };
    REQUIRE(run_nadyn(with(reference, false)).status == 0);
    const nadyn::trajectory_reader expected(reference);
    const auto expected_last = expected.positions(expected.frame_count() - 1);
    for (const bool force : {false, true}) {
        for (int trial = 0; trial < 2; ++trial) {
            const std::string out = dir + "/shared.h5";
            if (!force) fs::remove(out);
            child_process first(nadyn_path, with(out, force));
            child_process second(nadyn_path, with(out, force));
            const run_result a = first.wait(std::chrono::seconds(120));
            const run_result b = second.wait(std::chrono::seconds(120));
            INFO("force ", force, ": ", a.err, " | ", b.err);
            int written = 0;
            for (const run_result* r : {&a, &b}) {
                CHECK((r->status == 0 || r->status == 2));
                if (r->status == 0) ++written;
                if (r->status == 2) {
                    CHECK(line_count(r->err) == 1);
                    CHECK((contains(r->err, "being written by another process") ||
                           contains(r->err, "already exists")));
                }
            }
            CHECK(written >= 1);
            const nadyn::trajectory_reader file(out);
            CHECK(file.status() == "complete");
            REQUIRE(file.frame_count() == expected.frame_count());
            CHECK(same_bits(file.positions(file.frame_count() - 1), expected_last));
        }
    }
}

TEST_CASE("resuming a file that another process is writing is refused, SWMR or not") {
    const std::string dir = scratch_dir("output_faults/resume_live");
    for (const bool swmr : {true, false}) {
        const std::string out = dir + (swmr ? "/swmr.h5" : "/plain.h5");
        std::vector<std::string> args{"simulate", "--n",     "1024", "--d",   "16", "--T",
                                      "400",      "--every", "1",    "--out", out,  "--quiet"};
        if (!swmr) args.emplace_back("--no-swmr");
        child_process writer(nadyn_path, args);
        REQUIRE(wait_until([&] { return fs::exists(out) && fs::file_size(out) > 300000; },
                           std::chrono::seconds(60)));
        const run_result resumed = run_nadyn({"simulate", "--resume", out, "--T", "500"});
        INFO(resumed.err);
        CHECK(resumed.status == 2);
        CHECK(line_count(resumed.err) == 1);
        CHECK(contains(resumed.err, "being written by another process"));
        writer.send_signal(SIGINT);
        const run_result stopped = writer.wait(std::chrono::seconds(60));
        CHECK(stopped.status == 130);
        const nadyn::trajectory_reader file(out);
        CHECK(file.status() == "interrupted");
        CHECK(file.frame_count() >= 2);
    }
    // A sweep file, likewise.
    write_text(dir + "/long.toml", "[run]\nn = 512\nd = 16\nT = 40\n[sweep]\nseed = { range = "
                                   "[1, 40] }\n");
    const std::string sweep = dir + "/sweep.h5";
    child_process writer(nadyn_path, {"sweep", dir + "/long.toml", "--out", sweep, "--quiet"});
    REQUIRE(wait_until([&] { return fs::exists(sweep) && fs::file_size(sweep) > 0; },
                       std::chrono::seconds(60)));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const run_result resumed = run_nadyn({"sweep", "--resume", sweep});
    INFO(resumed.err);
    CHECK(resumed.status == 2);
    CHECK(line_count(resumed.err) == 1);
    CHECK(contains(resumed.err, "being written by another process"));
    writer.send_signal(SIGINT);
    CHECK(writer.wait(std::chrono::seconds(60)).status == 130);
}

TEST_CASE("a disk too small for the header: exit 1 or 2 and one line, never a crash or an "
          "unreadable file") {
    const std::string dir = scratch_dir("output_faults/header");
    auto check_outcome = [](const run_result& r, const std::string& out) {
        INFO(out, ": ", r.err);
        CHECK((r.status == 1 || r.status == 2));
        CHECK(line_count(r.err) == 1);
        if (fs::exists(out)) {
            // Whatever is left opens, and holds whole frames.
            const nadyn::trajectory_reader file(out);
            CHECK(file.status() == "failed");
            CHECK(file.frame_count() >= 1);
        }
    };
    // Sizes from nothing to a few frames, in steps of 24 KiB: the header's parts (the file,
    // its groups, the parameters, theta0, the weights) and the first frames each meet the
    // limit in one of them.
    for (int kib = 16; kib <= 640; kib += 24) {
        const std::string out = dir + "/limit" + std::to_string(kib) + ".h5";
        const run_result r =
            run_program("/bin/sh", {"-c", "trap '' XFSZ; ulimit -f " + std::to_string(kib) +
                                              "; exec " + nadyn_path +
                                              " simulate --n 64 --d 16 --weights gaussian --T 2 "
                                              "--out " +
                                              out + " --quiet"});
        check_outcome(r, out);
    }
    // A run so short that it computes every frame before its file is made (the file is made
    // on a second thread meanwhile, src/experiment/frame_sink.hpp): the frames are handed to
    // the writer at the end, and a limit one of them meets fails the run all the same.
    // Limits (sh's ulimit -f counts blocks of 512 bytes) from the header's to the whole file's.
    for (int blocks = 640; blocks <= 1008; blocks += 16) {
        const std::string out = dir + "/short" + std::to_string(blocks) + ".h5";
        const run_result r = run_program(
            "/bin/sh",
            {"-c", "trap '' XFSZ; ulimit -f " + std::to_string(blocks) + "; exec " + nadyn_path +
                       " simulate --n 4 --d 3 --T 2 --dt 0.01 --every 1 --out " + out +
                       " --quiet"});
        if (r.status == 0) continue; // the whole file fitted
        check_outcome(r, out);
    }
    for (const int kib : {16, 32, 64, 128, 256, 320, 384, 512}) {
        const small_disk disk(dir + "/disk" + std::to_string(kib), kib);
        if (!disk.mounted()) {
            MESSAGE("skipped the tmpfs sizes: cannot mount a tmpfs here (needs root)");
            break;
        }
        const std::string out = disk.dir + "/a.h5";
        check_outcome(run_nadyn({"simulate", "--n", "64", "--d", "16", "--weights", "gaussian",
                                 "--T", "2", "--out", out, "--quiet"}),
                      out);
        const std::string sweep = disk.dir + "/s.h5";
        write_text(dir + "/e.toml", full_experiment);
        const run_result r = run_nadyn({"sweep", dir + "/e.toml", "--out", sweep, "--quiet"});
        INFO(kib, " KiB sweep: ", r.err);
        CHECK((r.status == 1 || r.status == 2));
        CHECK(line_count(r.err) == 1);
        if (fs::exists(sweep)) check_complete_runs_hold_data(sweep, 21);
    }
}

TEST_CASE("a file left by a run stopped before its first frame is recognised as empty") {
    const std::string dir = scratch_dir("output_faults/early_kill");
    const std::string zero = dir + "/zero.h5", header = dir + "/header.h5";
    write_text(zero, ""); // killed between creating the file and HDF5's first write
    // Killed after the header, before the first frame: the file is left marked open for
    // writing (not yet in SWMR mode), which no HDF5 reader opens; its writer is dead (no
    // claim's lock), so nadyn's readers clear the mark and see a file without frames.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        nadyn::trajectory_layout layout;
        layout.n = 4;
        layout.d = 3;
        layout.observables = {{"mean_cos"}};
        nadyn::trajectory_writer writer(header, layout, false);
        nadyn::parameter_list parameters;
        parameters.set("n", std::int64_t{4});
        writer.write_parameters(parameters);
        ::_exit(0); // no destructor: as SIGKILL would leave it
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    const run_result inspected = run_nadyn({"inspect", header});
    INFO(inspected.err);
    CHECK(inspected.status == 0);
    CHECK(contains(inspected.out, "frames      0"));
    const run_result resumed = run_nadyn({"simulate", "--resume", header});
    INFO(resumed.err);
    CHECK(resumed.status == 2);
    CHECK(line_count(resumed.err) == 1);
    for (const std::string& path : {zero, header}) {
        const run_result fresh = run_nadyn({"simulate", "--T", "1", "--out", path, "--quiet"});
        INFO(path, ": ", fresh.err);
        CHECK(fresh.status == 0);
        const nadyn::trajectory_reader file(path);
        CHECK(file.status() == "complete");
    }
    // A file that holds a frame is never taken without --force.
    const run_result again = run_nadyn({"simulate", "--T", "1", "--out", header, "--quiet"});
    CHECK(again.status == 2);
    CHECK(contains(again.err, "already exists"));
}

TEST_CASE("damaged metadata in a file left by a killed SWMR writer: inspect and --resume end at "
          "once with exit 1 or 2") {
    // Each failing checksum used to be retried 100 times with a growing sleep by HDF5's SWMR
    // reader (minutes per open, SIGINT and SIGTERM unanswered): the readers now retry only
    // while a writer holds the file.
    const std::string dir = scratch_dir("output_faults/damaged");
    const std::string killed = dir + "/killed.h5";
    {
        child_process child(nadyn_path, {"simulate", "--n", "64", "--d", "8", "--T", "200",
                                         "--every", "1", "--out", killed, "--quiet"});
        REQUIRE(wait_until([&] { return fs::exists(killed) && fs::file_size(killed) > 200000; },
                           std::chrono::seconds(60)));
        child.send_signal(SIGKILL);
        child.wait(std::chrono::seconds(30));
    }
    const std::string original = read_text(killed);
    std::uint64_t state = 12345;
    auto next = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return state >> 33;
    };
    int refused = 0;
    for (int trial = 0; trial < 10; ++trial) {
        std::string bytes = original;
        for (int flip = 0; flip < 4; ++flip)
            bytes[next() % 8192] ^= static_cast<char>(1 << (next() % 8));
        const std::string damaged = dir + "/damaged" + std::to_string(trial) + ".h5";
        write_text(damaged, bytes);
        for (const std::vector<std::string>& command :
             {std::vector<std::string>{"inspect", damaged},
              // A horizon shorter than the run's: the file is read whole (where the retries
              // were), then the resume is refused without running.
              std::vector<std::string>{"simulate", "--resume", damaged, "--T", "100"}}) {
            const auto started = std::chrono::steady_clock::now();
            child_process child(nadyn_path, command);
            const run_result r = child.wait(std::chrono::seconds(30));
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            INFO(command[0], " ", damaged, ": ", r.err);
            CHECK(r.signal == 0);
            CHECK((r.status == 0 || r.status == 1 || r.status == 2));
            CHECK(seconds < 20);
            if (r.status != 0) {
                CHECK(line_count(r.err) == 1);
                ++refused;
            }
        }
    }
    CHECK(refused > 0); // the damage was met, not only missed
}

namespace {

std::uintmax_t allocated_bytes(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return static_cast<std::uintmax_t>(st.st_blocks) * 512;
}

} // namespace

TEST_CASE("a reservation goes ahead of what is asked, takes only that where no more fits, and "
          "returns the rest at release") {
    using nadyn::detail::output_claim;
    constexpr std::uintmax_t kib = 1024;
    const std::string dir = scratch_dir("output_faults/reserve_ahead");
    const std::string path = dir + "/claim.h5";
    {
        output_claim claim = output_claim::create(path, true);
        claim.reserve(100 * kib, "reserve");
        if (allocated_bytes(path) < 100 * kib) {
            MESSAGE("skipped: this file system does not preallocate (fallocate)");
        } else {
            // Half as much again, at least 256 KiB: the next 256 KiB take no extension.
            CHECK(allocated_bytes(path) >= 356 * kib);
            const std::uintmax_t before = allocated_bytes(path);
            claim.reserve(256 * kib, "reserve");
            CHECK(allocated_bytes(path) == before);
            claim.reserve(400 * kib, "reserve");
            CHECK(allocated_bytes(path) >= 656 * kib);
        }
    }
    CHECK(std::filesystem::file_size(path) == 0);
    CHECK(allocated_bytes(path) == 0); // released: nothing beyond the (empty) file's end

    small_disk disk(dir + "/disk", 512);
    if (!disk.mounted()) {
        MESSAGE("skipped the tmpfs: cannot mount a tmpfs here (needs root)");
        return;
    }
    // 400 KiB fit on a 512 KiB disk, 400 + 256 do not: the exact amount is reserved.
    output_claim claim = output_claim::create(disk.dir + "/claim.h5", true);
    CHECK_NOTHROW(claim.reserve(400 * kib, "reserve"));
    CHECK(allocated_bytes(disk.dir + "/claim.h5") >= 400 * kib);
    CHECK_THROWS_AS(claim.reserve(600 * kib, "no room"), nadyn::io_error);
}
