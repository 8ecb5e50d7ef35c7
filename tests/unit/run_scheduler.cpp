// The scheduler `nadyn sweep` and the tables share: every run exactly once, side by side only
// when the runs are small, a stop honoured, a failure rethrown; and a table computed on it is
// the same whatever the schedule (a run's numbers do not depend on its thread count).
#include "nadyn/run_scheduler.hpp"
#include "nadyn/paper_tables.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace nadyn;

TEST_CASE("choose_jobs: side by side for several small runs, one at a time otherwise") {
    const int cores = available_cores();
    CHECK(choose_jobs(10, 64, 16) == std::min(cores, 10));
    CHECK(choose_jobs(1, 64, 16) == 1);                      // one run: threads inside it
    CHECK(choose_jobs(10, 128, 512) == 1);                   // 4 n^2 d = 2^25 flops: large
    CHECK(choose_jobs(10, 64, 1023) == std::min(cores, 10)); // just below 2^24
    CHECK(choose_jobs(10, 64, 1024) == 1);                   // 2^24: large
    CHECK(choose_jobs(10, 128, 512, 3) == 3);                // asked for
}

TEST_CASE("schedule_runs: every run exactly once, with one thread each when side by side") {
    for (int jobs : {1, 2, 3}) {
        INFO("jobs: " << jobs);
        std::vector<std::atomic<int>> calls(37);
        std::mutex lock;
        std::vector<int> threads_seen;
        std::vector<std::thread::id> callers;
        schedule_runs(calls.size(), jobs, [&](std::size_t i, int threads) {
            ++calls[i];
            std::lock_guard<std::mutex> guard(lock);
            threads_seen.push_back(threads);
            callers.push_back(std::this_thread::get_id());
        });
        for (const auto& c : calls)
            CHECK(c.load() == 1);
        for (int t : threads_seen)
            CHECK(t == (jobs > 1 ? 1 : 0));
        if (jobs == 1)
            for (const auto& id : callers)
                CHECK(id == std::this_thread::get_id()); // in order, on the caller's thread
    }
}

TEST_CASE("schedule_runs: no run starts after a stop or a failure; the failure is rethrown") {
    for (int jobs : {1, 2}) {
        INFO("jobs: " << jobs);
        std::atomic<bool> stop{false};
        std::atomic<int> ran{0};
        schedule_runs(
            100, jobs,
            [&](std::size_t, int) {
                if (++ran == 5) stop = true;
            },
            &stop);
        // One at a time: exactly the five runs; side by side, the runs the other threads had
        // begun before the stop became visible (never all of them).
        if (jobs == 1) CHECK(ran.load() == 5);
        CHECK(ran.load() >= 5);
        CHECK(ran.load() < 100);

        std::atomic<int> after{0};
        CHECK_THROWS_WITH_AS(schedule_runs(100, jobs,
                                           [&](std::size_t i, int) {
                                               if (i == 3) throw std::runtime_error("run 3");
                                               if (i > 3) ++after;
                                           }),
                             "run 3", std::runtime_error);
        if (jobs == 1) CHECK(after.load() == 0);
        CHECK(after.load() < 96);
    }
}

TEST_CASE("the random-weights table is the same run one at a time or side by side") {
    random_table_settings s;
    s.n = 12;
    s.d = 8;
    s.layers = 20;
    s.seeds = {1, 2};
    // Small runs: the table runs them side by side (one thread each) when there are cores.
    for (const scheme id : {scheme::post_ln, scheme::peri_ln}) {
        const random_run_result alone = random_weights_run(id, s, 2, 0);
        const random_run_result one_thread = random_weights_run(id, s, 2, 1);
        CHECK(alone.mean_cos == one_thread.mean_cos);
        CHECK(alone.pair_change == one_thread.pair_change);
    }
    std::vector<std::string> order;
    const auto rows = random_weights_table(
        s, [&](const random_row& row, const std::vector<random_run_result>& runs) {
            order.emplace_back(info(row.id).name);
            CHECK(runs.size() == 2);
        });
    REQUIRE(rows.size() == 6);
    REQUIRE(order.size() == 6);
    for (std::size_t i = 0; i < rows.size(); ++i)
        CHECK(order[i] == info(rows[i].id).name); // rows arrive in the schemes' order
    // Each row's mean is the mean of the runs computed alone.
    const random_run_result a = random_weights_run(rows[2].id, s, 1, 0);
    const random_run_result b = random_weights_run(rows[2].id, s, 2, 0);
    CHECK(rows[2].final_mean_cos.mean ==
          doctest::Approx((a.final_mean_cos + b.final_mean_cos) / 2).epsilon(1e-15));
}
