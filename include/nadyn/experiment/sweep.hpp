#pragma once
// Runs every run of an experiment in one process and writes one labelled HDF5 file.
//
// Many small runs go side by side (one per thread, dynamic load balance: runs differ in
// cost); large runs go one after another with the threads inside the run. A run inside a
// sweep is bitwise the run `nadyn simulate` makes with the same parameters (same seed
// streams, results independent of the thread count).
//
// The file (docs/file-format.md, "Sweep files"): each observable is an array over the sweep's axes
// and time, the axes' values are HDF5 dimension scales, so xarray opens it with named
// dimensions (`xarray.open_dataset(path, engine="h5netcdf")`) and h5py reads plain arrays. Its
// layout, writer and readers are the files layer's, nadyn/files/sweep_file.hpp (which also
// declares is_sweep_file() and sweep_run_history); this engine schedules the runs.
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/files/sweep_file.hpp"
#include "nadyn/model/cluster_history.hpp"

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>

namespace nadyn {

struct sweep_progress {
    std::size_t done = 0;  // runs finished (any outcome), this invocation
    std::size_t total = 0; // runs to do, this invocation
    double elapsed = 0.0;  // seconds
};

struct sweep_options {
    int jobs = 0; // runs side by side; 0: chosen from the runs' size and the cores
    const std::atomic<bool>* stop = nullptr; // the caller's stop token (SIGINT, Ctrl-C)
    std::function<void(const sweep_progress&)> progress;
    bool overwrite = false;
    // Receives the experiment's configuration warnings (experiment::warnings(): a negative
    // beta, ...), each once, before a new sweep's first run; empty: none said.
    std::function<void(const std::string&)> warn;
};

struct sweep_summary {
    std::size_t runs = 0;    // in the experiment
    std::size_t skipped = 0; // already complete in a resumed file
    // Marked complete in a resumed file, but their results there are not the ones written
    // (checksum mismatch): run again.
    std::size_t distrusted = 0;
    std::size_t complete = 0; // finished by this invocation
    std::size_t interrupted = 0;
    std::size_t failed = 0;
    int jobs = 1;
    double wall_seconds = 0.0;
    std::string first_failure; // the message of the first failed run

    // Counts one finished run by its status: complete, interrupted, or failed (the first
    // failure's message kept).
    void count(const sweep_record& record);
};

// What --dry-run prints: the runs, the work and the memory, and the schedule.
struct sweep_plan {
    std::size_t runs = 0;
    int jobs = 1;
    double flops = 0.0;        // attention flops over all runs (simulation::attention_flops)
    double bytes_in_use = 0.0; // memory of the runs that run side by side
    double file_bytes = 0.0;   // size of the result file
};
// Refuses (input_error) what the sweep itself would refuse of the experiment before its file
// exists: its input files (experiment::check_input_files), with the same message.
sweep_plan plan_sweep(const experiment& e, int jobs = 0);
std::string describe_plan(const experiment& e, const sweep_plan& plan);

// Runs the experiment into a new file at `path` (input_error if it exists, unless
// overwrite). Failed runs are recorded (status 3) and do not stop the others.
sweep_summary run_sweep(const experiment& e, const std::string& path,
                        const sweep_options& options = {});

// Runs what is missing (status other than complete) of the sweep in `path`, with the
// experiment recorded there; the finished file's data equal an uninterrupted sweep's, bitwise.
sweep_summary resume_sweep(const std::string& path, const sweep_options& options = {});

// The experiment recorded in a sweep file.
experiment sweep_experiment(const std::string& path);
// The axes and a table of final observables per point (mean and spread over the `seed`
// axis when there is one), as `nadyn inspect` prints it.
std::string describe_sweep_file(const std::string& path);

// The cluster history of one run of a sweep file (docs/model.md §5.2), as nadyn inspect
// --merges prints it: the run at `point` (experiment::find_point: "axis=value,...", an index,
// or empty for a one-run sweep). input_error (naming the axes and their values) for anything
// else, or a file without cluster histories.
sweep_run_history sweep_cluster_history(const std::string& path, const std::string& point);

} // namespace nadyn
