// mpirun -np P nadyn simulate: one run shared among the ranks by its tokens. The trajectory
// file holds, bitwise, the positions, magnitudes and observables of the same run in one
// process, for P = 1, 2, 3 and on every kernel path (general, symmetric with GEMM tiles,
// small d, float, causal, unnormalised, several heads, layernorm, a scheme whose attention
// reads magnitudes, dopri5's adaptive steps); SIGINT to mpirun leaves an interrupted file that
// --resume over another number of ranks completes into the one-process file; bad input is one
// message and exit status 2 on any number of ranks, with no file. Bitwise in every build,
// AVX-512 included: no sum depends on where the process's allocator put an operand.
#include "mpi_support.hpp"

#include <doctest/doctest.h>

#include <hdf5.h>

#include <csignal>
#include <map>
#include <thread>

using namespace nadyn_test;

namespace {

herr_t collect_dataset(hid_t, const char* name, const H5O_info_t* info, void* out) {
    if (info->type == H5O_TYPE_DATASET)
        static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
}

// Every numeric dataset of the trajectory (under /particles and /observables) as its bytes.
std::map<std::string, std::string> trajectory_of(const std::string& path) {
    std::map<std::string, std::string> out;
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(file >= 0);
    for (const char* group : {"/particles", "/observables"}) {
        std::vector<std::string> names;
        const hid_t g = H5Gopen(file, group, H5P_DEFAULT);
        REQUIRE(g >= 0);
        H5Ovisit(g, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &names);
        for (const std::string& name : names) {
            const hid_t set = H5Dopen(g, name.c_str(), H5P_DEFAULT);
            const hid_t space = H5Dget_space(set);
            const hid_t type = H5Dget_type(set);
            if (H5Tget_class(type) == H5T_FLOAT || H5Tget_class(type) == H5T_INTEGER) {
                const hid_t native = H5Tget_native_type(type, H5T_DIR_ASCEND);
                std::string bytes(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)) *
                                      H5Tget_size(native),
                                  '\0');
                H5Dread(set, native, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
                H5Tclose(native);
                out[std::string(group) + "/" + name] = bytes;
            }
            H5Tclose(type);
            H5Sclose(space);
            H5Dclose(set);
        }
        H5Gclose(g);
    }
    H5Fclose(file);
    return out;
}

void check_same_trajectory(const std::string& a, const std::string& b) {
    INFO(a << " vs " << b);
    const auto x = trajectory_of(a), y = trajectory_of(b);
    REQUIRE(x.size() == y.size());
    REQUIRE(x.size() >= 10); // positions, magnitudes, times, steps, observables
    for (const auto& [name, bytes] : x) {
        REQUIRE_MESSAGE(y.count(name), name);
        CHECK_MESSAGE(bytes == y.at(name), name);
    }
}

run_options slow(const std::string& dir) {
    run_options options = in_dir(dir);
    options.timeout = std::chrono::minutes(5); // CI's machine may be loaded
    return options;
}

} // namespace

TEST_CASE("1, 2 and 3 ranks write the one-process trajectory, bitwise, on every kernel path") {
    const std::string dir = scratch_dir("mpi/simulate");
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"few-tokens",
         {"--n", "6", "--d", "4", "--weights", "random", "--integrator", "euler", "--dt", "0.1",
          "--T", "1.5"}},
        {"few-tokens-dopri5",
         {"--n", "5", "--d", "4", "--weights", "random", "--integrator", "dopri5", "--T", "1.5"}},
        {"general", {"--n", "150", "--d", "8", "--weights", "gaussian", "--T", "2"}},
        {"symmetric", {"--n", "300", "--d", "24", "--T", "1", "--block", "64"}},
        {"small-d",
         {"--n", "260", "--d", "3", "--T", "3", "--integrator", "dopri5", "--scheme", "post-ln"}},
        {"float", {"--n", "140", "--d", "8", "--precision", "float", "--T", "1"}},
        {"causal-heads",
         {"--n", "100", "--d", "6", "--causal", "--heads", "3", "--weights", "gaussian", "--T",
          "1"}},
        {"unnormalized", {"--n", "90", "--d", "5", "--attention", "unnormalized", "--T", "1"}},
        {"layernorm",
         {"--n", "120", "--d", "6", "--norm", "layernorm", "--scheme", "pre-ln", "--T", "1"}},
        {"magnitudes", {"--n", "110", "--d", "4", "--scheme", "no-norm", "--T", "1"}},
    };
    for (const auto& [name, flags] : cases) {
        CAPTURE(name);
        std::vector<std::string> args = {"simulate", "--positions", "all", "--quiet"};
        args.insert(args.end(), flags.begin(), flags.end());
        std::vector<std::string> alone = args;
        alone.insert(alone.end(), {"--out", name + "-one.h5"});
        const run_result one = run_nadyn(alone, slow(dir));
        INFO(one.out << one.err);
        REQUIRE(one.status == 0);
        for (int ranks : {1, 2, 3}) {
            CAPTURE(ranks);
            const std::string out = name + "-" + std::to_string(ranks) + ".h5";
            std::vector<std::string> shared = args;
            shared.insert(shared.end(), {"--out", out});
            const run_result r = run_ranks(ranks, shared, slow(dir));
            INFO(r.out << r.err);
            REQUIRE(r.status == 0);
            CHECK(lines_starting(r.out, "complete:") == 1); // one report, from rank 0
            // Warnings (the few-token Euler runs have one) once, not once per rank.
            CHECK(lines_starting(r.err, "nadyn: warning") ==
                  lines_starting(one.err, "nadyn: warning"));
            if (ranks > 1)
                CHECK(contains(r.out, "shared over " + std::to_string(ranks) + " ranks"));
            check_same_trajectory(dir + "/" + name + "-one.h5", dir + "/" + out);
        }
    }
}

TEST_CASE("SIGINT to mpirun stops every rank at the same step; --resume over 3 ranks completes "
          "the file bitwise") {
    const std::string dir = scratch_dir("mpi/simulate_sigint");
    const std::vector<std::string> run = {"simulate", "--n",         "200",      "--d",
                                          "8",        "--weights",   "gaussian", "--T",
                                          "40",       "--positions", "all",      "--quiet"};
    std::vector<std::string> with_out = run;
    with_out.insert(with_out.end(), {"--out", "cut.h5"});
    const std::vector<std::string> args = mpirun_args(2, with_out);
    // The run takes about a second on an idle machine, minutes on a loaded one: interrupt soon
    // after the file appears, sooner again if the run finished first.
    run_result stopped;
    int delay_ms = 250;
    for (int attempt = 0;; ++attempt) {
        fs::remove(dir + "/cut.h5");
        child_process shared(mpirun, args, in_dir(dir));
        REQUIRE(wait_until([&] { return fs::exists(dir + "/cut.h5"); }, std::chrono::seconds(60)));
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        shared.send_signal(SIGINT);
        stopped = shared.wait(std::chrono::minutes(5));
        REQUIRE(attempt < 6);
        if (!contains(stopped.out, "complete: ")) break;
        delay_ms /= 3;
    }
    INFO(stopped.out << stopped.err);
    // Every rank exits 143 (mpirun passes SIGTERM on), but mpirun, signalled itself, exits 1
    // by Open MPI's rule.
    CHECK(stopped.status != 0);
    REQUIRE(contains(stopped.out, "interrupted: "));
    CHECK(status_text(dir + "/cut.h5") == "interrupted");

    const run_result resumed =
        run_ranks(3, {"simulate", "--resume", "cut.h5", "--quiet"}, slow(dir));
    INFO(resumed.out << resumed.err);
    CHECK(resumed.status == 0);
    CHECK(status_text(dir + "/cut.h5") == "complete");

    std::vector<std::string> whole = run;
    whole.insert(whole.end(), {"--out", "whole.h5"});
    REQUIRE(run_nadyn(whole, slow(dir)).status == 0);
    check_same_trajectory(dir + "/whole.h5", dir + "/cut.h5");
}

TEST_CASE("bad input to a shared run on 3 ranks: one message, exit status 2, no file") {
    const std::string dir = scratch_dir("mpi/simulate_bad");
    const run_result bad =
        run_ranks(3, {"simulate", "--scheme", "pre-lm", "--out", "x.h5"}, in_dir(dir));
    CHECK(bad.status == 2);
    CHECK(lines_starting(bad.err, "nadyn:") == 1);
    CHECK(contains(bad.err, "pre-lm"));
    CHECK(!fs::exists(dir + "/x.h5"));

    // Only rank 0 looks at the output path: the others learn of its refusal and stop quietly.
    write_text(dir + "/taken.h5", "not a trajectory");
    const run_result taken =
        run_ranks(3, {"simulate", "--n", "16", "--out", "taken.h5"}, in_dir(dir));
    CHECK(taken.status == 2);
    CHECK(lines_starting(taken.err, "nadyn:") == 1);
    CHECK(contains(taken.err, "already exists"));

    // Resuming a file that cannot be resumed: every rank reads it and refuses alike.
    REQUIRE(
        run_nadyn({"simulate", "--n", "16", "--T", "1", "--out", "done.h5", "--quiet"}, in_dir(dir))
            .status == 0);
    const run_result complete = run_ranks(2, {"simulate", "--resume", "done.h5"}, in_dir(dir));
    CHECK(complete.status == 2);
    CHECK(lines_starting(complete.err, "nadyn:") == 1);
}
