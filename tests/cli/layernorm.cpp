// nadyn simulate --norm layernorm and --ln-params (docs/model.md §10) on the command line:
// the refusals (exit 2, one line, no output file), rms bitwise the run without the flag, the
// gain and bias recorded in /parameters and a rerun (and a resume) bitwise from the file
// alone, init files centred on reading.
#include "cli_support.hpp"
#include "run_files.hpp"

#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace nadyn_test;

// Refused: status 2, nothing on stdout, one line on stderr holding `expected`, no file in
// the run's directory.
void check_refused(const std::string& name, const std::vector<std::string>& extra,
                   const std::string& expected) {
    const std::string dir = scratch_dir("layernorm/refused_" + name);
    std::vector<std::string> args{"simulate", "--out", dir + "/run/x.h5", "--quiet", "--T", "0.1"};
    fs::create_directories(dir + "/run");
    args.insert(args.end(), extra.begin(), extra.end());
    const run_result r = run_nadyn(args);
    INFO("stderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.rfind("nadyn: ", 0) == 0);
    CHECK(contains(r.err, expected));
    CHECK(list_files(dir + "/run").empty());
}

// Every frame of every series, bitwise (tests/run_files.hpp), of runs of a few frames at least.
void check_same_frames(const std::string& a_path, const std::string& b_path) {
    REQUIRE(nadyn::trajectory_reader(a_path).frame_count() > 2);
    nadyn::testing::check_same_frames(a_path, b_path);
}

void run_ok(const std::vector<std::string>& args) {
    const run_result r = run_nadyn(args);
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
}

} // namespace

TEST_CASE("layernorm refusals: exit 2, one line naming the problem, no output file") {
    const std::string in = scratch_dir("layernorm/inputs");
    write_h5(in + "/short_gain.h5", {{"gain", {4}, {1.0, 1.0, 1.0, 1.0}}});
    write_h5(in + "/neither.h5", {{"scale", {5}, {1.0, 1.0, 1.0, 1.0, 1.0}}});
    write_h5(in + "/nan_bias.h5", {{"bias", {5}, {0.0, 0.1, NAN, 0.0, 0.0}}});
    // Row 2 constant (but not zero): it has no direction in the hyperplane sum_c x_c = 0.
    std::vector<double> rows(4 * 5);
    for (std::size_t i = 0; i < rows.size(); ++i)
        rows[i] = std::sin(1.0 + static_cast<double>(i));
    for (std::size_t c = 0; c < 5; ++c)
        rows[2 * 5 + c] = 0.3;
    write_h5(in + "/constant_row.h5", {{"theta0", {4, 5}, rows}});

    check_refused("no_norm", {"--norm", "layernorm", "--scheme", "no-norm"},
                  "scheme 'no-norm' cannot run with norm layernorm");
    check_refused("helmert",
                  {"--norm", "layernorm", "--init", "orthogonal", "--n", "5", "--d", "5"},
                  "needs n <= d - 1");
    check_refused("small_d", {"--norm", "layernorm", "--d", "2"}, "norm layernorm needs d >= 3");
    check_refused("unknown", {"--norm", "batchnorm"},
                  "unknown norm 'batchnorm'; valid choices: rms, layernorm");
    check_refused("ln_without_norm", {"--ln-params", "file:" + in + "/short_gain.h5"},
                  "ln-params needs --norm layernorm");
    check_refused("ln_bad_text", {"--norm", "layernorm", "--ln-params", "gain.h5"},
                  "valid choices: none, file:PATH");
    check_refused(
        "ln_short",
        {"--norm", "layernorm", "--d", "5", "--ln-params", "file:" + in + "/short_gain.h5"},
        "dataset 'gain' in ln-params file");
    check_refused("ln_neither",
                  {"--norm", "layernorm", "--d", "5", "--ln-params", "file:" + in + "/neither.h5"},
                  "has neither dataset 'gain' nor 'bias'");
    check_refused("ln_nan",
                  {"--norm", "layernorm", "--d", "5", "--ln-params", "file:" + in + "/nan_bias.h5"},
                  "holds a non-finite value");
    check_refused("ln_missing",
                  {"--norm", "layernorm", "--d", "5", "--ln-params", "file:" + in + "/absent.h5"},
                  "absent.h5");
    check_refused("constant_row",
                  {"--norm", "layernorm", "--n", "4", "--d", "5", "--init",
                   "file:" + in + "/constant_row.h5"},
                  "row 2 of 'theta0'");
}

TEST_CASE("--norm rms is bitwise the run without the flag") {
    const std::string dir = scratch_dir("layernorm/rms");
    for (const char* integrator : {"rk4", "layers"}) {
        CAPTURE(integrator);
        const std::vector<std::string> common{
            "simulate", "--quiet", "--scheme", "pre-ln",    "--n",    "12",           "--d",
            "4",        "--T",     "1",        "--weights", "random", "--integrator", integrator};
        const std::string plain = dir + "/plain_" + integrator + ".h5";
        const std::string rms = dir + "/rms_" + integrator + ".h5";
        std::vector<std::string> a = common, b = common;
        a.insert(a.end(), {"--out", plain, "--force"});
        b.insert(b.end(), {"--out", rms, "--force", "--norm", "rms"});
        run_ok(a);
        run_ok(b);
        check_same_frames(plain, rms);
        const nadyn::trajectory_reader file(plain);
        CHECK(file.parameters().text("norm") == "rms");
        CHECK(file.parameters().text("ln_params") == "none");
        CHECK(!h5_has_path(plain, "parameters/gain"));
    }
}

TEST_CASE("a layernorm run with --ln-params records gain and bias; rerun and resume are bitwise") {
    const std::string dir = scratch_dir("layernorm/rerun");
    const std::size_t d = 5;
    std::vector<double> gain, bias;
    for (std::size_t c = 0; c < d; ++c) {
        gain.push_back(0.7 + 0.1 * static_cast<double>(c));
        bias.push_back(0.05 * static_cast<double>(c) - 0.1);
    }
    const std::string ln = dir + "/ln.h5";
    write_h5(ln, {{"gain", {d}, gain}, {"bias", {1, d}, bias}});
    const std::vector<std::string> common{
        "simulate",  "--quiet", "--norm", "layernorm", "--ln-params", "file:" + ln,
        "--scheme",  "peri-ln", "--n",    "10",        "--d",         "5",
        "--weights", "random",  "--dt",   "0.05",      "--every",     "4"};
    const std::string original = dir + "/original.h5", half = dir + "/half.h5";
    std::vector<std::string> full_args = common, half_args = common;
    full_args.insert(full_args.end(), {"--T", "2", "--out", original, "--force"});
    half_args.insert(half_args.end(), {"--T", "1", "--out", half, "--force"});
    run_ok(full_args);
    run_ok(half_args);
    {
        const nadyn::trajectory_reader file(original);
        CHECK(file.parameters().text("norm") == "layernorm");
        CHECK(file.parameters().text("ln_params") == "file:" + ln);
        CHECK(file.parameter_matrix("gain") == gain);
        CHECK(file.parameter_matrix("bias") == bias);
        // Every frame on the centred sphere.
        for (std::size_t f = 0; f < file.frame_count(); ++f) {
            const auto theta = file.positions(f);
            for (std::size_t k = 0; k < 10; ++k) {
                double sum = 0.0, norm2 = 0.0;
                for (std::size_t c = 0; c < d; ++c) {
                    sum += theta[k * d + c];
                    norm2 += theta[k * d + c] * theta[k * d + c];
                }
                CHECK(std::abs(sum) <= 1e-12);
                CHECK(std::abs(std::sqrt(norm2) - 1.0) <= 1e-12);
            }
        }
    }
    // The file alone: the gain and bias file is gone.
    fs::remove(ln);
    const std::string again = dir + "/again.h5";
    fs::remove(again);
    run_ok({"rerun", original, "--out", again});
    check_same_frames(original, again);
    // A run to T = 1 resumed to T = 2 is the run to T = 2.
    run_ok({"simulate", "--resume", half, "--T", "2", "--quiet"});
    check_same_frames(original, half);
    // The gain and bias matter: the run without them differs.
    const std::string plain = dir + "/plain.h5";
    run_ok({"simulate", "--quiet", "--norm", "layernorm", "--scheme", "peri-ln", "--n",
            "10",       "--d",     "5",      "--weights", "random",   "--dt",    "0.05",
            "--every",  "4",       "--T",    "2",         "--out",    plain,     "--force"});
    const nadyn::trajectory_reader a(original), b(plain);
    CHECK(a.positions(a.frame_count() - 1) != b.positions(b.frame_count() - 1));
}

TEST_CASE("layernorm init files are centred, then normalised, on reading") {
    const std::string dir = scratch_dir("layernorm/init_file");
    const std::size_t n = 3, d = 4;
    const std::vector<double> rows{1.0, 2.0, 3.0, 4.0, -1.0, 0.0, 0.0, 5.0, 1e200, 0.0, 0.0, 0.0};
    write_h5(dir + "/theta0.h5", {{"theta0", {n, d}, rows}});
    const std::string out = dir + "/run.h5";
    run_ok({"simulate", "--quiet", "--norm", "layernorm", "--n", "3", "--d", "4", "--T", "0.1",
            "--init", "file:" + dir + "/theta0.h5", "--out", out, "--force"});
    const nadyn::trajectory_reader file(out);
    const auto theta0 = file.parameter_matrix("theta0");
    REQUIRE(theta0);
    for (std::size_t k = 0; k < n; ++k) {
        // The row scaled by its largest entry (1e200 squared would overflow), centred,
        // normalised.
        double largest = 0.0, mean = 0.0, norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c)
            largest = std::max(largest, std::abs(rows[k * d + c]));
        std::vector<double> expected(d);
        for (std::size_t c = 0; c < d; ++c)
            mean += rows[k * d + c] / largest / static_cast<double>(d);
        for (std::size_t c = 0; c < d; ++c) {
            expected[c] = rows[k * d + c] / largest - mean;
            norm2 += expected[c] * expected[c];
        }
        for (std::size_t c = 0; c < d; ++c)
            CHECK((*theta0)[k * d + c] ==
                  doctest::Approx(expected[c] / std::sqrt(norm2)).epsilon(1e-14));
    }
}
