#pragma once
// Loops over tokens or blocks on `threads` OpenMP threads (1: serial, in the caller's thread).
// The thread count is the run's own, passed down (a `num_threads` clause), never set on the
// process, so several runs with their own counts can share a process. An explicit branch
// rather than `#pragma omp parallel if (...)`: libgomp allocates a thread team even for a
// region its if clause turns off, and a step must not allocate. Each item is one thread's
// work, so results do not depend on the number of threads.
#include <omp.h>

#include <cstddef>

namespace nadyn::detail {

// A requested thread count: > 0 as given, 0 (or less) OpenMP's default at this moment
// (OMP_NUM_THREADS, else the cores).
inline int resolve_threads(int requested) {
    return requested > 0 ? requested : omp_get_max_threads();
}

// Equal shares of items per thread (per-token work of equal cost).
template <class Body> void for_each_static(std::size_t count, int threads, const Body& body) {
    if (threads > 1 && count > 1) {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (std::size_t i = 0; i < count; ++i)
            body(i);
    } else {
        for (std::size_t i = 0; i < count; ++i)
            body(i);
    }
}

// One item at a time to whichever thread is free (blocks of uneven cost).
template <class Body> void for_each_dynamic(std::size_t count, int threads, const Body& body) {
    if (threads > 1 && count > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (std::size_t i = 0; i < count; ++i)
            body(i);
    } else {
        for (std::size_t i = 0; i < count; ++i)
            body(i);
    }
}

// Per-token loops are worth threads above this many values (n * d).
inline constexpr std::size_t parallel_token_values = 65536;

// The threads for a per-token loop over n tokens of d values: `threads` when worth it, else 1.
inline int token_threads(std::size_t n, std::size_t d, int threads) {
    return n * d > parallel_token_values ? threads : 1;
}

} // namespace nadyn::detail
