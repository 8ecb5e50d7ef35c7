// Regression: a resume killed in its first milliseconds (after it reopened the file for
// writing, before it re-entered SWMR mode) leaves the file marked open for writing by a
// non-SWMR writer. Every reader then refused it ("marked open for writing by a run that has
// not written a frame") although it held 165 frames, and so did the next resume: exit 1, and
// only h5clear -s recovered it. data/resume_killed_early.h5 is such a file, made by
//
//   A="--scheme pre-ln --init caps:6,0.5 --n 128 --d 3 --dt 0.01 --every 5 --cluster-eps 0.02
//      --seed 3 --T 40 --quiet"
//   nadyn simulate $A --out k.h5 & sleep 0.1; kill -9 $!
//   nadyn simulate --resume k.h5 & sleep 0.007; kill -9 $!
//
// A dead writer's mark (the claim's lock free) is now cleared as h5clear -s clears it; a live
// writer's never.
#include "cli_support.hpp"

#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using namespace nadyn_test;

const std::string damaged = std::string(NADYN_TEST_DATA_DIR) + "/resume_killed_early.h5";
constexpr std::size_t frames_before = 165;

// A writable copy of the damaged file (the test data stay as they are).
std::string damaged_copy(const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    fs::copy_file(damaged, path, fs::copy_options::overwrite_existing);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
    return path;
}

// The file as h5clear -s leaves it: the reference the repair must match bitwise.
std::string cleared_by_h5clear(const std::string& dir) {
    const std::string path = damaged_copy(dir, "h5clear.h5");
    const run_result r = run_program("/usr/bin/h5clear", {"-s", path});
    REQUIRE(r.status == 0);
    return path;
}

} // namespace

TEST_CASE("inspect reads a file a killed resume left marked, bitwise as after h5clear -s") {
    if (!executable_exists("/usr/bin/h5clear")) {
        MESSAGE("h5clear (hdf5-tools) not installed: skipped");
        return;
    }
    const std::string dir = scratch_dir("resume_killed_early/inspect");
    const std::string path = damaged_copy(dir, "k.h5");
    const std::string reference = cleared_by_h5clear(dir);
    const run_result r = run_nadyn({"inspect", path});
    INFO("stderr: " << r.err);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(contains(r.out, "frames      165"));
    // The repair is h5clear -s's, byte for byte, and the frames read are the file's.
    CHECK(read_text(path) == read_text(reference));
    const nadyn::trajectory_reader repaired(path), cleared(reference);
    REQUIRE(repaired.frame_count() == frames_before);
    CHECK(repaired.times() == cleared.times());
    for (std::size_t f = 0; f < frames_before; f += 41)
        CHECK(repaired.positions(f) == cleared.positions(f));
}

TEST_CASE("the resume of such a file continues it from its last frame") {
    const std::string dir = scratch_dir("resume_killed_early/resume");
    const std::string path = damaged_copy(dir, "k.h5");
    const run_result r = run_nadyn({"simulate", "--resume", path, "--quiet"});
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    CHECK(contains(r.out, "complete: "));
    const nadyn::trajectory_reader resumed(path);
    CHECK(resumed.status() == "complete");
    CHECK(resumed.frame_count() == 801); // T = 40, dt = 0.01, every 5: frames 0, 5, ..., 4000
    CHECK(resumed.times().back() == 40.0);
    if (executable_exists("/usr/bin/h5clear")) {
        const nadyn::trajectory_reader cleared(cleared_by_h5clear(dir));
        for (std::size_t f = 0; f + 1 < frames_before; f += 41) // the last may be off cadence
            CHECK(resumed.positions(f) == cleared.positions(f));
    }
}

TEST_CASE("a marked file whose writer still holds its claim is left alone") {
    const std::string dir = scratch_dir("resume_killed_early/live");
    const std::string path = damaged_copy(dir, "k.h5");
    const file_snapshot before = snapshot(path);
    // The claim's lock, as a live writer holds it (an OFD write lock on the whole file).
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    REQUIRE(::fcntl(fd, F_OFD_SETLK, &lock) == 0);
    const run_result r = run_nadyn({"inspect", path});
    ::close(fd);
    INFO("stderr: " << r.err);
    CHECK(r.status == 1);
    CHECK(contains(r.err, "marked open for writing"));
    CHECK(line_count(r.err) == 1);
    CHECK(snapshot(path) == before);
}
