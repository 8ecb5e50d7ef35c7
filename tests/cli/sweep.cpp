// nadyn sweep: a point of a sweep is bitwise its single run, an interrupted and resumed
// sweep equals an uninterrupted one, and bad experiment files are refused with file, line
// and key.
#include "cli_support.hpp"

#include "files/hdf5.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

using namespace nadyn_test;

namespace {

const char* const small_experiment = R"([run]
n = 12
d = 4
T = 2
dt = 0.1
integrator = "euler"
weights = "random"

[sweep]
beta = [0.5, 3.0]
seed = { range = [1, 3] }
scheme = ["pre-ln", "peri-ln"]
)";

std::vector<double> read_doubles(const std::string& path, const std::string& dataset) {
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    const auto data = file.open_dataset(dataset);
    std::size_t count = 1;
    for (auto n : data.shape())
        count *= n;
    std::vector<double> out(count);
    data.read_all(H5T_NATIVE_DOUBLE, out.data());
    return out;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

} // namespace

TEST_CASE("a sweep point is bitwise the run nadyn simulate makes alone") {
    const std::string dir = scratch_dir("sweep/point");
    write_text(dir + "/exp.toml", small_experiment);
    const run_result sweep = run_nadyn({"sweep", "exp.toml", "--out", "s.h5"}, in_dir(dir));
    REQUIRE(sweep.status == 0);
    CHECK(contains(sweep.out, "12 runs complete"));
    // Run 7 in row-major order over (beta 2, seed 3, scheme 2): beta = 3, seed = 1, peri-ln.
    const run_result single = run_nadyn(
        {"simulate", "--n",          "12",      "--d",       "4",      "--T",    "2",   "--dt",
         "0.1",      "--integrator", "euler",   "--weights", "random", "--beta", "3.0", "--seed",
         "1",        "--scheme",     "peri-ln", "--out",     "one.h5", "--quiet"},
        in_dir(dir));
    REQUIRE(single.status == 0);
    const auto swept = read_doubles(dir + "/s.h5", "mean_cos");
    const auto alone = read_doubles(dir + "/one.h5", "observables/mean_cos/value");
    REQUIRE(swept.size() == 12 * alone.size());
    const std::vector<double> row(swept.begin() + 7 * long(alone.size()),
                                  swept.begin() + 8 * long(alone.size()));
    CHECK(same_bits(row, alone));
    const auto positions = read_doubles(dir + "/s.h5", "positions");
    const auto last = read_doubles(dir + "/one.h5", "particles/tokens/position/value");
    const std::vector<double> final_alone(last.end() - 12 * 4, last.end());
    const std::vector<double> final_swept(positions.begin() + 7 * 48, positions.begin() + 8 * 48);
    CHECK(same_bits(final_swept, final_alone));

    // rerun --point makes that run as a single-run file, bitwise.
    const run_result rerun =
        run_nadyn({"rerun", "s.h5", "--point", "7", "--out", "p7.h5"}, in_dir(dir));
    REQUIRE(rerun.status == 0);
    CHECK(contains(rerun.out, "beta=3 seed=1 scheme=peri-ln"));
    CHECK(same_bits(read_doubles(dir + "/p7.h5", "observables/mean_cos/value"), alone));

    const run_result inspect = run_nadyn({"inspect", "s.h5"}, in_dir(dir));
    CHECK(inspect.status == 0);
    CHECK(contains(inspect.out, "12 of 12 runs complete"));
    CHECK(contains(inspect.out, "axes: beta (2) seed (3) scheme (2), time (21)"));
    CHECK(contains(inspect.out, "beta=3 scheme=peri-ln"));
}

TEST_CASE("a stopped sweep, resumed, equals the uninterrupted sweep bitwise") {
    const std::string dir = scratch_dir("sweep/resume");
    const nadyn::experiment e = nadyn::experiment::parse(small_experiment, "exp.toml");
    nadyn::sweep_options whole;
    whole.jobs = 2;
    const auto full = nadyn::run_sweep(e, dir + "/full.h5", whole);
    CHECK(full.complete == 12);

    std::atomic<bool> stop{false};
    nadyn::sweep_options first;
    first.jobs = 2;
    first.stop = &stop;
    first.progress = [&](const nadyn::sweep_progress& p) {
        if (p.done >= 3) stop.store(true);
    };
    const auto part = nadyn::run_sweep(e, dir + "/part.h5", first);
    CHECK(part.complete >= 3);
    CHECK(part.complete < 12);
    const auto rest = nadyn::resume_sweep(dir + "/part.h5", whole);
    CHECK(rest.skipped == part.complete);
    CHECK(rest.complete == 12 - part.complete);
    for (const char* name : {"mean_cos", "velocity", "clusters", "positions", "magnitudes", "time",
                             "beta", "seed", "frames", "rhs_evaluations", "status"})
        CHECK_MESSAGE(
            same_bits(read_doubles(dir + "/part.h5", name), read_doubles(dir + "/full.h5", name)),
            name);
}

TEST_CASE("SIGINT stops nadyn sweep with status 130 and --resume finishes it") {
    const std::string dir = scratch_dir("sweep/sigint");
    write_text(dir + "/long.toml", R"([run]
n = 64
d = 8
T = 10
dt = 0.01
[sweep]
seed = { range = [1, 40] }
)");
    child_process sweep(nadyn_path, {"sweep", "long.toml", "--out", "long.h5", "--quiet"},
                        in_dir(dir));
    REQUIRE(
        wait_until([&] { return fs::exists(dir + "/long.h5"); }, std::chrono::milliseconds(20000)));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    sweep.send_signal(SIGINT);
    const run_result stopped = sweep.wait();
    CHECK(stopped.status == 130);
    CHECK(contains(stopped.out, "interrupted"));
    const run_result resumed = run_nadyn({"sweep", "--resume", "long.h5", "--quiet"}, in_dir(dir));
    CHECK(resumed.status == 0);
    const run_result inspect = run_nadyn({"inspect", "long.h5"}, in_dir(dir));
    CHECK(contains(inspect.out, "complete, 40 of 40 runs complete"));
}

TEST_CASE("the density solver's starts are values of run.init and of an init axis") {
    // They parse through initial_spec::parse like every init, so an experiment file takes
    // them as a fixed start and as an axis, and each point records its own.
    const std::string dir = scratch_dir("sweep/density_starts");
    write_text(dir + "/starts.toml", "[run]\nn = 6\nd = 3\nT = 0.2\ndt = 0.1\n"
                                     "integrator = \"euler\"\ninit = \"vonmises:1,4\"\n"
                                     "[sweep]\ninit = [\"perturbed:3,0.5\", \"vonmises:2,20\"]\n");
    const run_result sweep = run_nadyn({"sweep", "starts.toml", "--out", "s.h5"}, in_dir(dir));
    REQUIRE(sweep.status == 0);
    CHECK(contains(sweep.out, "2 runs complete"));
    const run_result rerun =
        run_nadyn({"rerun", "s.h5", "--point", "1", "--out", "p1.h5"}, in_dir(dir));
    REQUIRE(rerun.status == 0);
    CHECK(contains(rerun.out, "init=vonmises:2,20"));
    write_text(dir + "/fixed.toml", "[run]\nn = 6\nd = 3\nT = 0.2\ndt = 0.1\n"
                                    "init = \"perturbed:2,-0.5\"\n[sweep]\nseed = [1, 2]\n");
    const run_result fixed = run_nadyn({"sweep", "fixed.toml", "--dry-run"}, in_dir(dir));
    CHECK(fixed.status == 0);
    CHECK(contains(fixed.out, "2 runs"));
}

TEST_CASE("bad experiment files are refused with file, line and key, and write nothing") {
    const std::string dir = scratch_dir("sweep/bad");
    struct bad_case {
        const char* text;
        std::vector<std::string> expected;
    };
    const std::vector<bad_case> cases = {
        {"[run]\nn = 8\nbet = 2\n", {"bad.toml:3:", "unknown key 'run.bet'", "valid keys: scheme"}},
        {"[run]\nn = \"many\"\n", {"bad.toml:2:", "run.n", "not a whole number"}},
        {"[run]\nscheme = \"pre\"\n", {"bad.toml:2:", "unknown scheme 'pre'", "peri-ln"}},
        {"[sweep]\nbeta = []\n", {"bad.toml:2:", "sweep.beta", "empty"}},
        {"[sweep]\nevery = [1, 2]\n", {"bad.toml:2:", "sweep.every", "cannot vary"}},
        {"[sweep]\nbeta = { linspace = [1, 2] }\n", {"bad.toml:2:", "[first, last, count]"}},
        {"[sweep]\nbeta = { lin = [1, 2, 3] }\n", {"bad.toml:2:", "unknown axis generator"}},
        {"[runs]\nn = 8\n", {"bad.toml:1:", "unknown table 'runs'", "run, sweep"}},
        {"[run]\nn = = 8\n", {"bad.toml:2:"}},
        {"[run]\nn = 1\nd = 2\ninit = \"orthogonal\"\n[sweep]\nn = [1, 3]\n",
         {"run 1 (n=3)", "orthogonal' needs n <= d"}},
        {"[run]\ninit = \"vonmises:0,1\"\n", {"bad.toml:2:", "'vonmises:0,1'", "vonmises:Q,KAPPA"}},
        {"[sweep]\ninit = [\"uniform\", \"perturbed:3,2\"]\n",
         {"bad.toml:2:", "'perturbed:3,2'", "-1 <= EPS <= 1"}},
    };
    for (const auto& c : cases) {
        INFO(c.text);
        write_text(dir + "/bad.toml", c.text);
        const run_result r = run_nadyn({"sweep", "bad.toml", "--out", "out.h5"}, in_dir(dir));
        CHECK(r.status == 2);
        CHECK(line_count(r.err) == 1);
        for (const auto& part : c.expected)
            CHECK_MESSAGE(contains(r.err, part), part);
        CHECK(!fs::exists(dir + "/out.h5"));
    }
    write_text(dir + "/ok.toml", "[run]\nn = 8\nT = 1\n[sweep]\nseed = [1, 2]\n");
    const run_result set = run_nadyn({"sweep", "ok.toml", "--set", "run.nn=3"}, in_dir(dir));
    CHECK(set.status == 2);
    CHECK(contains(set.err, "unknown key 'run.nn'"));
    const run_result dry = run_nadyn(
        {"sweep", "ok.toml", "--set", "sweep.seed.range=[1,5]", "--set", "run.beta=2", "--dry-run"},
        in_dir(dir));
    CHECK(dry.status == 0);
    CHECK(contains(dry.out, "ok.toml: 5 runs"));
    CHECK(contains(dry.out, "seed (5): 1, 2, 3, 4, 5"));
    CHECK(!fs::exists(dir + "/ok.h5"));
    // The estimate counts the algorithm the kernel runs (tests/unit/sweep_plan_flops.cpp): each
    // head its own V, 2 runs x 10 Euler steps x 8 heads x (4 n^2 d + 4 n d^2) at n = 64,
    // d = 16 = 5.24e-05 TFLOP (Q folded into K: one projection of the queries, not two).
    write_text(dir + "/heads.toml", "[run]\nn = 64\nd = 16\nheads = 8\nweights = \"gaussian\"\n"
                                    "T = 1\ndt = 0.1\nintegrator = \"euler\"\n"
                                    "[sweep]\nseed = [1, 2]\n");
    const run_result work = run_nadyn({"sweep", "heads.toml", "--dry-run"}, in_dir(dir));
    CHECK(work.status == 0);
    CHECK_MESSAGE(contains(work.out, "work: 5.24e-05 TFLOP of attention"), work.out);
    const run_result missing = run_nadyn({"sweep", "nothere.toml"}, in_dir(dir));
    CHECK(missing.status == 2);
    CHECK(contains(missing.err, "cannot read the experiment file 'nothere.toml'"));
}
