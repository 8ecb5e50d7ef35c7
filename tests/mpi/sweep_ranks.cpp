// mpirun -np P nadyn sweep: the file is the one-process sweep's, bitwise in every dataset but
// wall_time, for P = 1, 2, 3; SIGINT to mpirun (while the sweep runs) leaves a file that
// --resume completes into the uninterrupted file; bad input on P ranks is one message and exit
// status 2.
#include "mpi_support.hpp"

#include <doctest/doctest.h>

#include <hdf5.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <thread>

using namespace nadyn_test;

namespace {

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* names) {
    static_cast<std::vector<std::string>*>(names)->emplace_back(name);
    return 0;
}

// Every dataset of a (flat) sweep file as its bytes in the file's own type; variable-length
// strings (the parameters) as their text.

std::map<std::string, std::string> datasets_of(const std::string& path) {
    std::map<std::string, std::string> out;
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(file >= 0);
    std::vector<std::string> names;
    H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names);
    for (const auto& name : names) {
        const hid_t object = H5Oopen(file, name.c_str(), H5P_DEFAULT);
        if (H5Iget_type(object) == H5I_DATASET) {
            const hid_t space = H5Dget_space(object);
            const hid_t type = H5Dget_type(object);
            const auto count = static_cast<std::size_t>(H5Sget_simple_extent_npoints(space));
            std::string bytes;
            if (H5Tis_variable_str(type) > 0) {
                std::vector<char*> texts(count);
                H5Dread(object, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, texts.data());
                for (char* t : texts)
                    bytes += std::string(t ? t : "") + '\n';
                H5Dvlen_reclaim(type, space, H5P_DEFAULT, texts.data());
            } else {
                const hid_t native = H5Tget_native_type(type, H5T_DIR_ASCEND);
                bytes.resize(count * H5Tget_size(native));
                H5Dread(object, native, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
                H5Tclose(native);
            }
            out[name] = bytes;
            H5Tclose(type);
            H5Sclose(space);
        }
        H5Oclose(object);
    }
    H5Fclose(file);
    return out;
}

// Two sweep files hold the same data: every dataset bitwise, but the wall-clock times.
void check_same_sweep(const std::string& a, const std::string& b) {
    INFO(a << " vs " << b);
    auto x = datasets_of(a), y = datasets_of(b);
    REQUIRE(x.size() == y.size());
    REQUIRE(x.size() >= 20); // the observables, positions, status, parameters, ...
    for (const auto& [name, bytes] : x) {
        if (name == "wall_time") continue;
        REQUIRE_MESSAGE(y.count(name), name);
        CHECK_MESSAGE(bytes == y[name], name);
    }
}

// Runs that differ in cost (n, integrator) and in the frames they write: the file's every
// dataset, per-run time grids included, must come out of the ranks as out of one process.
const char* const mixed_experiment = R"([run]
d = 4
T = 1.5
dt = 0.1
weights = "random"
positions = "all"

[sweep]
n = [6, 16]
integrator = ["euler", "rk4", "dopri5"]
seed = { range = [1, 3] }
)";

// mpirun's arguments with no binding (each rank may use every core) and without the suite's
// OMP_NUM_THREADS=1, through env(1) so that none reaches the ranks: the ranks' defaults apply.
std::vector<std::string> unbound_ranks(int ranks, const std::vector<std::string>& args) {
    std::vector<std::string> all = {"-u",
                                    "OMP_NUM_THREADS",
                                    mpirun,
                                    "--allow-run-as-root",
                                    "--oversubscribe",
                                    "--bind-to",
                                    "none",
                                    "-np",
                                    std::to_string(ranks),
                                    nadyn_path};
    all.insert(all.end(), args.begin(), args.end());
    return all;
}

} // namespace

TEST_CASE("1, 2 and 3 ranks write the one-process sweep file, bitwise but wall_time") {
    const std::string dir = scratch_dir("mpi/ranks");
    write_text(dir + "/exp.toml", mixed_experiment);
    const run_result one = quiet_sweep(0, dir, "exp.toml", "one.h5");
    REQUIRE(one.status == 0);
    CHECK(contains(one.out, "18 runs complete"));
    for (int ranks : {1, 2, 3}) {
        INFO("ranks: " << ranks);
        const std::string out = ranks_file(ranks);
        const run_result r = quiet_sweep(ranks, dir, "exp.toml", out);
        INFO(r.out << r.err);
        REQUIRE(r.status == 0);
        CHECK(contains(r.out, "18 runs complete"));
        CHECK(lines_starting(r.out, "complete:") == 1); // one report, from rank 0
        if (ranks > 1) CHECK(contains(r.out, std::to_string(ranks) + " ranks computing"));
        CHECK(status_text(dir + "/" + out) == "complete");
        check_same_sweep(dir + "/one.h5", dir + "/" + out);
    }
}

TEST_CASE("SIGINT to mpirun keeps the finished runs; --resume over ranks completes the file "
          "bitwise") {
    const std::string dir = scratch_dir("mpi/sigint");
    write_text(dir + "/long.toml", R"([run]
n = 48
d = 8
T = 100
dt = 0.01
[sweep]
seed = { range = [1, 24] }
)");
    // How long 3 ranks take to finish their first run depends on the machine; interrupt after a
    // growing delay until the cut keeps some finished runs but not all of them.
    run_result stopped;
    // Too early keeps no finished run, too late finishes them all: move the delay up or down
    // until the cut lands in between.
    double delay_ms = 300;
    for (int attempt = 0;; ++attempt) {
        fs::remove(dir + "/cut.h5");
        child_process sweep(mpirun,
                            mpirun_args(3, {"sweep", "long.toml", "--out", "cut.h5", "--quiet"}),
                            in_dir(dir));
        REQUIRE(wait_until([&] { return fs::exists(dir + "/cut.h5"); },
                           std::chrono::milliseconds(30000)));
        std::this_thread::sleep_for(std::chrono::milliseconds(int(delay_ms)));
        sweep.send_signal(SIGINT);
        stopped = sweep.wait(std::chrono::minutes(5));
        INFO(stopped.out << stopped.err);
        REQUIRE(attempt < 12);
        if (contains(stopped.out, "interrupted: 0 runs complete"))
            delay_ms *= 1.6;
        else if (contains(stopped.out, "complete: 24 runs complete"))
            delay_ms *= 0.5;
        else
            break;
    }
    INFO(stopped.out << stopped.err);
    // Every rank exits 143 (mpirun passes SIGTERM on), but mpirun, signalled itself, exits 1
    // by Open MPI's rule.
    CHECK(stopped.status != 0);
    CHECK(contains(stopped.out, "interrupted: "));
    CHECK(status_text(dir + "/cut.h5") == "interrupted");
    const run_result inspect_cut = run_nadyn({"inspect", "cut.h5"}, in_dir(dir));
    CHECK(!contains(inspect_cut.out, "24 of 24 runs complete"));

    // The machine may be loaded (CI runs the portable build too): minutes, not the default 60 s.
    run_options slow = in_dir(dir);
    slow.timeout = std::chrono::minutes(5);
    const run_result resumed = run_ranks(2, {"sweep", "--resume", "cut.h5", "--quiet"}, slow);
    INFO(resumed.out << resumed.err);
    CHECK(resumed.status == 0);
    CHECK(!contains(resumed.out, " 0 already done")); // the finished runs were kept
    CHECK(status_text(dir + "/cut.h5") == "complete");
    const run_result whole =
        run_nadyn({"sweep", "long.toml", "--out", "whole.h5", "--quiet"}, slow);
    REQUIRE(whole.status == 0);
    check_same_sweep(dir + "/whole.h5", dir + "/cut.h5");
}

TEST_CASE("bad input on 3 ranks: one message, exit status 2, no file") {
    const std::string dir = scratch_dir("mpi/bad");
    write_text(dir + "/bad.toml", "[run]\nn = 8\nbet = 2\n");
    const run_result bad = run_ranks(3, {"sweep", "bad.toml", "--out", "out.h5"}, in_dir(dir));
    CHECK(bad.status == 2);
    CHECK(lines_starting(bad.err, "nadyn:") == 1);
    CHECK(contains(bad.err, "bad.toml:3:"));
    CHECK(contains(bad.err, "unknown key 'run.bet'"));
    CHECK(!fs::exists(dir + "/out.h5"));

    const run_result flag = run_ranks(3, {"sweep", "bad.toml", "--jobz", "2"}, in_dir(dir));
    CHECK(flag.status == 2);
    CHECK(lines_starting(flag.err, "nadyn:") == 1);
    CHECK(contains(flag.err, "--jobz"));

    write_text(dir + "/ok.toml", "[run]\nn = 8\nT = 1\n[sweep]\nseed = [1, 2]\n");
    const run_result exists = run_ranks(2, {"sweep", "ok.toml", "--out", "bad.toml"}, in_dir(dir));
    CHECK(exists.status == 2);
    CHECK(lines_starting(exists.err, "nadyn:") == 1);
    CHECK(contains(exists.err, "bad.toml"));

    // A bad --jobs on a resume: every rank refuses it before rank 0 opens the file (it was
    // met on rank 0 only, after the file was opened for writing, and aborted the job: exit 1).
    REQUIRE(quiet_sweep(0, dir, "ok.toml", "ok.h5").status == 0);
    const std::string before = datasets_of(dir + "/ok.h5")["status"];
    const run_result jobs =
        run_ranks(2, {"sweep", "--resume", "ok.h5", "--jobs", "5000"}, in_dir(dir));
    CHECK(jobs.status == 2);
    CHECK(lines_starting(jobs.err, "nadyn:") == 1);
    CHECK(contains(jobs.err, "jobs must be between 0 (chosen automatically) and 4096"));
    CHECK(status_text(dir + "/ok.h5") == "complete");
    CHECK(datasets_of(dir + "/ok.h5")["status"] == before);

    const run_result single = run_ranks(2, {"rerun", "run.h5", "--out", "s.h5"}, in_dir(dir));
    CHECK(single.status == 2);
    CHECK(lines_starting(single.err, "nadyn:") == 1);
    CHECK(contains(single.err, "only 'nadyn sweep' and 'nadyn simulate' run over MPI ranks"));
    CHECK(!fs::exists(dir + "/s.h5"));
}

// Issue 39 item 9: rank 0 computes runs too, so P ranks are P workers (before, rank 0 only
// handed out runs and wrote: with -np 2 one rank computed).
TEST_CASE("with 2 ranks both compute runs: the summary's runs per rank, the file unchanged") {
    const std::string dir = scratch_dir("mpi/every_rank");
    // Runs of some 30 ms each, one at a time per rank (mpirun binds each of 2 ranks to a core):
    // the worker asks for its first run while rank 0 computes its own, so both take a share.
    write_text(dir + "/exp.toml", R"([run]
n = 64
d = 8
T = 10
dt = 0.02
[sweep]
seed = { range = [1, 8] }
)");
    REQUIRE(quiet_sweep(0, dir, "exp.toml", "one.h5").status == 0);
    const run_result two = quiet_sweep(2, dir, "exp.toml", "two.h5");
    INFO(two.out << two.err);
    REQUIRE(two.status == 0);
    CHECK(contains(two.out, "complete: 8 runs complete, 0 interrupted, 0 failed"));
    CHECK(contains(two.out, "(2 ranks computing, runs per rank "));
    const std::vector<std::size_t> counts = runs_per_rank(two.out);
    REQUIRE(counts.size() == 2);
    CHECK(counts[0] >= 1); // rank 0 ran runs of its own
    CHECK(counts[1] >= 1);
    CHECK(std::accumulate(counts.begin(), counts.end(), std::size_t(0)) == 8);
    check_same_sweep(dir + "/one.h5", dir + "/two.h5");

    // A dry run says so.
    const run_result plan = run_ranks(2, {"sweep", "exp.toml", "--dry-run"}, in_dir(dir));
    CHECK(plan.status == 0);
    CHECK(contains(plan.out, "ranks: 2, every one computing (rank 0 also writes the file)"));
}

TEST_CASE("a run that fails on rank 0 is recorded as on a worker: exit 1, the same file") {
    const std::string dir = scratch_dir("mpi/failing_runs");
    // pre-ln with r0 = 1e-300: the speed 1/r overflows in the first step, in every run; rank 0
    // takes runs of its own, so some of the failures are its.
    write_text(dir + "/fail.toml", R"([run]
scheme = "pre-ln"
r0 = 1e-300
n = 8
d = 3
T = 1
dt = 0.1
[sweep]
seed = { range = [1, 6] }
)");
    REQUIRE(quiet_sweep(0, dir, "fail.toml", "one.h5").status == 1);
    const run_result two = quiet_sweep(2, dir, "fail.toml", "two.h5");
    INFO(two.out << two.err);
    CHECK(two.status == 1);
    CHECK(contains(two.out, "complete: 0 runs complete, 0 interrupted, 6 failed"));
    const std::vector<std::size_t> counts = runs_per_rank(two.out);
    REQUIRE(counts.size() == 2);
    CHECK(counts[0] >= 1);
    CHECK(lines_starting(two.err, "nadyn:") == 1);
    CHECK(contains(two.err, "nadyn: 6 runs failed; the first: "));
    CHECK(contains(two.err, "non-finite"));
    CHECK(status_text(dir + "/two.h5") == "failed");
    check_same_sweep(dir + "/one.h5", dir + "/two.h5");
}

// Ranks on one node share its cores: by default each takes cores / (ranks on the node) for
// its runs side by side and for the threads of a run, instead of every core each (which put
// 2 x 2 threads on 2 cores); --jobs and OMP_NUM_THREADS still win.
TEST_CASE("ranks on one node divide its cores: runs side by side and threads per run") {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    if (cores < 2) return; // one core: one thread per rank either way
    const std::string share = std::to_string(std::max(1, cores / 2));
    const std::string dir = scratch_dir("mpi/cores_per_rank");
    // n = 256, d = 64: 4 n^2 d = 2^24 attention flops, large enough to run one at a time with
    // the rank's threads inside the run; the threads each run used are in its parameters.
    write_text(dir + "/large.toml", R"([run]
n = 256
d = 64
T = 0.2
dt = 0.1
positions = "none"
[sweep]
seed = [1, 2, 3]
)");
    run_options options = in_dir(dir);
    options.timeout = std::chrono::minutes(3);
    const run_result large = run_program(
        "/usr/bin/env", unbound_ranks(2, {"sweep", "large.toml", "--out", "large.h5", "--quiet"}),
        options);
    INFO(large.out << large.err);
    REQUIRE(large.status == 0);
    CHECK(contains(large.out, "; 1 side by side each)"));
    const std::string parameters = datasets_of(dir + "/large.h5")["parameters"];
    CHECK(contains(parameters, "; threads=" + share + ";"));
    CHECK(!contains(parameters, "; threads=" + std::to_string(cores) + ";"));

    // An explicit OMP_NUM_THREADS wins.
    options.env["OMP_NUM_THREADS"] = std::to_string(cores);
    const run_result explicit_threads = run_program(
        mpirun,
        {"--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS",
         "-np", "2", nadyn_path, "sweep", "large.toml", "--out", "threads.h5", "--quiet"},
        options);
    INFO(explicit_threads.out << explicit_threads.err);
    REQUIRE(explicit_threads.status == 0);
    CHECK(contains(datasets_of(dir + "/threads.h5")["parameters"],
                   "; threads=" + std::to_string(cores) + ";"));

    // Small runs go side by side on the rank's share, or --jobs.
    write_text(dir + "/small.toml", "[run]\nn = 8\nT = 1\n[sweep]\nseed = { range = [1, 8] }\n");
    options.env.clear();
    const run_result small = run_program(
        "/usr/bin/env", unbound_ranks(2, {"sweep", "small.toml", "--out", "small.h5", "--quiet"}),
        options);
    INFO(small.out << small.err);
    REQUIRE(small.status == 0);
    CHECK(contains(small.out, "; " + share + " side by side each)"));
    const run_result jobs = run_program(
        "/usr/bin/env",
        unbound_ranks(2, {"sweep", "small.toml", "--out", "jobs.h5", "--quiet", "--jobs", "3"}),
        options);
    INFO(jobs.out << jobs.err);
    REQUIRE(jobs.status == 0);
    CHECK(contains(jobs.out, "; 3 side by side each)"));
}
