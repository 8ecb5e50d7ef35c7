#pragma once
// The parts of the sweep engine (src/experiment/sweep.cpp) that another driver of the same runs
// needs: the file's layout of an experiment, running one point, and the checks before a
// resume. The file itself is the files layer's (nadyn/files/sweep_file.hpp): the MPI sweep
// (src/parallel/mpi/) writes the records its workers send through the same sweep_file, so that
// its file is the one-process sweep's file, bitwise. Private to the library (src/).
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/files/sweep_file.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

namespace nadyn::detail {

// The shape of the result of `e`, fixed before any run starts.
sweep_layout layout_of(const experiment& e);

// What the file records of `e` (its text, overrides, hash and input files).
sweep_provenance provenance_of(const experiment& e);

// Refuses (input_error) a sweep file whose recorded experiment no longer matches the hash
// recorded at its creation (edited since); a file without the hash passes.
void check_recorded_experiment(const std::string& path, const experiment& e);

// Says the experiment's configuration warnings (experiment::warnings(): a negative beta, ...)
// through options.warn, each once, before a new sweep's first run: run_sweep in one process,
// rank 0 of the MPI sweep.
void warn_configuration(const experiment& e, const sweep_options& options);

// Runs one point; never throws for the run's own failures (they are its record).
sweep_record run_point(const experiment& e, const sweep_layout& layout, std::size_t index,
                       int threads, const std::atomic<bool>* stop);

// Tells options.progress (if any) that `done` of the `total` runs of this invocation have
// finished, `started` being when it began.
void report_progress(const sweep_options& options, std::size_t done, std::size_t total,
                     std::chrono::steady_clock::time_point started);

// Runs side by side (nadyn::choose_jobs for the experiment's first run).
int choose_jobs(const experiment& e, int jobs);

} // namespace nadyn::detail
