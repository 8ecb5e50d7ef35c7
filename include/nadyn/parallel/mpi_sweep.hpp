#pragma once
// nadyn sweep over the ranks of an MPI job (`mpirun -np P nadyn sweep exp.toml`); built only
// with MPI (NADYN_MPI).
//
// Rank 0 owns the result file and hands out run indices one at a time, on request (dynamic
// balance: runs differ in cost). Every other rank is a worker: it runs its runs side by side
// on its cores exactly as a one-process sweep does (its own --jobs), and sends each finished
// run's record back (observables per frame, positions, status, statistics, parameter text)
// as a byte buffer. Rank 0 writes it with the one-process sweep's writer, so the file is the
// file of `nadyn sweep` in one process, bitwise in every dataset but wall_time (and the
// created / finished attributes). --resume runs what is missing, as in one process.
//
// SIGINT / SIGTERM (mpirun forwards them to every rank): each rank's stop token is set by its
// own handler; rank 0 hands out nothing more, workers stop their runs and report them
// interrupted, rank 0 writes them and finishes the file. A rank that dies ends the job
// (MPI_ERRORS_ARE_FATAL); the file, flushed after every run, keeps the finished runs and
// --resume completes it.
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/parallel/parallel_context.hpp"

#include <functional>
#include <string>

namespace nadyn {

// What rank 0 prepares before any run.
struct ranks_sweep_job {
    experiment e;
    std::string path;
    bool resume = false;    // fill in what is missing of the sweep file `path`
    // --dry-run: nothing runs once every rank has read the input files (as the run would)
    bool plan_only = false;
};

struct ranks_sweep_result {
    sweep_summary summary; // rank 0's account, the same on every rank
    bool stopped = false;  // rank 0 was asked to stop (SIGINT / SIGTERM)
    int workers = 0;       // ranks that computed runs (all but rank 0)
    // Rank 0's time (seconds): writing records into the file, receiving and decoding them,
    // and waiting for the workers. Workers' compute time is the file's wall_time.
    double writing_seconds = 0.0;
    double receiving_seconds = 0.0;
    double waiting_seconds = 0.0;
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
