// Ranks started with different arguments (mpirun's MPMD form "-np 1 A : -np 1 B"), or with
// bad input or another subcommand on one rank only: every rank agrees before anything runs
// (parallel_context::agree_on_start), so the job ends at once with status 2, one line, and
// no file, instead of a file that mixes two runs, a hang, or an MPI_ERR_TRUNCATE abort.
#include "mpi_support.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace nadyn_test;

namespace {

// mpirun -np 1 nadyn FIRST : -np 1 nadyn SECOND (the second command on `second_ranks` ranks).
run_result run_two_commands(const std::vector<std::string>& first,
                            const std::vector<std::string>& second, int second_ranks,
                            const std::string& dir) {
    std::vector<std::string> all = {"--allow-run-as-root", "--oversubscribe", "-np", "1",
                                    nadyn_path};
    all.insert(all.end(), first.begin(), first.end());
    all.insert(all.end(), {":", "-np", std::to_string(second_ranks), nadyn_path});
    all.insert(all.end(), second.begin(), second.end());
    run_options options = in_dir(dir);
    options.timeout = std::chrono::seconds(40); // a hang fails the test instead of ctest
    return run_program(mpirun, all, options);
}

void check_refused(const run_result& r, const std::string& dir, const std::string& part) {
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.signal == 0);
    CHECK(lines_starting(r.err, "nadyn:") == 1);
    CHECK_MESSAGE(contains(r.err, part), part);
    CHECK(list_files(dir, ".h5").empty());
}

const std::vector<std::string> base = {"simulate", "--n", "16",    "--d",    "4",
                                       "--T",      "1",   "--out", "run.h5", "--quiet"};

std::vector<std::string> with(std::vector<std::string> args, const std::string& flag,
                              const std::string& value) {
    args.insert(args.end(), {flag, value});
    return args;
}

} // namespace

TEST_CASE("ranks with different beta or n refuse together: status 2, one line, no file") {
    const std::string dir = scratch_dir("mpi/inconsistent_values");
    check_refused(run_two_commands(with(base, "--beta", "4"), with(base, "--beta", "5"), 2, dir),
                  dir, "was started with other arguments than rank 0");
    check_refused(run_two_commands(with(base, "--scheme", "pre-ln"),
                                   with(base, "--scheme", "post-ln"), 1, dir),
                  dir, "MPI rank 1");
    // A different n used to abort in MPI_ERR_TRUNCATE with an unreadable file.
    std::vector<std::string> other_n = base;
    other_n[2] = "24";
    check_refused(run_two_commands(base, other_n, 1, dir), dir,
                  "was started with other arguments than rank 0");
}

TEST_CASE("bad input on one rank only ends every rank with status 2 and one line") {
    const std::string dir = scratch_dir("mpi/inconsistent_bad_input");
    // Refused while the command line is read (an unknown flag): that rank says why.
    check_refused(run_two_commands(base, with(base, "--betta", "5"), 1, dir), dir,
                  "nadyn: rank 1: --betta: unknown flag");
    // Refused by the parameter's check: the ranks' arguments differ, so no rank runs.
    check_refused(run_two_commands(base, with(base, "--scheme", "pre-lm"), 1, dir), dir,
                  "other arguments than rank 0");
    // Rank 0 refused: it speaks, as in a job of one.
    check_refused(run_two_commands(with(base, "--betta", "5"), base, 2, dir), dir,
                  "nadyn: --betta: unknown flag");
}

TEST_CASE("another subcommand on one rank ends every rank with status 2 and one line") {
    const std::string dir = scratch_dir("mpi/inconsistent_subcommand");
    write_text(dir + "/exp.toml", "[run]\nn = 8\nT = 0.2\n[sweep]\nseed = [1, 2]\n");
    check_refused(run_two_commands(base, {"sweep", "exp.toml", "--out", "s.h5"}, 1, dir), dir,
                  "other arguments than rank 0");
    check_refused(run_two_commands(base, {"inspect", "none.h5"}, 1, dir), dir,
                  "other arguments than rank 0");
    check_refused(run_two_commands(base, {"simulat"}, 1, dir), dir,
                  "nadyn: rank 1: unknown command 'simulat'");
}

TEST_CASE("ranks with the same arguments still run (the agreement lets them through)") {
    const std::string dir = scratch_dir("mpi/consistent");
    const run_result r = run_two_commands(base, base, 1, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(fs::exists(dir + "/run.h5"));
}
