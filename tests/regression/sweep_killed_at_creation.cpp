// Regression: a sweep killed about 8 ms after its start left a 48-byte stub (the first bytes of
// the HDF5 superblock, data/sweep_killed_8ms.h5). A new sweep then said "already exists; pass
// --force", and inspect and --resume said "truncated file". Writers now flush a new file at
// once (a kill leaves a whole empty file), and such a stub is recognised as holding nothing: a
// new run or sweep replaces it, inspect and --resume say what it is (exit 2, one line).
#include "cli_support.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <string>

namespace {

using namespace nadyn_test;

std::string stub_copy(const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    fs::copy_file(std::string(NADYN_TEST_DATA_DIR) + "/sweep_killed_8ms.h5", path,
                  fs::copy_options::overwrite_existing);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
    return path;
}

} // namespace

TEST_CASE("a stub left at creation is replaced by a new run or sweep") {
    const std::string dir = scratch_dir("sweep_killed_at_creation");
    REQUIRE(fs::file_size(stub_copy(dir, "probe.h5")) == 48);
    write_text(dir + "/e.toml", "[run]\nn = 8\nT = 0.5\n[sweep]\nseed = [1, 2]\n");
    const run_result sweep =
        run_nadyn({"sweep", dir + "/e.toml", "--out", stub_copy(dir, "s.h5"), "--quiet"});
    CHECK(sweep.status == 0);
    CHECK(contains(sweep.out, "2 runs complete"));
    const run_result simulate = run_nadyn(
        {"simulate", "--n", "8", "--T", "0.5", "--out", stub_copy(dir, "r.h5"), "--quiet"});
    CHECK(simulate.status == 0);
    CHECK(fs::file_size(dir + "/r.h5") > 48);
    const run_result density = run_nadyn(
        {"meanfield", "--points", "64", "--beta", "1", "--T", "0.1", "--out",
         stub_copy(dir, "m.h5"), "--quiet"});
    CHECK(density.status == 0);
}

TEST_CASE("inspect and --resume of a stub say what it is") {
    const std::string dir = scratch_dir("sweep_killed_at_creation_read");
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"inspect", stub_copy(dir, "i.h5")},
          std::vector<std::string>{"sweep", "--resume", stub_copy(dir, "w.h5")},
          std::vector<std::string>{"simulate", "--resume", stub_copy(dir, "v.h5")}}) {
        const run_result r = run_nadyn(args);
        CAPTURE(args.front());
        CHECK(r.status == 2);
        CHECK(line_count(r.err) == 1);
        CHECK(contains(r.err, "holds no")); // "holds no result" or "holds no frame"
    }
}

TEST_CASE("a FIFO given as an input is refused at once, not read forever") {
    const std::string dir = scratch_dir("fifo_inputs");
    const std::string fifo = dir + "/pipe.h5";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"inspect", fifo},
          std::vector<std::string>{"simulate", "--resume", fifo},
          std::vector<std::string>{"rerun", fifo, "--out", dir + "/x.h5"},
          std::vector<std::string>{"simulate", "--n", "8", "--T", "0.1", "--init", "file:" + fifo,
                                   "--out", dir + "/y.h5"},
          std::vector<std::string>{"simulate", "--n", "8", "--T", "0.1", "--weights",
                                   "file:" + fifo, "--out", dir + "/z.h5"},
          std::vector<std::string>{"meanfield", "--resume", fifo}}) {
        run_options options;
        options.timeout = std::chrono::seconds(20); // a hang is killed, and fails below
        const run_result r = run_nadyn(args, options);
        CAPTURE(args.front() + " " + args[1]);
        CHECK(r.status == 2);
        CHECK(line_count(r.err) == 1);
        CHECK(contains(r.err, "not a regular file"));
    }
}
