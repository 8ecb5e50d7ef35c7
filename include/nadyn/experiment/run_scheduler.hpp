#pragma once
// How many independent runs one process computes at once, and the loop that hands them out:
// the scheduling of `nadyn sweep`, shared by the tables that loop over runs (docs/model.md §6:
// a run's result does not depend on its thread count, so the schedule never changes a number).
//
// Small runs go side by side, one thread each: a run below ~2^24 attention flops per
// evaluation would mostly wait on its own threads' barriers. Large runs go one after another
// with every core inside the run.
#include <atomic>
#include <cstddef>
#include <functional>

namespace nadyn {

// The cores this process may use: omp_get_num_procs(), the processors of its affinity mask (a
// launcher's or taskset's binding applies; OMP_NUM_THREADS does not, it sets the threads of a
// run, not the cores).
int available_cores();

// The most runs side by side a caller may ask for (each is a thread of its own).
inline constexpr int max_jobs = 4096;

// Runs side by side for `runs` runs of n tokens in d dimensions: `jobs` when > 0 (at most
// `runs`), else every core when there are at least two runs small enough, else 1.
// input_error when `jobs` is negative or above max_jobs.
int choose_jobs(std::size_t runs, std::size_t n, std::size_t d, int jobs = 0);

// Calls run(i, threads) once for each i in [0, count). With jobs > 1, on `jobs` plain threads
// (not an OpenMP region, so each run is the outermost parallel level of its own thread, as
// when it runs alone), runs handed out one at a time (dynamic balance: runs differ in cost),
// threads = 1; otherwise in order on the calling thread with threads = 0 (all cores inside
// the run). No run starts once *stop is set. An exception from a run stops the handing out;
// the first one is rethrown once the running ones have finished.
void schedule_runs(std::size_t count, int jobs, const std::function<void(std::size_t, int)>& run,
                   const std::atomic<bool>* stop = nullptr);

} // namespace nadyn
