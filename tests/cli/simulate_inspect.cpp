// Good runs of the nadyn command line: what `nadyn simulate` writes for every scheme,
// integrator, initial condition and weights choice, what `nadyn inspect` prints, that
// other HDF5 tools read the files, and that SIGINT/SIGTERM leave a complete, readable file.
#include "cli_support.hpp"

#include "nadyn/files/h5md.hpp"
#include "nadyn/model/initial.hpp"
#include "nadyn/model/scheme.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace nadyn_test;

// The library's list of schemes (include/nadyn/model/schemes/list.hpp).
const std::vector<std::string> all_schemes = [] {
    std::vector<std::string> names;
    for (const auto& row : nadyn::scheme_table)
        names.emplace_back(row.name);
    return names;
}();
const std::vector<std::string> all_integrators{"rk4", "dopri5", "euler", "layers"};

// The tiny run of most cases: 6 tokens on S^2, T = 0.5 in steps of 0.05.
const std::vector<std::string> tiny{"--n", "6",    "--d",  "3",      "--T",
                                    "0.5", "--dt", "0.05", "--quiet"};
constexpr double tiny_T = 0.5, tiny_dt = 0.05;

// Fixed steps of a horizon: T/dt, for the T and dt of these tests an integer up to rounding.
std::int64_t steps_of(double T, double dt) {
    return std::llround(T / dt);
}

// Frames of a fixed-step run writing every `every` steps: step 0, every multiple of
// `every`, and the last step when it is not a multiple.
std::size_t expected_frames(std::int64_t steps, std::int64_t every) {
    return static_cast<std::size_t>(steps / every + 1 + (steps % every != 0 ? 1 : 0));
}

std::string text_param(const nadyn::trajectory_reader& file, const std::string& name) {
    const auto value = file.parameters().text(name);
    INFO("parameter " << name);
    REQUIRE(value.has_value());
    return *value;
}

std::int64_t integer_param(const nadyn::trajectory_reader& file, const std::string& name) {
    const auto value = file.parameters().integer(name);
    INFO("parameter " << name);
    REQUIRE(value.has_value());
    return *value;
}

double number_param(const nadyn::trajectory_reader& file, const std::string& name) {
    const auto value = file.parameters().number(name);
    INFO("parameter " << name);
    REQUIRE(value.has_value());
    return *value;
}

// Runs `nadyn simulate ARGS --out PATH` and requires a clean success.
void simulate_ok(const std::string& out, std::vector<std::string> args) {
    args.insert(args.begin(), "simulate");
    args.insert(args.end(), {"--out", out});
    std::string shown;
    for (const auto& a : args)
        shown += " " + a;
    INFO("nadyn" << shown);
    const run_result r = run_nadyn(args);
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    // --quiet: no progress bar; at most the step-doubling warning, which these deliberately
    // coarse steps (dt = 0.05) earn for some schemes and integrators.
    for (const auto& line : split_lines(r.err))
        CHECK(line.rfind("nadyn: warning: the estimated local error of one ", 0) == 0);
    CHECK(contains(r.out, "complete: "));
    CHECK(contains(r.out, "wrote " + out));
    REQUIRE(fs::exists(out));
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
}

// The summary table of `nadyn inspect`: the lines after the header row starting "time".
std::vector<std::string> table_rows(const std::string& out) {
    const auto lines = split_lines(out);
    std::vector<std::string> rows;
    bool in_table = false;
    for (const auto& line : lines) {
        if (in_table && !line.empty()) rows.push_back(line);
        const auto first = line.find_first_not_of(' ');
        if (first != std::string::npos && line.compare(first, 5, "time ") == 0) in_table = true;
    }
    return rows;
}

std::vector<std::string> split_commas(const std::string& line) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = line.find(',', start);
        fields.push_back(line.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return fields;
}

// Whether python3 with h5py is there to cross-check the files.
bool have_h5py() {
    if (!executable_exists("/usr/bin/python3")) return false;
    return run_program("/usr/bin/python3", {"-c", "import h5py"}).status == 0;
}

} // namespace

TEST_CASE("a run without arguments writes a descriptively named file here") {
    const std::string dir = scratch_dir("simulate_inspect/default");
    const run_result first = run_nadyn({"simulate", "--quiet"}, in_dir(dir));
    INFO("stderr: " << first.err);
    REQUIRE(first.status == 0);
    CHECK(first.err.empty());
    const auto files = list_files(dir);
    REQUIRE(files.size() == 1);
    const std::string name = files.front();
    CHECK(fs::path(name).extension() == ".h5");
    CHECK(contains(name, "peri-ln"));
    CHECK(contains(name, "n64"));
    CHECK(contains(name, "d3"));
    // The summary names the file it wrote.
    CHECK(contains(first.out, "complete: 101 frames"));
    CHECK(contains(first.out, "wrote " + name));
    CHECK(line_count(first.out) == 2);

    {
        nadyn::trajectory_reader file(dir + "/" + name);
        CHECK(file.status() == "complete");
        CHECK(file.n() == 64);
        CHECK(file.d() == 3);
        CHECK(file.has_positions());
        // T = 20, dt = 0.01: 2000 steps, a frame every 20 for about 100 frames.
        CHECK(file.frame_count() == 101);
        CHECK(text_param(file, "scheme") == "peri-ln");
        CHECK(text_param(file, "integrator") == "rk4");
        CHECK(text_param(file, "init") == "uniform");
        CHECK(text_param(file, "weights") == "identity");
        CHECK(text_param(file, "positions") == "all");
        CHECK(integer_param(file, "n") == 64);
        CHECK(integer_param(file, "d") == 3);
        CHECK(integer_param(file, "every") == 20);
        CHECK(integer_param(file, "seed") == 1);
        CHECK(integer_param(file, "causal") == 0);
        CHECK(integer_param(file, "frames") == 101);
        CHECK(integer_param(file, "accepted_steps") == 2000);
        CHECK(number_param(file, "beta") == 4.0);
        CHECK(number_param(file, "T") == 20.0);
        CHECK(number_param(file, "dt") == 0.01);
        CHECK(number_param(file, "t_switch") == 5.0); // 0.25 T
        const auto times = file.times();
        CHECK(times.front() == 0.0);
        CHECK(times.back() == doctest::Approx(20.0).epsilon(1e-12));
        CHECK(contains(text_param(file, "command_line"), "simulate --quiet"));
    }

    // A second run in the same second must not overwrite the first.
    const run_result second = run_nadyn({"simulate", "--quiet"}, in_dir(dir));
    REQUIRE(second.status == 0);
    const auto both = list_files(dir);
    REQUIRE(both.size() == 2);
    CHECK(both[0] != both[1]);
    for (const auto& f : both) {
        CHECK(contains(f, "peri-ln"));
        CHECK(contains(second.out, f) == (f != name));
    }

    // inspect prints the parameters and a table of about 20 rows.
    {
        const std::string path = dir + "/" + name;
        const run_result r = run_nadyn({"inspect", path});
        INFO("stdout: " << r.out);
        REQUIRE(r.status == 0);
        CHECK(r.err.empty());
        CHECK(contains(r.out, "status      complete"));
        CHECK(contains(r.out, "frames      101"));
        CHECK(contains(r.out, "n = 64, d = 3"));
        for (const char* parameter : {"scheme", "beta", "integrator", "dt", "init", "weights",
                                      "seed", "git_commit", "rhs_evaluations"})
            CHECK(contains(r.out, std::string("\n  ") + parameter + " "));
        CHECK(contains(r.out, "peri-ln"));
        const auto rows = table_rows(r.out);
        // 101 frames, 20 rows: evenly spaced frames, first (t = 0) and last (t = 20).
        REQUIRE(rows.size() == 20);
        CHECK(std::stod(rows.front()) == 0.0);
        CHECK(std::stod(rows.back()) == doctest::Approx(20.0));

        const run_result five = run_nadyn({"inspect", path, "--rows", "5"});
        REQUIRE(five.status == 0);
        CHECK(table_rows(five.out).size() == 5);

        const run_result csv = run_nadyn({"inspect", path, "--csv"});
        REQUIRE(csv.status == 0);
        const auto lines = split_lines(csv.out);
        REQUIRE(lines.size() == 1 + 101);
        CHECK(lines.front().rfind("step,time,mean_cos,", 0) == 0);
    }
}

TEST_CASE("every scheme runs with every integrator") {
    const std::string dir = scratch_dir("simulate_inspect/matrix");
    const std::size_t frames = expected_frames(steps_of(tiny_T, tiny_dt), 1);
    for (const auto& scheme : all_schemes) {
        for (const auto& integrator : all_integrators) {
            const std::string out = dir + "/" + scheme + "_" + integrator + ".h5";
            simulate_ok(out, with(tiny, {"--scheme", scheme, "--integrator", integrator}));
            nadyn::trajectory_reader file(out);
            INFO(scheme << " with " << integrator);
            CHECK(file.status() == "complete");
            CHECK(text_param(file, "scheme") == scheme);
            CHECK(text_param(file, "integrator") == integrator);
            CHECK(file.n() == 6);
            CHECK(file.d() == 3);
            // 10 steps, no --every: about 100 frames means every step here (dopri5: every dt).
            CHECK(file.frame_count() == frames);
            const auto times = file.times();
            REQUIRE(!times.empty());
            CHECK(times.front() == 0.0);
            CHECK(times.back() == doctest::Approx(tiny_T).epsilon(1e-12));
            // Directions stay on the sphere in every scheme.
            const auto last = file.positions(file.frame_count() - 1);
            for (std::size_t k = 0; k < 6; ++k) {
                const double norm =
                    std::sqrt(last[3 * k] * last[3 * k] + last[3 * k + 1] * last[3 * k + 1] +
                              last[3 * k + 2] * last[3 * k + 2]);
                CHECK(norm == doctest::Approx(1.0).epsilon(1e-12));
            }
        }
    }
}

TEST_CASE("integers are read as plain decimal numbers") {
    // CLI11 alone reads "010" as octal 8; a leading zero is just a zero.
    const std::string dir = scratch_dir("simulate_inspect/decimal");
    const std::string out = dir + "/run.h5";
    simulate_ok(out, {"--n", "010", "--d", "03", "--T", "0.5", "--dt", "0.05", "--every", "05",
                      "--seed", "010", "--quiet"});
    nadyn::trajectory_reader file(out);
    CHECK(file.n() == 10);
    CHECK(file.d() == 3);
    CHECK(integer_param(file, "every") == 5);
    CHECK(integer_param(file, "seed") == 10);
    CHECK(file.frame_count() == 3);
}

TEST_CASE("each initial condition") {
    const std::string dir = scratch_dir("simulate_inspect/init");

    SUBCASE("uniform") {
        const std::string out = dir + "/uniform.h5";
        simulate_ok(out, with(tiny, {"--init", "uniform", "--r0", "2.5"}));
        nadyn::trajectory_reader file(out);
        CHECK(text_param(file, "init") == "uniform");
        CHECK(number_param(file, "r0") == 2.5);
        for (double r : file.magnitudes(0))
            CHECK(r == 2.5);
    }
    SUBCASE("orthogonal") {
        const std::string out = dir + "/orthogonal.h5";
        simulate_ok(out, {"--n", "4", "--d", "5", "--T", "0.5", "--dt", "0.05", "--quiet", "--init",
                          "orthogonal"});
        nadyn::trajectory_reader file(out);
        CHECK(text_param(file, "init") == "orthogonal");
        const auto theta = file.positions(0);
        REQUIRE(theta.size() == 20);
        for (std::size_t k = 0; k < 4; ++k)
            for (std::size_t a = 0; a < 5; ++a)
                CHECK(theta[k * 5 + a] == (a == k ? 1.0 : 0.0));
    }
    SUBCASE("cap") {
        const std::string out = dir + "/cap.h5";
        simulate_ok(out, with(tiny, {"--init", "cap:0.1"}));
        nadyn::trajectory_reader file(out);
        const std::string init = text_param(file, "init");
        REQUIRE(init.rfind("cap:", 0) == 0);
        CHECK(std::stod(init.substr(4)) == 0.1);
        // Every pair lies within twice the cap radius of each other.
        const auto theta = file.positions(0);
        for (std::size_t k = 0; k < 6; ++k)
            for (std::size_t l = k + 1; l < 6; ++l) {
                double dot = 0.0;
                for (std::size_t a = 0; a < 3; ++a)
                    dot += theta[k * 3 + a] * theta[l * 3 + a];
                CHECK(dot >= std::cos(0.2) - 1e-12);
            }
    }
    SUBCASE("the density solver's starts, perturbed and vonmises") {
        // The file's first frame is the library's draw from the recorded seed, bit for bit:
        // the command line adds nothing to make_initial.
        for (const char* init : {"perturbed:3,0.5", "vonmises:2,20"}) {
            INFO(init);
            const std::string out = dir + "/" + std::string(init).substr(0, 5) + ".h5";
            simulate_ok(out, with(tiny, {"--init", init, "--seed", "8"}));
            nadyn::trajectory_reader file(out);
            CHECK(text_param(file, "init") == init);
            const auto theta = file.positions(0);
            const nadyn::initial_state expected =
                nadyn::make_initial(nadyn::initial_spec::parse(init), 6, 3, 8, 1.0);
            CHECK(theta == expected.theta);
        }
    }
    SUBCASE("file, with r0") {
        // Rows of assorted lengths (the run normalises them) and distinct magnitudes.
        const std::vector<double> theta0{3, 0, 0, 0,  2, 0,  0,    0, 0.5,
                                         1, 1, 1, -1, 2, -3, 1e-3, 0, 2e-3};
        const std::vector<double> r0{0.5, 1.0, 1.5, 2.0, 2.5, 3.0};
        const std::string init = dir + "/start.h5";
        write_h5(init, {{"theta0", {6, 3}, theta0}, {"r0", {6}, r0}});
        const std::string out = dir + "/from_file.h5";
        simulate_ok(out, with(tiny, {"--init", "file:" + init}));

        nadyn::trajectory_reader file(out);
        CHECK(text_param(file, "init") == "file:" + init);
        const auto start = file.positions(0);
        REQUIRE(start.size() == 18);
        for (std::size_t k = 0; k < 6; ++k) {
            double norm2 = 0.0;
            for (std::size_t a = 0; a < 3; ++a)
                norm2 += theta0[k * 3 + a] * theta0[k * 3 + a];
            for (std::size_t a = 0; a < 3; ++a) {
                INFO("token " << k << " component " << a);
                CHECK(std::abs(start[k * 3 + a] - theta0[k * 3 + a] / std::sqrt(norm2)) <= 1e-15);
            }
        }
        CHECK(file.magnitudes(0) == r0);
        // The normalised start and the magnitudes are recorded with the run.
        std::size_t rows = 0, cols = 0;
        const auto recorded = file.parameter_matrix("theta0", &rows, &cols);
        REQUIRE(recorded.has_value());
        CHECK(rows == 6);
        CHECK(cols == 3);
        CHECK(*recorded == start);
        const auto r_initial = file.parameter_matrix("r_initial");
        REQUIRE(r_initial.has_value());
        CHECK(*r_initial == r0);
    }
    SUBCASE("file, without r0: magnitudes from --r0") {
        const std::string init = dir + "/directions_only.h5";
        write_h5(init,
                 {{"theta0", {6, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1}}});
        const std::string out = dir + "/directions_only_run.h5";
        simulate_ok(out, with(tiny, {"--init", "file:" + init, "--r0", "1.75"}));
        nadyn::trajectory_reader file(out);
        for (double r : file.magnitudes(0))
            CHECK(r == 1.75);
    }
}

TEST_CASE("each kind of weights") {
    const std::string dir = scratch_dir("simulate_inspect/weights");

    SUBCASE("identity") {
        const std::string out = dir + "/identity.h5";
        simulate_ok(out, with(tiny, {"--weights", "identity"}));
        nadyn::trajectory_reader file(out);
        CHECK(text_param(file, "weights") == "identity");
        CHECK(!file.parameter_matrix("Q").has_value());
    }
    SUBCASE("random, reproducible from the seed") {
        const std::string a = dir + "/random_a.h5", b = dir + "/random_b.h5",
                          c = dir + "/random_c.h5";
        simulate_ok(a, with(tiny, {"--weights", "random", "--seed", "7"}));
        simulate_ok(b, with(tiny, {"--weights", "random", "--seed", "7"}));
        simulate_ok(c, with(tiny, {"--weights", "random", "--seed", "8"}));
        nadyn::trajectory_reader fa(a), fb(b), fc(c);
        CHECK(text_param(fa, "weights") == "random");
        CHECK(integer_param(fa, "seed") == 7);
        for (const char* name : {"Q", "K", "V"}) {
            std::size_t rows = 0, cols = 0;
            const auto m = fa.parameter_matrix(name, &rows, &cols);
            REQUIRE(m.has_value());
            CHECK(rows == 3);
            CHECK(cols == 3);
            CHECK(fb.parameter_matrix(name) == m);
            CHECK(fc.parameter_matrix(name) != m);
        }
        // Same inputs, same trajectory, bit for bit.
        CHECK(fa.observable("mean_cos") == fb.observable("mean_cos"));
        CHECK(fa.positions(fa.frame_count() - 1) == fb.positions(fb.frame_count() - 1));
    }
    SUBCASE("random-per-layer with layers") {
        const std::string out = dir + "/per_layer.h5";
        simulate_ok(out, with(tiny, {"--weights", "random-per-layer", "--integrator", "layers"}));
        nadyn::trajectory_reader file(out);
        CHECK(file.status() == "complete");
        CHECK(text_param(file, "weights") == "random-per-layer");
        CHECK(text_param(file, "integrator") == "layers");
        CHECK(file.frame_count() == expected_frames(steps_of(tiny_T, tiny_dt), 1));
    }
    SUBCASE("file") {
        const std::vector<double> q{1, 0.5, 0, 0, 1, 0.25, 0.1, 0, 1};
        const std::vector<double> k{0.9, 0, 0, 0.2, 1.1, 0, 0, 0.3, 1};
        const std::string weights = dir + "/qk.h5";
        write_h5(weights, {{"Q", {3, 3}, q}, {"K", {3, 3}, k}}); // V absent: the identity
        const std::string out = dir + "/from_file.h5";
        simulate_ok(out, with(tiny, {"--weights", "file:" + weights}));
        nadyn::trajectory_reader file(out);
        CHECK(text_param(file, "weights") == "file:" + weights);
        CHECK(file.parameter_matrix("Q") == q);
        CHECK(file.parameter_matrix("K") == k);
        CHECK(!file.parameter_matrix("V").has_value());
        CHECK(file.status() == "complete");
    }
}

TEST_CASE("output options: positions none, every, causal") {
    const std::string dir = scratch_dir("simulate_inspect/options");

    SUBCASE("--positions none writes no position group") {
        const std::string out = dir + "/no_positions.h5";
        simulate_ok(out, with(tiny, {"--positions", "none"}));
        CHECK(!h5_has_path(out, "particles/tokens/position"));
        CHECK(h5_has_path(out, "particles/tokens/magnitude/value"));
        CHECK(h5_has_path(out, "observables/mean_cos/value"));
        nadyn::trajectory_reader file(out);
        CHECK(!file.has_positions());
        CHECK(text_param(file, "positions") == "none");
        CHECK(file.frame_count() == expected_frames(steps_of(tiny_T, tiny_dt), 1));
        CHECK(file.magnitudes(0).size() == 6);
        const run_result r = run_nadyn({"inspect", out});
        REQUIRE(r.status == 0);
        CHECK(contains(r.out, "(positions not stored)"));
    }
    SUBCASE("--every K: step 0, every K-th step and the last") {
        const std::int64_t steps = steps_of(tiny_T, tiny_dt);
        for (const auto& integrator : all_integrators) {
            for (std::int64_t every : {3, 5}) {
                INFO(integrator << " every " << every);
                const std::string out =
                    dir + "/every" + std::to_string(every) + "_" + integrator + ".h5";
                simulate_ok(out, with(tiny, {"--integrator", integrator, "--every",
                                             std::to_string(every)}));
                nadyn::trajectory_reader file(out);
                CHECK(integer_param(file, "every") == every);
                const std::size_t frames = expected_frames(steps, every);
                REQUIRE(file.frame_count() == frames);
                // Output times are multiples of every * dt, then T (dopri5 too: it ends a
                // step on each output time; its step column counts adaptive steps).
                const auto times = file.times();
                for (std::size_t f = 0; f + 1 < frames; ++f)
                    CHECK(times[f] == doctest::Approx(static_cast<double>(f) *
                                                      static_cast<double>(every) * tiny_dt)
                                          .epsilon(1e-12));
                CHECK(times.back() == doctest::Approx(tiny_T).epsilon(1e-12));
                if (integrator != "dopri5") {
                    const auto step_column = file.steps();
                    for (std::size_t f = 0; f + 1 < frames; ++f)
                        CHECK(step_column[f] == static_cast<std::int64_t>(f) * every);
                    CHECK(step_column.back() == steps);
                }
            }
        }
    }
    SUBCASE("--causal is recorded and changes the dynamics") {
        const std::string causal = dir + "/causal.h5", full = dir + "/full.h5";
        simulate_ok(causal, with(tiny, {"--causal"}));
        simulate_ok(full, tiny);
        nadyn::trajectory_reader with_mask(causal), without(full);
        CHECK(integer_param(with_mask, "causal") == 1);
        CHECK(integer_param(without, "causal") == 0);
        CHECK(with_mask.positions(0) == without.positions(0)); // same seed, same start
        CHECK(with_mask.observable("mean_cos").back() != without.observable("mean_cos").back());
    }
    SUBCASE("--precision float is recorded, rerun and resumed in float") {
        const std::string single = dir + "/float.h5", full = dir + "/double.h5";
        simulate_ok(single, with(tiny, {"--precision", "float"}));
        simulate_ok(full, tiny);
        nadyn::trajectory_reader in_float(single), in_double(full);
        CHECK(text_param(in_float, "precision") == "float");
        CHECK(text_param(in_double, "precision") == "double");
        // A's float error (about beta * 1e-7, tests/unit/attention_float.cpp) moves the
        // trajectory by far less than 1e-5, but it moves it.
        const double a = in_float.observable("mean_cos").back();
        const double b = in_double.observable("mean_cos").back();
        CHECK(a != b);
        CHECK(std::abs(a - b) < 1e-5);
        // rerun reads the precision from the file: bitwise the same trajectory.
        const std::string again = dir + "/float_rerun.h5";
        REQUIRE(run_nadyn({"rerun", single, "--out", again}).status == 0);
        nadyn::trajectory_reader rerun(again);
        CHECK(rerun.positions(rerun.frame_count() - 1) ==
              in_float.positions(in_float.frame_count() - 1));
        // --resume keeps it; a different one is refused by name.
        const run_result refused =
            run_nadyn({"simulate", "--resume", single, "--precision", "double", "--quiet"});
        CHECK(refused.status == 2);
        CHECK(contains(refused.err, "precision"));
    }
}

TEST_CASE("other HDF5 readers accept the files") {
    const std::string dir = scratch_dir("simulate_inspect/tools");
    const std::string out = dir + "/run.h5";
    simulate_ok(out, with(tiny, {"--every", "2"}));
    const std::size_t frames = expected_frames(steps_of(tiny_T, tiny_dt), 2);
    REQUIRE(frames == 6);

    if (executable_exists("/usr/bin/h5dump")) {
        const run_result r = run_program("/usr/bin/h5dump", {"-H", out});
        INFO("stderr: " << r.err);
        CHECK(r.status == 0);
        CHECK(contains(r.out, "GROUP \"particles\""));
    } else {
        MESSAGE("skipped: /usr/bin/h5dump not installed");
    }

    if (have_h5py()) {
        const std::string script =
            "import sys, h5py\n"
            "f = h5py.File(sys.argv[1], 'r')\n"
            "assert f['particles/tokens/position/value'].shape == (6, 6, 3), "
            "f['particles/tokens/position/value'].shape\n"
            "assert f['particles/tokens/magnitude/value'].shape == (6, 6)\n"
            "assert f['observables/mean_cos/value'].shape == (6,)\n"
            "s = f.attrs['status']\n"
            "assert (s.decode() if isinstance(s, bytes) else s) == 'complete', s\n"
            "assert list(f['h5md'].attrs['version']) == [1, 1]\n";
        const run_result r = run_program("/usr/bin/python3", {"-c", script, out});
        INFO("stderr: " << r.err);
        CHECK(r.status == 0);
    } else {
        MESSAGE("skipped: /usr/bin/python3 with h5py not available");
    }
}

TEST_CASE("inspect --csv prints every frame exactly") {
    const std::string dir = scratch_dir("simulate_inspect/csv");
    const std::string out = dir + "/run.h5";
    simulate_ok(out, with(tiny, {"--every", "3"}));
    nadyn::trajectory_reader file(out);
    const std::size_t frames = file.frame_count();
    REQUIRE(frames == expected_frames(steps_of(tiny_T, tiny_dt), 3));

    const run_result r = run_nadyn({"inspect", out, "--csv"});
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    const auto lines = split_lines(r.out);
    REQUIRE(lines.size() == 1 + frames);
    const auto names = file.observable_names();
    std::string header = "step,time";
    for (const auto& name : names)
        header += "," + name;
    CHECK(lines.front() == header);
    CHECK(lines.front().rfind("step,time,mean_cos,gap,velocity,", 0) == 0);

    // %.17g round-trips: the CSV holds the file's values exactly.
    const auto steps = file.steps();
    const auto times = file.times();
    for (std::size_t f = 0; f < frames; ++f) {
        const auto fields = split_commas(lines[1 + f]);
        REQUIRE(fields.size() == 2 + names.size());
        CHECK(std::stoll(fields[0]) == steps[f]);
        CHECK(std::strtod(fields[1].c_str(), nullptr) == times[f]);
        for (std::size_t i = 0; i < names.size(); ++i) {
            const double printed = std::strtod(fields[2 + i].c_str(), nullptr);
            const double stored = file.observable(names[i])[f];
            CHECK(((std::isnan(printed) && std::isnan(stored)) || printed == stored));
        }
    }

    // The table of a short file shows every frame once.
    const run_result table = run_nadyn({"inspect", out});
    REQUIRE(table.status == 0);
    CHECK(table_rows(table.out).size() == frames);
}

namespace {

// Starts a long run, stops it with `sig` once it is under way, and checks that it exits
// 128 + sig (130 for SIGINT, 143 for SIGTERM, as a shell reports the signal) leaving a file
// marked interrupted that holds the frames written so far.
void check_stopped_by(int sig, const std::string& name) {
    const std::string dir = scratch_dir("simulate_inspect/" + name);
    const std::string out = dir + "/long.h5";
    child_process child(nadyn_path, {"simulate", "--n", "256", "--d", "16", "--T", "1000", "--dt",
                                     "0.01", "--out", out, "--quiet"});
    // The handlers are installed before the file is created, so once it exists a signal
    // is a request to stop; a second later the run is well into its steps.
    REQUIRE(wait_until([&] { return fs::exists(out); }, std::chrono::seconds(20)));
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    child.send_signal(sig);
    const run_result r = child.wait(std::chrono::seconds(30));
    INFO("stderr: " << r.err);
    INFO("stdout: " << r.out);
    CHECK(r.signal == 0); // handled, not killed
    CHECK(r.status == 128 + sig);
    CHECK(contains(r.out, "interrupted: "));
    CHECK(contains(r.out, "kept the frames in " + out));

    nadyn::trajectory_reader file(out);
    CHECK(file.status() == "interrupted");
    // Frame 0, and the state at the stop (written when the stop is seen).
    const std::size_t frames = file.frame_count();
    CHECK(frames >= 2);
    CHECK(integer_param(file, "frames") == static_cast<std::int64_t>(frames));
    const auto times = file.times();
    CHECK(times.front() == 0.0);
    CHECK(times.back() > 0.0);
    CHECK(times.back() < 1000.0);
    for (std::size_t f = 1; f < frames; ++f)
        CHECK(times[f] > times[f - 1]);
    CHECK(file.positions(frames - 1).size() == 256 * 16);

    const run_result inspect = run_nadyn({"inspect", out});
    CHECK(inspect.status == 0);
    CHECK(contains(inspect.out, "status      interrupted"));
    const run_result csv = run_nadyn({"inspect", out, "--csv"});
    CHECK(csv.status == 0);
    CHECK(split_lines(csv.out).size() == 1 + frames);
}

} // namespace

TEST_CASE("SIGINT stops a run and keeps a readable file") {
    check_stopped_by(SIGINT, "sigint");
}

TEST_CASE("SIGTERM stops a run and keeps a readable file") {
    check_stopped_by(SIGTERM, "sigterm");
}
