#include "nadyn/experiment/run_scheduler.hpp"

#include "nadyn/model/error.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nadyn {

int available_cores() {
    return std::max(1, omp_get_num_procs());
}

int choose_jobs(std::size_t runs, std::size_t n, std::size_t d, int jobs) {
    if (jobs < 0 || jobs > max_jobs)
        throw input_error("jobs must be between 0 (chosen automatically) and " +
                          std::to_string(max_jobs) + " (runs side by side, a thread each), got " +
                          std::to_string(jobs));
    // More threads than runs would wait for nothing (and the memory estimate would count them).
    if (jobs > 0)
        return static_cast<int>(
            std::min<std::size_t>(std::size_t(jobs), std::max<std::size_t>(runs, 1)));
    const double flops = 4.0 * double(n) * double(n) * double(d);
    if (runs >= 2 && flops < double(1 << 24))
        return static_cast<int>(std::min<std::size_t>(std::size_t(available_cores()), runs));
    return 1;
}

void schedule_runs(std::size_t count, int jobs, const std::function<void(std::size_t, int)>& run,
                   const std::atomic<bool>* stop) {
    std::atomic<bool> failed{false};
    std::exception_ptr first_failure;
    std::mutex failure_lock;
    auto one = [&](std::size_t i, int threads) {
        try {
            run(i, threads);
        } catch (...) {
            std::lock_guard<std::mutex> lock(failure_lock);
            if (!first_failure) first_failure = std::current_exception();
            failed = true;
        }
    };
    auto go_on = [&] { return !failed.load() && !(stop && stop->load()); };
    if (jobs > 1) {
        std::atomic<std::size_t> next{0};
        std::vector<std::thread> workers;
        for (int w = 0; w < jobs; ++w)
            workers.emplace_back([&] {
                for (std::size_t i = next++; i < count && go_on(); i = next++)
                    one(i, 1);
            });
        for (auto& worker : workers)
            worker.join();
    } else {
        for (std::size_t i = 0; i < count && go_on(); ++i)
            one(i, 0);
    }
    if (first_failure) std::rethrow_exception(first_failure);
}

} // namespace nadyn
