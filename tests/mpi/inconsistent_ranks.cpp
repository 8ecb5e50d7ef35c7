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

namespace {

// The same command on two ranks, each started in its own working directory (mpirun -wdir):
// identical command lines whose `file:` paths name different files.
run_result run_in_two_dirs(const std::vector<std::string>& command, const std::string& first,
                           const std::string& second) {
    std::vector<std::string> all = {"--allow-run-as-root", "--oversubscribe"};
    for (const std::string* dir : {&first, &second}) {
        if (dir == &second) all.emplace_back(":");
        all.insert(all.end(), {"-np", "1", "-wdir", *dir, nadyn_path});
        all.insert(all.end(), command.begin(), command.end());
    }
    run_options options = in_dir(first);
    options.timeout = std::chrono::seconds(40); // the missing file used to hang in MPI_Barrier
    return run_program(mpirun, all, options);
}

// n = 16 directions in d = 3, shifted by `shift` so that two files differ.
void write_init(const std::string& path, double shift) {
    std::vector<double> theta(48);
    for (std::size_t i = 0; i < theta.size(); ++i)
        theta[i] = 0.1 * static_cast<double>(i % 7 + 1) + shift * static_cast<double>(i % 3);
    write_h5(path, {{"theta0", {16, 3}, theta}});
}

struct two_dirs {
    std::string a, b;
};

two_dirs make_two_dirs(const std::string& name) {
    const std::string root = scratch_dir("mpi_inputs/" + name);
    two_dirs dirs{root + "/A", root + "/B"};
    fs::create_directories(dirs.a);
    fs::create_directories(dirs.b);
    return dirs;
}

// Status 2 and one line, on every rank, and no output beside the input file.
void check_inputs_refused(const run_result& r, const std::string& dir, const std::string& part) {
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.signal == 0);
    CHECK(lines_starting(r.err, "nadyn:") == 1);
    CHECK_MESSAGE(contains(r.err, part), part);
    for (const std::string& name : list_files(dir, ".h5"))
        CHECK(name == "i.h5");
}

const std::vector<std::string> from_file = {"simulate",  "--n",   "16",   "--d",
                                            "3",         "--T",   "0.5",  "--init",
                                            "file:i.h5", "--out", "o.h5", "--quiet"};

} // namespace

TEST_CASE("ranks whose file: inputs differ (other working directories) refuse together") {
    const two_dirs dirs = make_two_dirs("differ");
    write_init(dirs.a + "/i.h5", 0.0);
    write_init(dirs.b + "/i.h5", 0.5);
    const run_result r = run_in_two_dirs(from_file, dirs.a, dirs.b);
    check_inputs_refused(r, dirs.a, "MPI rank 1 read other inputs than rank 0");
    CHECK(list_files(dirs.b, ".h5") == std::vector<std::string>{"i.h5"});
}

TEST_CASE("an input file missing on one rank ends every rank with status 2, no hang") {
    const two_dirs dirs = make_two_dirs("missing");
    write_init(dirs.a + "/i.h5", 0.0);
    const run_result r = run_in_two_dirs(from_file, dirs.a, dirs.b);
    check_inputs_refused(r, dirs.a, "rank 1: ");
    CHECK(contains(r.err, "i.h5"));
    CHECK(list_files(dirs.b, ".h5").empty());
}

TEST_CASE("ranks reading equal copies of an input file run") {
    const two_dirs dirs = make_two_dirs("same");
    write_init(dirs.a + "/i.h5", 0.0);
    write_init(dirs.b + "/i.h5", 0.0);
    const run_result r = run_in_two_dirs(from_file, dirs.a, dirs.b);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(fs::exists(dirs.a + "/o.h5"));
}

TEST_CASE("a sweep whose ranks read different input files refuses before its file exists") {
    const two_dirs dirs = make_two_dirs("sweep");
    const std::string toml = "[run]\nn = 16\nd = 3\nT = 0.2\ninit = \"file:i.h5\"\n"
                             "[sweep]\nbeta = [1, 2, 3]\n";
    for (const std::string* dir : {&dirs.a, &dirs.b})
        write_text(*dir + "/e.toml", toml);
    write_init(dirs.a + "/i.h5", 0.0);
    write_init(dirs.b + "/i.h5", 0.5);
    const std::vector<std::string> sweep = {"sweep", "e.toml", "--out", "s.h5", "--quiet"};
    check_inputs_refused(run_in_two_dirs(sweep, dirs.a, dirs.b), dirs.a,
                         "MPI rank 1 read other input files than rank 0");
    fs::remove(dirs.b + "/i.h5");
    const run_result missing = run_in_two_dirs(sweep, dirs.a, dirs.b);
    check_inputs_refused(missing, dirs.a, "rank 1: ");
}

// Issue 35: an input missing on the workers only (rank 0 has it). The run is refused in the
// ranks' agreement on their inputs (6 runs, 3 ranks: never 6 failed runs and exit 1), and a
// --dry-run, which rank 0 alone used to plan (exit 0), says the same line.
TEST_CASE("a sweep and its --dry-run refuse an input file missing on the workers, up front") {
    const two_dirs dirs = make_two_dirs("workers_missing");
    const std::string toml = "[run]\nn = 16\nd = 3\nT = 0.2\ninit = \"file:i.h5\"\n"
                             "[sweep]\nbeta = [1, 2, 3]\nseed = [1, 2]\n";
    for (const std::string* dir : {&dirs.a, &dirs.b})
        write_text(*dir + "/e.toml", toml);
    write_init(dirs.a + "/i.h5", 0.0);
    const auto on_three_ranks = [&](const std::vector<std::string>& command) {
        std::vector<std::string> all = {
            "--allow-run-as-root", "--oversubscribe", "-np", "1", "-wdir", dirs.a, nadyn_path};
        all.insert(all.end(), command.begin(), command.end());
        all.insert(all.end(), {":", "-np", "2", "-wdir", dirs.b, nadyn_path});
        all.insert(all.end(), command.begin(), command.end());
        run_options options = in_dir(dirs.a);
        options.timeout = std::chrono::seconds(40);
        return run_program(mpirun, all, options);
    };
    const run_result run = on_three_ranks({"sweep", "e.toml", "--out", "s.h5", "--quiet"});
    check_inputs_refused(
        run, dirs.a,
        "nadyn: rank 1: e.toml: run 0 (beta=1 seed=1): init = file:i.h5 (--init): cannot "
        "open 'i.h5': no such file");
    CHECK(!contains(run.out, "failed"));
    const run_result dry = on_three_ranks({"sweep", "e.toml", "--out", "s.h5", "--dry-run"});
    check_inputs_refused(
        dry, dirs.a,
        "nadyn: rank 1: e.toml: run 0 (beta=1 seed=1): init = file:i.h5 (--init): cannot "
        "open 'i.h5': no such file");
    CHECK(dry.out.empty());
    // With the file on every rank (a byte copy: HDF5 records object times, so a file written
    // again later differs) the dry run prints its plan once and exits 0.
    fs::copy_file(dirs.a + "/i.h5", dirs.b + "/i.h5");
    const run_result planned = on_three_ranks({"sweep", "e.toml", "--out", "s.h5", "--dry-run"});
    INFO(planned.err);
    CHECK(planned.status == 0);
    CHECK(count_of(planned.out, "6 runs") == 1);
    CHECK(contains(planned.out, "ranks: 3"));
    CHECK(list_files(dirs.a, ".h5") == std::vector<std::string>{"i.h5"});
}
