#pragma once
// Loops over tokens or blocks, on the OpenMP threads only when `parallel`. An explicit branch
// rather than `#pragma omp parallel if (...)`: libgomp allocates a thread team even for a
// region its if clause turns off, and a step must not allocate. Each item is one thread's
// work, so results do not depend on the number of threads.
#include <cstddef>

namespace nadyn::detail {

// Equal shares of items per thread (per-token work of equal cost).
template <class Body> void for_each_static(std::size_t count, bool parallel, const Body& body) {
    if (parallel) {
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < count; ++i)
            body(i);
    } else {
        for (std::size_t i = 0; i < count; ++i)
            body(i);
    }
}

// One item at a time to whichever thread is free (blocks of uneven cost).
template <class Body> void for_each_dynamic(std::size_t count, bool parallel, const Body& body) {
    if (parallel) {
#pragma omp parallel for schedule(dynamic, 1)
        for (std::size_t i = 0; i < count; ++i)
            body(i);
    } else {
        for (std::size_t i = 0; i < count; ++i)
            body(i);
    }
}

// Per-token loops are worth threads above this many values (n * d).
inline constexpr std::size_t parallel_token_values = 65536;

} // namespace nadyn::detail
