#pragma once
// nadyn sweep over the ranks of an MPI job (`mpirun -np P nadyn sweep exp.toml`); built only
// with MPI (NADYN_MPI).
//
// Every rank computes runs: P ranks are P workers. Rank 0 also owns the result file and hands
// out run indices one at a time, to the other ranks on request and to its own free slots
// (dynamic balance: runs differ in cost). Each rank runs its runs side by side on its share of
// its node's cores exactly as a one-process sweep does (rank_schedule: its own --jobs), and the
// other ranks send each finished run's record back (observables per frame, positions, status,
// statistics, parameter text) as a byte buffer. Rank 0 writes its own and theirs with the
// one-process sweep's writer, so the file is the file of `nadyn sweep` in one process,
// bitwise in every dataset but wall_time (and the created / finished attributes). --resume
// runs what is missing, as in one process.
//
// SIGINT / SIGTERM (mpirun forwards them to every rank): each rank's stop token is set by its
// own handler; rank 0 hands out nothing more, every rank stops its runs and reports them
// interrupted, rank 0 writes them and finishes the file. A run that fails is recorded as
// failed, on rank 0 as on any other. A rank that dies ends the job (MPI_ERRORS_ARE_FATAL);
// the file, flushed after every run, keeps the finished runs and --resume completes it.
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/parallel/parallel_context.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace nadyn {

// What rank 0 prepares before any run.
struct ranks_sweep_job {
    experiment e;
    std::string path;
    bool resume = false; // fill in what is missing of the sweep file `path`
    // --dry-run: nothing runs once every rank has read the input files (as the run would)
    bool plan_only = false;
};

// How one rank runs its runs: `jobs` side by side, each on `threads` OpenMP threads (0:
// OpenMP's default, OMP_NUM_THREADS). --jobs as given, else the one-process choice
// (nadyn::choose_jobs) within the rank's share of its node (cores_per_rank); one run at a
// time takes parallel_context::threads_per_run(). So the ranks of one node share its cores
// instead of each taking all of them.
struct rank_schedule {
    int jobs = 1;
    int threads = 0;
};
rank_schedule schedule_on_rank(const parallel_context& context, const experiment& e, int jobs);

struct ranks_sweep_result {
    sweep_summary summary; // rank 0's account, the same on every rank
    bool stopped = false;  // rank 0 was asked to stop (SIGINT / SIGTERM)
    // The runs each rank ran (any outcome) in this invocation, rank 0 first; on rank 0 only.
    std::vector<std::size_t> runs_per_rank;
    // Rank 0's time (seconds): writing records into the file, receiving and decoding them,
    // and idle (waiting for a run of its own or a message). Compute time is the file's
    // wall_time.
    double writing_seconds = 0.0;
    double receiving_seconds = 0.0;
    double idle_seconds = 0.0;
};

// Collective over every rank of `context` (size > 1). `prepare` runs on rank 0 only; it loads
// the experiment (or the sweep file's, to resume) and may throw. An error on rank 0 (there,
// or creating the file) is rethrown on rank 0 and the other ranks throw the same kind of
// error (input_error, io_error) without a message of their own: the program prints one line,
// on rank 0, and every rank exits with the same status.
ranks_sweep_result sweep_over_ranks(const parallel_context& context,
                                    const std::function<ranks_sweep_job()>& prepare,
                                    const sweep_options& options);

} // namespace nadyn
