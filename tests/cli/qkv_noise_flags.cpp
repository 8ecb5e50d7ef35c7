// --qkv-norm and --norm-noise on the command line (docs/model.md §11): recorded in
// /parameters, rerun bit for bit, resumed only with the same values, bad values and the
// unsupported combination refused with one line and status 2, no file written.
#include "cli_support.hpp"

#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace nadyn_test;

namespace {

std::string scratch(const std::string& name) {
    const std::string dir = std::string(NADYN_TEST_TMPDIR) + "/qkv_noise_flags";
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/" + name + ".h5";
    std::filesystem::remove(path);
    return path;
}

const std::vector<std::string> noisy = {
    "simulate",     "--scheme", "pre-ln",       "--n",  "16",        "--d",      "5",
    "--T",          "1",        "--dt",         "0.05", "--weights", "gaussian", "--qkv-norm",
    "--norm-noise", "0.1",      "--layer-time", "0.3",  "--quiet"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

} // namespace

TEST_CASE("--qkv-norm and --norm-noise are recorded, rerun bit for bit and resumed") {
    const std::string run = scratch("noisy"), again = scratch("noisy_rerun");
    const run_result r = run_nadyn(with(noisy, {"--out", run}));
    INFO(r.err);
    REQUIRE(r.status == 0);
    {
        const nadyn::trajectory_reader file(run);
        CHECK(file.parameters().integer("qkv_norm").value_or(-1) == 1);
        CHECK(file.parameters().number("norm_noise").value_or(-1.0) == 0.1);
        const auto flips = file.observable("argmax_flips");
        const auto entropy = file.observable("attention_entropy");
        REQUIRE(!flips.empty());
        for (std::size_t f = 0; f < flips.size(); ++f) {
            CHECK(flips[f] >= 0.0);
            CHECK(flips[f] <= 1.0);
            CHECK(entropy[f] > 0.0);
            CHECK(entropy[f] < 1.0);
        }
    }
    REQUIRE(run_nadyn({"rerun", run, "--out", again}).status == 0);
    const nadyn::trajectory_reader first(run), second(again);
    REQUIRE(first.frame_count() == second.frame_count());
    for (std::size_t f = 0; f < first.frame_count(); ++f)
        CHECK(first.positions(f) == second.positions(f));
    CHECK(first.observable("argmax_flips") == second.observable("argmax_flips"));
    // --resume refuses another noise level, by name.
    const run_result refused =
        run_nadyn({"simulate", "--resume", run, "--T", "2", "--norm-noise", "0.2", "--quiet"});
    CHECK(refused.status == 2);
    CHECK(contains(refused.err, "norm_noise"));
}

TEST_CASE("bad noise levels and --observe unselectable with QKV-Norm or noise are refused") {
    struct bad_case {
        std::vector<std::string> extra;
        std::string message;
    };
    const std::vector<bad_case> cases = {
        {{"--norm-noise", "-0.1"}, "norm-noise must be a finite number >= 0"},
        {{"--norm-noise", "nan"}, "norm-noise must be a finite number >= 0"},
        {{"--qkv-norm", "--observe", "unselectable"}, "drop --qkv-norm or --observe unselectable"},
        {{"--norm-noise", "0.1", "--observe", "unselectable"},
         "drop --norm-noise or --observe unselectable"},
    };
    for (const bad_case& c : cases) {
        const std::string out = scratch("refused");
        std::vector<std::string> args = {"simulate", "--n", "8",     "--d", "3",
                                         "--T",      "0.1", "--out", out,   "--quiet"};
        args.insert(args.end(), c.extra.begin(), c.extra.end());
        const run_result r = run_nadyn(args);
        CAPTURE(c.message);
        CAPTURE(r.err);
        CHECK(r.status == 2);
        CHECK(contains(r.err, c.message));
        CHECK(line_count(r.err) == 1);
        CHECK(!std::filesystem::exists(out));
    }
}
