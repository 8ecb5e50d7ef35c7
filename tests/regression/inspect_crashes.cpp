// Regression: data/inspect_crashes.h5, a trajectory with one damaged byte in a group's link
// metadata, made nadyn inspect, nadyn simulate --resume and nadyn rerun die with SIGSEGV
// inside libhdf5's link iteration (h5py and h5dump crash or fail on it too): the damage is in
// what HDF5 reads before any call of nadyn's returns. The reads now happen first in a child
// process (include/nadyn/files/child_reader.hpp), whose crash becomes one line and exit 1, the
// status of a file that cannot be read (docs/cli.md).
#include "cli_support.hpp"

#include "nadyn/files/child_reader.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <string>

// AddressSanitizer handles SIGSEGV itself: a crash in the reader's child becomes its report
// and exit status instead of the signal these tests expect (the sanitizer build still runs
// the tests of the other outcomes).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool under_address_sanitizer = true;
#else
constexpr bool under_address_sanitizer = false;
#endif

namespace {

using namespace nadyn_test;

const std::string crashing = std::string(NADYN_TEST_DATA_DIR) + "/inspect_crashes.h5";

std::string crashing_copy(const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    fs::copy_file(crashing, path, fs::copy_options::overwrite_existing);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
    return path;
}

void check_crash_reported(const run_result& r, const std::string& path) {
    INFO("stderr: " << r.err);
    CHECK(r.signal == 0);
    CHECK(r.status == 1);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "nadyn: "));
    CHECK(contains(r.err, "'" + path + "'"));
    // The reader crashes (SIGSEGV or SIGBUS as a wild pointer lands in unmapped or invalid
    // memory, SIGABRT when glibc's heap checks see the damage first: it depends on the heap), or
    // meets the damage as HDF5's checksum error first (it depends on the order of the objects
    // visited and the build): either way one line naming the file, exit 1, and no crash of nadyn
    // itself.
    CHECK((contains(r.err, "damaged HDF5 metadata (the reader crashed: SIGSEGV)") ||
           contains(r.err, "damaged HDF5 metadata (the reader crashed: SIGBUS)") ||
           contains(r.err, "damaged HDF5 metadata (the reader crashed: SIGABRT)") ||
           contains(r.err, "incorrect metadata checksum")));
    CHECK(r.out.empty());
}

} // namespace

TEST_CASE("inspect of a file whose metadata crashes libhdf5: one line, exit 1" *
          doctest::skip(under_address_sanitizer)) {
    const std::string dir = scratch_dir("inspect_crashes/inspect");
    const std::string path = crashing_copy(dir, "i.h5");
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"inspect", path},
          std::vector<std::string>{"inspect", path, "--csv"},
          std::vector<std::string>{"inspect", path, "--describe"}}) {
        CAPTURE(args.back());
        check_crash_reported(run_nadyn(args), path);
    }
}

TEST_CASE("--resume and rerun of a file whose metadata crashes libhdf5: one line, exit 1, "
          "nothing written" *
          doctest::skip(under_address_sanitizer)) {
    const std::string dir = scratch_dir("inspect_crashes/resume");
    const std::string path = crashing_copy(dir, "r.h5");
    const file_snapshot before = snapshot(path);
    check_crash_reported(run_nadyn({"simulate", "--resume", path, "--quiet"}), path);
    CHECK(snapshot(path) == before);
    check_crash_reported(run_nadyn({"rerun", path, "--out", dir + "/again.h5"}), path);
    CHECK(!fs::exists(dir + "/again.h5"));
    CHECK(snapshot(path) == before);
}

TEST_CASE("read_in_child: the child's output and status, its errors, its crash" *
          doctest::skip(under_address_sanitizer)) {
    const nadyn::child_read printed = nadyn::read_in_child("f.h5", [] {
        std::printf("two\nlines\n");
        return 3;
    });
    CHECK(printed.status == 3);
    CHECK(printed.output == "two\nlines\n");
    CHECK_THROWS_WITH_AS(
        nadyn::read_in_child("f.h5", []() -> int { throw nadyn::input_error("bad f"); }), "bad f",
        nadyn::input_error);
    CHECK_THROWS_WITH_AS(
        nadyn::read_in_child("f.h5", []() -> int { throw nadyn::io_error("lost f"); }), "lost f",
        nadyn::io_error);
    CHECK_THROWS_WITH_AS(nadyn::read_in_child("f.h5",
                                              [] {
                                                  std::raise(SIGSEGV);
                                                  return 0;
                                              }),
                         "'f.h5': damaged HDF5 metadata (the reader crashed: SIGSEGV)",
                         nadyn::io_error);
    CHECK_THROWS_WITH_AS(nadyn::read_in_child("f.h5",
                                              [] {
                                                  std::abort();
                                                  return 0;
                                              }),
                         "'f.h5': damaged HDF5 metadata (the reader crashed: SIGABRT)",
                         nadyn::io_error);
    CHECK_THROWS_WITH_AS(nadyn::read_in_child("f.h5",
                                              [] {
                                                  std::raise(SIGBUS);
                                                  return 0;
                                              }),
                         "'f.h5': damaged HDF5 metadata (the reader crashed: SIGBUS)",
                         nadyn::io_error);
}
