// The scheduler of `nadyn sweep`: every run exactly once, side by side only when the runs are
// small, a stop honoured, a failure rethrown; and runs scheduled on it give the same numbers
// whatever the schedule (a run's numbers do not depend on its thread count).
#include "nadyn/experiment/run_scheduler.hpp"
#include "nadyn/experiment/run.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
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
        // Each other run takes 5 ms: runs that took no time would let the other thread run
        // all 95 while the stopping thread is preempted between its count and the stop (this
        // test failed once at a load of 15), which is the schedule, not a run started after
        // the stop.
        schedule_runs(
            100, jobs,
            [&](std::size_t, int) {
                if (++ran == 5) {
                    stop = true;
                    return;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
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
                                               std::this_thread::sleep_for(
                                                   std::chrono::milliseconds(5));
                                           }),
                             "run 3", std::runtime_error);
        if (jobs == 1) CHECK(after.load() == 0);
        CHECK(after.load() < 96);
    }
}

TEST_CASE("runs scheduled side by side give the numbers of runs made one at a time") {
    // The discrete transformer with weights redrawn every layer, as the random-weights study
    // runs it, observing the motion between layers: n = 300 tokens give the observables'
    // blocked passes three blocks, which a run with all cores shares among its threads.
    auto config = [](scheme id, std::uint64_t seed) {
        run_config c;
        c.scheme_id = id;
        c.n = 300;
        c.d = 8;
        c.beta = std::sqrt(8.0);
        c.seed = seed;
        c.weights = weights_spec::parse("random-per-layer");
        c.integration = {integrator_kind::layers, 6.0, 1.0, 1e-8, 1e-10, 1};
        c.observe = {"pair_change", "angle"};
        return c;
    };
    const std::vector<std::pair<scheme, std::uint64_t>> runs{
        {scheme::post_ln, 1}, {scheme::peri_ln, 2}, {scheme::pre_ln, 3}};
    using series = std::vector<std::vector<double>>; // per run: mean_cos, pair_change, angle
    auto run_all = [&](int jobs) {
        std::vector<series> out(runs.size());
        schedule_runs(runs.size(), jobs, [&](std::size_t i, int threads) {
            run_config c = config(runs[i].first, runs[i].second);
            c.threads = threads;
            series s(3);
            simulation(c).run(
                [&](const state_type&, double, std::int64_t, const frame_observables& o) {
                    s[0].push_back(o.mean_cos);
                    s[1].push_back(o.pair_change);
                    s[2].push_back(o.angle);
                });
            out[i] = std::move(s);
        });
        return out;
    };
    const auto alone = run_all(1), side_by_side = run_all(2);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        REQUIRE(alone[i][0].size() == 7);
        CHECK(std::isnan(alone[i][1][0])); // the first frame has no previous one
        for (std::size_t f = 1; f < 7; ++f) {
            CHECK(alone[i][1][f] > 0.0);
            CHECK(alone[i][1][f] == side_by_side[i][1][f]); // bitwise
            CHECK(alone[i][2][f] == side_by_side[i][2][f]);
        }
        CHECK(alone[i][0] == side_by_side[i][0]);
    }
}
