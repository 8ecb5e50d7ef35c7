// The "unclear errors" of the reliability issue (issue 35): inputs and faults that nadyn
// reported with a message pointing elsewhere (another process, a memory figure, --dt, an
// internal error) or not at all (a dropped --set, a dry run that passed, a sweep left
// "running"). Each case reproduces the old behaviour's trigger and checks the one line that
// names the real problem, the exit status and what is left on disk.
#include "cli_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <hdf5.h>
#include <unistd.h>

using namespace nadyn_test;
namespace fs = std::filesystem;

namespace {

// A string attribute of the file's root group ("" when absent).
std::string root_attribute(const std::string& path, const char* name) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(file >= 0);
    std::string text;
    if (H5Aexists(file, name) > 0) {
        const hid_t attribute = H5Aopen(file, name, H5P_DEFAULT);
        const hid_t type = H5Aget_type(attribute);
        if (H5Tis_variable_str(type) > 0) {
            char* value = nullptr;
            H5Aread(attribute, type, &value);
            text = value ? value : "";
            H5free_memory(value);
        } else {
            std::string buffer(H5Tget_size(type), '\0');
            H5Aread(attribute, type, buffer.data());
            text = buffer.c_str();
        }
        H5Tclose(type);
        H5Aclose(attribute);
    }
    H5Fclose(file);
    return text;
}

void check_one_line(const run_result& r, int status, const std::vector<std::string>& parts) {
    INFO(r.err);
    CHECK(r.status == status);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.rfind("nadyn: ", 0) == 0);
    for (const auto& part : parts)
        CHECK_MESSAGE(contains(r.err, part), part);
}

const std::vector<std::string> small_run = {"simulate", "--n", "8",   "--d",
                                            "3",        "--T", "0.2", "--quiet"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

} // namespace

// 1. It said "keeps being created and removed by another process" (O_EXCL refuses a
// dangling link eight times in a row).
TEST_CASE("a dangling symlink as --out is refused as one, with or without --force") {
    const std::string dir = scratch_dir("unclear_errors/dangling_link");
    const std::string link = dir + "/out.h5", target = dir + "/nowhere/target.h5";
    REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
    for (const bool force : {false, true}) {
        CAPTURE(force);
        auto args = with(small_run, {"--out", link});
        if (force) args.emplace_back("--force");
        check_one_line(
            run_nadyn(args), 2,
            {"'" + link + "' is a dangling symbolic link", "'" + target + "'", "remove the link"});
        CHECK(fs::is_symlink(link));
        CHECK(!fs::exists(dir + "/nowhere"));
    }
    // A target in an existing directory: still nothing created through the link.
    const std::string near = dir + "/near.h5", near_target = dir + "/target.h5";
    REQUIRE(::symlink(near_target.c_str(), near.c_str()) == 0);
    check_one_line(run_nadyn(with(small_run, {"--out", near, "--force"})), 2,
                   {"dangling symbolic link"});
    CHECK(!fs::exists(near_target));
    // The sweep checks its output the same way.
    write_text(dir + "/e.toml", "[run]\nn = 8\nd = 3\nT = 0.2\n[sweep]\nseed = [1, 2]\n");
    check_one_line(run_nadyn({"sweep", dir + "/e.toml", "--out", near, "--quiet"}), 2,
                   {"dangling symbolic link"});
    CHECK(!fs::exists(near_target));
}

// 2. It said "needs 119 GiB": the memory estimate counted a block x n workspace.
TEST_CASE("--block beyond n is out of range, not a memory figure") {
    const std::string dir = scratch_dir("unclear_errors/block");
    const run_result r =
        run_nadyn(with(small_run, {"--block", "1000000000", "--out", dir + "/x.h5"}));
    check_one_line(r, 2, {"block must be between 1 and n = 8", "got 1000000000"});
    CHECK(!contains(r.err, "GiB"));
    CHECK(list_files(dir).empty());
    // The largest valid block runs.
    CHECK(run_nadyn(with(small_run, {"--block", "8", "--out", dir + "/y.h5"})).status == 0);
}

// 3. It said "the state became non-finite ... reduce --dt": 0 / 0 in the first step.
TEST_CASE("peri-ln and ngpt with V = 0, or a zero LayerNorm gain, are refused up front") {
    const std::string dir = scratch_dir("unclear_errors/zero_attention");
    const std::string weights = dir + "/v0.h5", gain = dir + "/g0.h5", gain_b = dir + "/g0b.h5";
    write_h5(weights, {{"V", {3, 3}, std::vector<double>(9, 0.0)}});
    write_h5(gain, {{"gain", {3}, {0.0, 0.0, 0.0}}});
    // A bias along the all-ones direction: layernorm's centring removes it.
    write_h5(gain_b, {{"gain", {3}, {0.0, 0.0, 0.0}}, {"bias", {3}, {0.5, 0.5, 0.5}}});
    for (const std::string scheme : {"peri-ln", "ngpt"}) {
        CAPTURE(scheme);
        const run_result v0 =
            run_nadyn(with(small_run, {"--scheme", scheme, "--weights", "file:" + weights, "--out",
                                       dir + "/v.h5"}));
        check_one_line(
            v0, 2, {scheme + " with V = 0", "attention output A_k", "is zero", "divides by ‖A_k‖"});
        CHECK(!contains(v0.err, "--dt"));
        for (const std::string& file : {gain, gain_b}) {
            const run_result g0 =
                run_nadyn(with(small_run, {"--scheme", scheme, "--norm", "layernorm", "--ln-params",
                                           "file:" + file, "--out", dir + "/g.h5"}));
            check_one_line(g0, 2,
                           {scheme + " with a zero LayerNorm gain", "y_k = b", "divides by ‖A_k‖",
                            "nonzero gain"});
        }
    }
    CHECK(list_files(dir, ".h5") == std::vector<std::string>{"g0.h5", "g0b.h5", "v0.h5"});
    // A sweep refuses it before its file exists (it recorded a failed run per point).
    write_text(dir + "/e.toml", "[run]\nn = 8\nd = 3\nT = 0.2\nweights = \"file:" + weights +
                                    "\"\n[sweep]\nscheme = [\"pre-ln\", \"peri-ln\"]\n"
                                    "seed = [1, 2, 3]\n");
    for (const char* mode : {"--quiet", "--dry-run"}) {
        CAPTURE(mode);
        const run_result sweep =
            run_nadyn({"sweep", dir + "/e.toml", "--out", dir + "/s.h5", mode});
        check_one_line(sweep, 2, {"run 3 (scheme=peri-ln seed=1): peri-ln with V = 0"});
        CHECK(sweep.out.empty());
    }
    CHECK(!fs::exists(dir + "/s.h5"));
    // Schemes that do not normalise A_k run with V = 0 (the tokens stand still).
    CHECK(run_nadyn(with(small_run, {"--scheme", "pre-ln", "--weights", "file:" + weights, "--out",
                                     dir + "/pre.h5"}))
              .status == 0);
    // A zero gain with a bias V b off the all-ones direction is not degenerate.
    const std::string gain_c = dir + "/g0c.h5";
    write_h5(gain_c, {{"gain", {3}, {0.0, 0.0, 0.0}}, {"bias", {3}, {1.0, 0.0, 0.0}}});
    CHECK(run_nadyn(with(small_run, {"--scheme", "peri-ln", "--norm", "layernorm", "--ln-params",
                                     "file:" + gain_c, "--out", dir + "/c.h5"}))
              .status == 0);
}

// 4. A newline in --set ended the assignment there: "run.n=16\nrun.beta=9" ran n = 16 with
// the default beta, silently.
TEST_CASE("control characters in --set keys and values, and in TOML strings, are refused") {
    const std::string dir = scratch_dir("unclear_errors/set_control");
    write_text(dir + "/e.toml", "[run]\nn = 8\nd = 3\nT = 0.2\n[sweep]\nseed = [1, 2]\n");
    const auto sweep = [&](const std::string& assignment) {
        return run_nadyn(
            {"sweep", dir + "/e.toml", "--set", assignment, "--out", dir + "/s.h5", "--quiet"});
    };
    check_one_line(sweep("run.n=16\nrun.beta=9"), 2,
                   {"--set 'run.n=16\\nrun.beta=9'", "a newline (U+000A) at position 9"});
    check_one_line(sweep("run.be\tta=9"), 2, {"a tab (U+0009) at position 7"});
    check_one_line(sweep("run.scheme=pre-ln\r"), 2, {"a carriage return (U+000D) at position 18"});
    // A TOML string whose escape makes a control character, from --set or from the file.
    check_one_line(sweep("run.init=\"file:a\\nb.h5\""), 2,
                   {"key 'run.init'", "a newline (U+000A) at position 7"});
    write_text(dir + "/f.toml", "[run]\nn = 8\nd = 3\nT = 0.2\ninit = \"file:a\\u0001.h5\"\n");
    check_one_line(
        run_nadyn({"sweep", dir + "/f.toml", "--out", dir + "/s.h5", "--quiet", "--dry-run"}), 2,
        {"f.toml:5", "key 'run.init'", "a control character (U+0001) at position 7"});
    CHECK(list_files(dir, ".h5").empty());
}

// 6. --dry-run printed its plan and exited 0 for a sweep whose run then refused its input.
TEST_CASE("--dry-run of a sweep with a missing input file exits 2 with the run's line") {
    const std::string dir = scratch_dir("unclear_errors/dry_run_missing");
    write_text(dir + "/e.toml", "[run]\nn = 8\nd = 3\nT = 0.2\ninit = \"file:" + dir +
                                    "/missing.h5\"\n[sweep]\nbeta = [1, 2]\n");
    const run_result dry =
        run_nadyn({"sweep", dir + "/e.toml", "--out", dir + "/s.h5", "--dry-run"});
    const run_result real =
        run_nadyn({"sweep", dir + "/e.toml", "--out", dir + "/s.h5", "--quiet"});
    check_one_line(dry, 2, {"missing.h5"});
    CHECK(dry.out.empty());
    CHECK(real.status == 2);
    CHECK(dry.err == real.err);
    CHECK(list_files(dir, ".h5").empty());
}

// 7. Under an address-space limit, d = 8000 ended in "internal error: std::bad_alloc" and left
// the file marked running: the stepper's n x d stages are allocated once the file exists.
TEST_CASE("a run the memory limit cannot hold says out of memory and marks its file failed") {
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer reserves terabytes of shadow memory at start: under ulimit -v it
    // cannot start at all.
    MESSAGE("skipped under AddressSanitizer: it cannot run under an address-space limit");
    return;
#endif
    const std::string dir = scratch_dir("unclear_errors/out_of_memory");
    const std::string out = dir + "/big.h5";
    const run_result r =
        run_program("/bin/sh", {"-c", "ulimit -v 1000000; exec " + nadyn_path +
                                          " simulate --n 2048 --d 8000 --T 0.01 --dt 0.01 --out " +
                                          out + " --quiet"});
    check_one_line(r, 1,
                   {"out of memory", "n = 2048, d = 8000 needs about 1.72 GiB",
                    "address-space limit (ulimit -v) of 0.954 GiB", "reduce n or d"});
    CHECK(!contains(r.err, "internal error"));
    REQUIRE(fs::exists(out));
    CHECK(root_attribute(out, "status") == "failed");
}

// 8. A sweep stopped by a full disk (here the file size limit) left its root status "running".
TEST_CASE("a sweep stopped by a write failure marks its file failed, and says why") {
    const std::string dir = scratch_dir("unclear_errors/sweep_write_failure");
    write_text(dir + "/e.toml", "[run]\nn = 64\nd = 16\nT = 4\ndt = 0.02\nevery = 10\n"
                                "positions = \"all\"\n[sweep]\nseed = { range = [1, 8] }\n");
    const std::string out = dir + "/s.h5";
    // 2 MiB: the header and a few of the 8 runs (185 KiB each) fit.
    const run_result r =
        run_program("/bin/sh", {"-c", "trap '' XFSZ; ulimit -f 2048; exec " + nadyn_path +
                                          " sweep " + dir + "/e.toml --out " + out + " --quiet"});
    check_one_line(r, 1, {"ulimit -f", "--resume continues"});
    REQUIRE(fs::exists(out));
    CHECK(root_attribute(out, "status") == "failed");
    const std::string failure = root_attribute(out, "failure");
    CHECK(contains(failure, "no space left for the results of run"));
    CHECK(contains(failure, "ulimit -f"));
    const run_result inspected = run_nadyn({"inspect", out});
    INFO(inspected.err);
    CHECK(inspected.status == 0);
    CHECK(contains(inspected.out, "nadyn sweep, failed (no space left"));
    const run_result resumed = run_nadyn({"sweep", "--resume", out, "--quiet"});
    INFO(resumed.err);
    CHECK(resumed.status == 0);
    CHECK(root_attribute(out, "status") == "complete");
    CHECK(root_attribute(out, "failure").empty());
}
