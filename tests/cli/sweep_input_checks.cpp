// nadyn sweep refuses bad input before anything runs: input
// files of every distinct point, what an experiment file is, its keys' types and spellings,
// the messages' length and characters, --set, --jobs, a resumed file's experiment, and a
// dry run of many runs that answers at once. Each refusal is one line, status 2, no file.
#include "cli_support.hpp"

#include "files/hdf5.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace nadyn_test;

namespace {

// Refused as bad input: status 2, one line naming `part`, no result file out.h5.
void check_refused(const run_result& r, const std::string& dir, const std::string& part) {
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(line_count(r.err) == 1);
    CHECK_MESSAGE(contains(r.err, part), part);
    CHECK(!fs::exists(dir + "/out.h5"));
}

} // namespace

TEST_CASE("a sweep whose input file is missing is refused before any run, writing nothing") {
    const std::string dir = scratch_dir("sweep_input/missing_init");
    write_h5(dir + "/good.h5", {{"theta0", {4, 3}, std::vector<double>(12, 1.0)}});
    // One point of the init axis names a file that is not there: the whole sweep is refused.
    write_text(dir + "/exp.toml", "[run]\nn = 4\nd = 3\nT = 0.2\n[sweep]\n"
                                  "init = [\"file:good.h5\", \"file:absent.h5\"]\n"
                                  "seed = [1, 2]\n");
    check_refused(run_nadyn({"sweep", "exp.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "absent.h5");
    // A file of the wrong shape for one n of the sweep, too.
    write_text(dir + "/shape.toml", "[run]\nd = 3\nT = 0.2\ninit = \"file:good.h5\"\n"
                                    "[sweep]\nn = [4, 5]\n");
    check_refused(run_nadyn({"sweep", "shape.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "run 1 (n=5)");
    // Weights and ln_params files as well.
    write_text(dir + "/weights.toml", "[run]\nn = 4\nd = 3\nT = 0.2\n"
                                      "weights = \"file:noweights.h5\"\n");
    check_refused(run_nadyn({"sweep", "weights.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "noweights.h5");
    write_text(dir + "/ln.toml", "[run]\nn = 4\nd = 3\nT = 0.2\nnorm = \"layernorm\"\n"
                                 "init = \"uniform\"\nln_params = \"file:nogain.h5\"\n");
    check_refused(run_nadyn({"sweep", "ln.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "nogain.h5");
}

TEST_CASE("what is not a readable experiment file is refused: a directory, a device, an "
          "oversized file, an empty one") {
    const std::string dir = scratch_dir("sweep_input/not_a_file");
    fs::create_directories(dir + "/adir");
    check_refused(run_nadyn({"sweep", "adir", "--out", "out.h5"}, in_dir(dir)), dir,
                  "'adir' is not a regular file");
    run_options bounded = in_dir(dir);
    bounded.timeout = std::chrono::seconds(20); // /dev/zero read to the end never ends
    check_refused(run_nadyn({"sweep", "/dev/zero", "--out", "out.h5"}, bounded), dir,
                  "'/dev/zero' is not a regular file");
    write_text(dir + "/huge.toml", "[run]\n# " + std::string(std::size_t{2} << 20, 'x') + "\n");
    check_refused(run_nadyn({"sweep", "huge.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "larger than 1 MiB");
    write_text(dir + "/empty.toml", "");
    check_refused(run_nadyn({"sweep", "empty.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "neither a [run] nor a [sweep] table");
    write_text(dir + "/comment.toml", "# n = 8\n");
    check_refused(run_nadyn({"sweep", "comment.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "neither a [run] nor a [sweep] table");
}

TEST_CASE("keys are refused when given twice under two spellings or with the wrong type") {
    const std::string dir = scratch_dir("sweep_input/keys");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"[run]\nscheme = \"mix-ln\"\nt_switch = 1\nt-switch = 2\n",
         "key 'run.t_switch' is given twice (as 't-switch' and 't_switch')"},
        {"[run]\nbeta = \"4\"\n", "bad.toml:2: key 'run.beta': the string \"4\" is not a number"},
        {"[run]\ncausal = \"no\"\n", "key 'run.causal': the string \"no\" is not a boolean"},
        {"[run]\nn = \"8\"\n", "key 'run.n': the string \"8\" is not a whole number"},
        {"[sweep]\nbeta = [\"1\", 2]\n", "key 'sweep.beta': the string \"1\" is not a number"},
        {"[sweep]\nqkv_norm = \"yes\"\n",
         "key 'sweep.qkv_norm': the string \"yes\" is not a boolean"},
    };
    for (const auto& [text, part] : cases) {
        INFO(text);
        write_text(dir + "/bad.toml", text);
        check_refused(run_nadyn({"sweep", "bad.toml", "--out", "out.h5"}, in_dir(dir)), dir, part);
    }
}

TEST_CASE("values in messages are shortened and escaped, and --set errors name --set") {
    const std::string dir = scratch_dir("sweep_input/messages");
    // A value of 900 KB: the message quotes 60 bytes of it.
    write_text(dir + "/long.toml", "[run]\nscheme = \"" + std::string(900000, 'q') + "\"\n");
    const run_result longer = run_nadyn({"sweep", "long.toml", "--out", "out.h5"}, in_dir(dir));
    check_refused(longer, dir, std::string(60, 'q') + "...");
    CHECK(longer.err.size() < 400);
    // Newlines and escape characters are shown escaped, on one line.
    write_text(dir + "/escape.toml", "[run]\nscheme = \"pre\\nln\\u001b[31m\"\n");
    const run_result escaped = run_nadyn({"sweep", "escape.toml", "--out", "out.h5"}, in_dir(dir));
    check_refused(escaped, dir, "pre\\nln\\x1b[31m");
    CHECK(escaped.err.find('\x1b') == std::string::npos);
    write_text(dir + "/key.toml", "[run]\n\"n\\nx\" = 1\n");
    check_refused(run_nadyn({"sweep", "key.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "unknown key 'run.n\\nx'");
    // --set: the override is blamed, not the file.
    write_text(dir + "/ok.toml", "[run]\nn = 8\nT = 0.2\n[sweep]\nseed = [1, 2]\n");
    const run_result set = run_nadyn({"sweep", "ok.toml", "--set", "run.n=0"}, in_dir(dir));
    check_refused(set, dir, "nadyn: --set 'run.n=0': key 'run.n': n must be at least 1");
    CHECK(!contains(set.err, "ok.toml"));
    const run_result axis =
        run_nadyn({"sweep", "ok.toml", "--set", "sweep.seed=[1, -2]"}, in_dir(dir));
    check_refused(axis, dir, "--set 'sweep.seed=[1, -2]': key 'sweep.seed'");
    CHECK(!contains(axis.err, "ok.toml"));
}

TEST_CASE("--jobs is bounded, and the memory figure counts only runs that can run together") {
    const std::string dir = scratch_dir("sweep_input/jobs");
    write_text(dir + "/ok.toml", "[run]\nn = 8\nT = 0.2\n[sweep]\nseed = [1, 2]\n");
    check_refused(run_nadyn({"sweep", "ok.toml", "--jobs", "1000000"}, in_dir(dir)), dir,
                  "jobs must be between 0 (chosen automatically) and 4096");
    // Two runs: asking for 1000 side by side runs two.
    const run_result dry =
        run_nadyn({"sweep", "ok.toml", "--jobs", "1000", "--dry-run"}, in_dir(dir));
    CHECK(dry.status == 0);
    CHECK_MESSAGE(contains(dry.out, "schedule: 2 runs side by side"), dry.out);
}

TEST_CASE("a sweep file whose recorded experiment was edited is not resumed") {
    const std::string dir = scratch_dir("sweep_input/edited");
    write_text(dir + "/exp.toml", "[run]\nn = 8\nd = 3\nT = 0.2\n[sweep]\nseed = [1, 2]\n");
    REQUIRE(run_nadyn({"sweep", "exp.toml", "--out", "s.h5"}, in_dir(dir)).status == 0);
    // An unchanged file resumes (nothing to do).
    CHECK(run_nadyn({"sweep", "--resume", "s.h5"}, in_dir(dir)).status == 0);
    {
        auto file = nadyn::detail::hdf5_file::open_read_write(dir + "/s.h5");
        file.write_attribute("experiment", std::string("[run]\nn = 8\nd = 3\nT = 0.2\nbeta = 9\n"
                                                       "[sweep]\nseed = [1, 2]\n"));
    }
    const file_snapshot before = snapshot(dir + "/s.h5");
    const run_result r = run_nadyn({"sweep", "--resume", "s.h5"}, in_dir(dir));
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "was changed after the sweep was created"));
    CHECK(snapshot(dir + "/s.h5") == before);
}

TEST_CASE("a dry run of 10^7 runs answers at once, with the exact count and work") {
    const std::string dir = scratch_dir("sweep_input/dry_run");
    write_text(dir + "/many.toml",
               "[run]\nn = 64\nd = 16\nT = 1\ndt = 0.1\nintegrator = \"euler\"\n"
               "[sweep]\nbeta = { linspace = [0.5, 8, 100] }\nseed = { range = [1, 100000] }\n");
    run_options bounded = in_dir(dir);
    bounded.timeout = std::chrono::seconds(30);
    const auto start = std::chrono::steady_clock::now();
    const run_result r = run_nadyn({"sweep", "many.toml", "--dry-run"}, bounded);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(contains(r.out, "many.toml: 10000000 runs"));
    // 10^7 runs x 10 Euler steps x 4 n^2 d at n = 64, d = 16: 26.2 TFLOP.
    CHECK_MESSAGE(contains(r.out, "work: 26.2 TFLOP of attention"), r.out);
    CHECK(seconds < 10.0);
}
