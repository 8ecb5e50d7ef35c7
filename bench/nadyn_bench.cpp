// nadyn-bench: timings of the right-hand side, the RK4 step, the attention kernel and
// Eigen's GEMM, for scripts/benchmark.sh (which turns them into results/performance.md).
//
//   nadyn-bench table   --n 32,256 --d 3,64 [--budget S] [--reps R] [--threads T]
//   nadyn-bench gemm    --size 2048 [--reps R] [--threads T] [--precision double|float]
//   nadyn-bench exp     --count 64 [--reps R] [--threads T] [--precision double|float]
//   nadyn-bench threads --n 4096 --d 64 [--reps R]
//   nadyn-bench precision --n 1024,4096 --d 64,512 [--reps R] [--threads T]
//   nadyn-bench peer    --n N --d D --steps S [--dt DT] [--beta B] [--reps R] [--threads T]
//                       --out FILE
//   nadyn-bench observables --n 1024 --d 64 [--modes K] [--reps R] [--threads T]
//   nadyn-bench observed --n 64 --d 16 [--heads H] [--reps R]
//
// Every command prints one JSON object per line. Times are medians over repetitions; the
// same process measures the things that are compared (side by side, interleaved where it
// matters), so a second process on the machine affects both sides alike.
//
// Thread counts go to each call (run_config::threads, model_parameters::threads,
// attention_options::threads, num_threads clauses), as in a run of the library: the
// process's OpenMP setting is never changed. --threads defaults to the number of cores.
//
// The executable counts heap allocations (it interposes malloc), to report how many one
// RK4 step makes once its workspaces exist.
#include "nadyn/experiment/run.hpp"
#include "nadyn/model/attention.hpp"
#include "nadyn/model/initial.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/weights.hpp"

#include <boost/numeric/odeint.hpp>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

// ---- heap allocation counter (glibc: the __libc_* entry points stay reachable) ----------
// Not under AddressSanitizer, which owns malloc itself: allocations then read -1.
#if defined(__SANITIZE_ADDRESS__)
#define NADYN_BENCH_COUNTS_ALLOCATIONS 0
#else
#define NADYN_BENCH_COUNTS_ALLOCATIONS 1
#endif
namespace {
std::atomic<long> heap_allocations{0};
}
#if NADYN_BENCH_COUNTS_ALLOCATIONS
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}
extern "C" {
void* malloc(std::size_t size) {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_calloc(count, size);
}
void* realloc(void* p, std::size_t size) {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_realloc(p, size);
}
void free(void* p) {
    __libc_free(p);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    *out = __libc_memalign(alignment, size);
    return *out ? 0 : 12; // ENOMEM
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_memalign(alignment, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_memalign(alignment, size);
}
}

#endif

namespace {

using namespace nadyn;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct arguments {
    std::map<std::string, std::string> values;
    std::string get(const std::string& key, const std::string& fallback) const {
        auto it = values.find(key);
        return it == values.end() ? fallback : it->second;
    }
    double number(const std::string& key, double fallback) const {
        auto it = values.find(key);
        return it == values.end() ? fallback : std::stod(it->second);
    }
    std::vector<std::size_t> sizes(const std::string& key, const std::string& fallback) const {
        std::vector<std::size_t> out;
        std::stringstream in(get(key, fallback));
        for (std::string item; std::getline(in, item, ',');)
            out.push_back(std::stoul(item));
        return out;
    }
};

// The benchmark system: peri-ln, beta = 4, identity weights, uniform start (seed 1), the
// same start as `nadyn simulate --init uniform --seed 1`.
run_config bench_config(std::size_t n, std::size_t d, double beta, double dt, std::int64_t steps,
                        int threads) {
    run_config c;
    c.scheme_id = scheme::peri_ln;
    c.n = n;
    c.d = d;
    c.beta = beta;
    c.seed = 1;
    c.integration.kind = integrator_kind::rk4;
    c.integration.dt = dt;
    c.integration.T = dt * static_cast<double>(steps);
    c.integration.every = std::max<std::int64_t>(steps, 1);
    c.threads = threads;
    return c;
}

model_parameters model_of(const run_config& c) {
    return c.model(c.threads);
}

// Integrates `steps` RK4 steps through the library's run loop (no observer work).
double time_integrate(const run_config& c, const simulation& start, state_type& x) {
    attention_system system(model_of(c), start.weights(), c.block);
    x = start.state();
    solver_statistics statistics;
    const frame_observer none = [](const state_type&, const state_type&, double, std::int64_t) {};
    const auto began = clock_type::now();
    integrate(system, x, c.resolved_integration(), none, statistics);
    return seconds_since(began);
}

// Heap allocations per RK4 step once the workspaces exist: the run loop's own stepping
// (odeint's runge_kutta4 + projection), after one warm-up step.
double allocations_per_step(const run_config& c, const simulation& start, int steps) {
    attention_system system(model_of(c), start.weights(), c.block);
    state_type x = start.state();
    boost::numeric::odeint::runge_kutta4<state_type> stepper;
    double t = 0.0;
    auto step = [&] {
        system.begin_step(t);
        stepper.do_step(std::ref(system), x, t, c.integration.dt);
        project_to_sphere(directions(x), c.n, c.d, c.threads);
        t += c.integration.dt;
    };
    step();
    const long before = heap_allocations.load();
    for (int i = 0; i < steps; ++i)
        step();
    if (!NADYN_BENCH_COUNTS_ALLOCATIONS) return -1.0;
    return static_cast<double>(heap_allocations.load() - before) / steps;
}

void print_json(const std::vector<std::pair<std::string, std::string>>& fields) {
    std::string line = "{";
    for (std::size_t i = 0; i < fields.size(); ++i)
        line += (i ? ", \"" : "\"") + fields[i].first + "\": " + fields[i].second;
    std::cout << line << "}" << std::endl;
}

std::string num(double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.6g", v);
    return buffer;
}
std::string str(const std::string& s) {
    return "\"" + s + "\"";
}

// Repeats `run` (which returns seconds) until `reps` samples or `budget` seconds are used,
// at least once; returns the median.
double timed(const std::function<double()>& run, int reps, double budget, int* done = nullptr) {
    std::vector<double> samples;
    double used = 0.0;
    while (static_cast<int>(samples.size()) < reps && (samples.empty() || used < budget)) {
        samples.push_back(run());
        used += samples.back();
    }
    if (done) *done = static_cast<int>(samples.size());
    return median(samples);
}

// C = A B for square n x n matrices, the columns of B split over the threads (Eigen's own
// threading is off in nadyn, EIGEN_DONT_PARALLELIZE): the machine's GEMM rate, in the
// arithmetic of Scalar (double, or float for the rooflines of --precision float runs). The
// team's size is the region's num_threads clause, not a process-wide setting.
template <class Scalar> double gemm_rate(std::size_t size, int threads, int reps) {
    using square = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const auto n = static_cast<Eigen::Index>(size);
    const square a = square::Random(n, n), b = square::Random(n, n);
    square c(n, n);
    auto run = [&] {
        const auto began = clock_type::now();
#pragma omp parallel num_threads(threads)
        {
            const Eigen::Index parts = omp_get_num_threads(), part = omp_get_thread_num();
            const Eigen::Index first = n * part / parts, last = n * (part + 1) / parts;
            c.middleCols(first, last - first).noalias() = a * b.middleCols(first, last - first);
        }
        return seconds_since(began);
    };
    run(); // warm-up: page faults, packing buffers
    const double s = timed(run, reps, 1e9);
    return 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size) /
           s / 1e9;
}

// Whether `arithmetic` (--precision) is one nadyn computes in; if not, says so for `command`.
bool known_precision(const std::string& command, const std::string& arithmetic) {
    if (arithmetic == "double" || arithmetic == "float") return true;
    std::cerr << "nadyn-bench " << command << ": unknown precision '" << arithmetic
              << "'; valid choices: double, float\n";
    return false;
}

int command_gemm(const arguments& args) {
    const auto size = static_cast<std::size_t>(args.number("size", 2048));
    const int reps = static_cast<int>(args.number("reps", 5));
    const std::string arithmetic = args.get("precision", "double");
    if (!known_precision("gemm", arithmetic)) return 2;
    for (const auto& t : args.sizes("threads", "1,2")) {
        const int threads = static_cast<int>(t);
        const double rate = arithmetic == "float" ? gemm_rate<float>(size, threads, reps)
                                                  : gemm_rate<double>(size, threads, reps);
        print_json({{"what", str("gemm")},
                    {"precision", str(arithmetic)},
                    {"size", num(static_cast<double>(size))},
                    {"threads", num(static_cast<double>(t))},
                    {"gflops", num(rate)}});
    }
    return 0;
}

// Exponentials per second (the fastest of `reps` repetitions) of the exponential nadyn's
// softmax rows use (double: detail::exp_in_place, whose groups exp_shifted_row takes; float:
// detail::exp_nonpositive_in_place, the float small-n rows' loop), on rows of `count` values
// in [-20, 0] (a softmax's logits minus their largest), each thread on rows of its own in L1,
// 64-byte aligned as the kernel's rows are (from a malloc'd vector the float rate fell 3x
// whenever the row straddled cache lines the copy had just written): a row is copied in, then
// exponentiated in place, as a softmax row is shifted, then exponentiated. The rate of the
// exponentials when nothing else runs: with it the benchmarks put a floor under a run's time
// beside the rooflines of its flops (bench/ensemble.py, bench/simuformer.py).
template <class Scalar> double exp_rate(std::size_t count, int threads, int reps) {
    constexpr std::size_t rows = 200000; // per thread and repetition: about 5 ms
    constexpr std::size_t line = 64;
    const std::size_t padded = (count * sizeof(Scalar) + line - 1) / line * line;
    std::vector<Scalar> source(count);
    for (std::size_t j = 0; j < count; ++j)
        source[j] =
            static_cast<Scalar>(-20.0 * static_cast<double>(j) / static_cast<double>(count));
    // Each thread's row in its own cache lines of one aligned block.
    const std::unique_ptr<void, decltype(&std::free)> block(
        std::aligned_alloc(line, padded * static_cast<std::size_t>(threads)), &std::free);
    if (!block) throw std::bad_alloc();
    double sink = 0.0;
    auto run = [&] {
        const auto began = clock_type::now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        {
            Scalar* row =
                reinterpret_cast<Scalar*>(static_cast<char*>(block.get()) +
                                          padded * static_cast<std::size_t>(omp_get_thread_num()));
            for (std::size_t r = 0; r < rows; ++r) {
                std::copy(source.begin(), source.end(), row);
                if constexpr (std::is_same_v<Scalar, float>)
                    nadyn::detail::exp_nonpositive_in_place(row, count);
                else
                    nadyn::detail::exp_in_place(row, count);
                sink += static_cast<double>(row[r % count]);
            }
        }
        return seconds_since(began);
    };
    run(); // warm-up
    // The fastest repetition, not the median: the floors built on this rate are lower bounds
    // of a run's time, so they take the best the exponential was seen to do.
    double s = run();
    for (int r = 1; r < reps; ++r)
        s = std::min(s, run());
    if (!(sink > 0.0))
        throw std::runtime_error("exp_rate: the exponentials summed to " + std::to_string(sink));
    return static_cast<double>(rows) * static_cast<double>(count) * threads / s;
}

int command_exp(const arguments& args) {
    const double values = args.number("count", 64);
    const int reps = static_cast<int>(args.number("reps", 7));
    const std::string arithmetic = args.get("precision", "double");
    if (!known_precision("exp", arithmetic)) return 2;
    if (!(values >= 1.0)) { // checked as a double: a negative one cast to size_t is undefined
        std::cerr << "nadyn-bench exp: --count must be at least 1\n";
        return 2;
    }
    const auto count = static_cast<std::size_t>(values);
    for (const auto& t : args.sizes("threads", "1,2")) {
        const int threads = static_cast<int>(t);
        const double rate = arithmetic == "float" ? exp_rate<float>(count, threads, reps)
                                                  : exp_rate<double>(count, threads, reps);
        print_json({{"what", str("exp")},
                    {"precision", str(arithmetic)},
                    {"count", num(static_cast<double>(count))},
                    {"threads", num(static_cast<double>(t))},
                    {"per_second", num(rate)}});
    }
    return 0;
}

int command_table(const arguments& args) {
    const int reps = static_cast<int>(args.number("reps", 5));
    const double budget = args.number("budget", 10.0); // seconds per measurement
    const double skip_above = args.number("skip-above", 60.0);
    const int threads = static_cast<int>(args.number("threads", omp_get_num_procs()));
    const double rate_guess = args.number("rate-guess", 30.0); // GFLOP/s, to skip early
    for (std::size_t n : args.sizes("n", "32,256,1024,4096,16384")) {
        for (std::size_t d : args.sizes("d", "3,64,512")) {
            const double flops = 4.0 * double(n) * double(n) * double(d);
            const double step_guess = 4.0 * flops / (rate_guess * 1e9);
            if (step_guess > skip_above) {
                print_json({{"what", str("table")},
                            {"n", num(double(n))},
                            {"d", num(double(d))},
                            {"skipped", str("estimated RK4 step " + num(step_guess) + " s")}});
                continue;
            }
            const run_config c = bench_config(n, d, 4.0, 0.01, 1, threads);
            const simulation start(c);
            state_type x = start.state(), dxdt(x.size());

            attention_kernel kernel(n, d);
            std::vector<double> a(n * d);
            const attention_options options{c.beta, false, precision::double_precision, threads};
            kernel.compute(x.data(), start.weights(), options, a.data()); // warm-up
            int kernel_reps = 0;
            const double kernel_s = timed(
                [&] {
                    const auto began = clock_type::now();
                    kernel.compute(x.data(), start.weights(), options, a.data());
                    return seconds_since(began);
                },
                reps, budget, &kernel_reps);

            attention_system system(model_of(c), start.weights(), c.block);
            system(x, dxdt, 0.0); // warm-up
            const double rhs_s = timed(
                [&] {
                    const auto began = clock_type::now();
                    system(x, dxdt, 0.0);
                    return seconds_since(began);
                },
                reps, budget);

            // The marginal cost of an RK4 step through integrate(): `steps` steps (enough for
            // ~0.2 s, at least 1) and twice as many, both with frames at the start and the
            // end only, so the frames' own work (the step-error probe of docs/model.md §6 and
            // the last frame's evaluation) cancels in the difference.
            const auto steps =
                static_cast<std::int64_t>(std::clamp(0.2 / (4.0 * rhs_s), 1.0, 2000.0));
            const run_config cs = bench_config(n, d, 4.0, 0.01, steps, threads);
            const run_config cs2 = bench_config(n, d, 4.0, 0.01, 2 * steps, threads);
            const simulation start_steps(cs), start_double(cs2);
            state_type y;
            const double once =
                timed([&] { return time_integrate(cs, start_steps, y); }, reps, budget);
            const double twice =
                timed([&] { return time_integrate(cs2, start_double, y); }, reps, budget);
            const double step_s = (twice - once) / static_cast<double>(steps);
            const double allocations = rhs_s < 0.05 ? allocations_per_step(c, start, 20)
                                                    : allocations_per_step(c, start, 1);

            print_json({{"what", str("table")},
                        {"n", num(double(n))},
                        {"d", num(double(d))},
                        {"threads", num(threads)},
                        {"rhs_ms", num(rhs_s * 1e3)},
                        {"step_ms", num(step_s * 1e3)},
                        {"kernel_ms", num(kernel_s * 1e3)},
                        {"kernel_gflops", num(flops / kernel_s / 1e9)},
                        {"kernel_path", str(std::string(to_string(kernel.last_path())))},
                        {"reps", num(kernel_reps)},
                        {"allocations_per_step", num(allocations)}});
        }
    }
    return 0;
}

// The kernel in double (its default path) and in single precision (--precision float),
// interleaved, and the float result's largest deviation relative to max |A|.
int command_precision(const arguments& args) {
    const int reps = static_cast<int>(args.number("reps", 5));
    const int threads = static_cast<int>(args.number("threads", omp_get_num_procs()));
    for (std::size_t n : args.sizes("n", "1024,4096")) {
        for (std::size_t d : args.sizes("d", "64,512")) {
            const run_config c = bench_config(n, d, 4.0, 0.01, 1, threads);
            const simulation start(c);
            const state_type x = start.state();
            attention_kernel kernel(n, d);
            std::vector<double> in_double(n * d), in_float(n * d);
            const attention_options double_options{c.beta, false, precision::double_precision,
                                                   threads};
            const attention_options float_options{c.beta, false, precision::single_precision,
                                                  threads};
            kernel.compute(x.data(), start.weights(), double_options, in_double.data());
            const auto double_path = kernel.last_path();
            kernel.compute(x.data(), start.weights(), float_options, in_float.data());
            std::vector<double> double_s, float_s;
            for (int r = 0; r < reps; ++r) {
                auto began = clock_type::now();
                kernel.compute(x.data(), start.weights(), double_options, in_double.data());
                double_s.push_back(seconds_since(began));
                began = clock_type::now();
                kernel.compute(x.data(), start.weights(), float_options, in_float.data());
                float_s.push_back(seconds_since(began));
            }
            double deviation = 0.0, scale = 0.0;
            for (std::size_t i = 0; i < n * d; ++i) {
                deviation = std::max(deviation, std::abs(in_float[i] - in_double[i]));
                scale = std::max(scale, std::abs(in_double[i]));
            }
            const double flops = 4.0 * double(n) * double(n) * double(d);
            print_json({{"what", str("precision")},
                        {"n", num(double(n))},
                        {"d", num(double(d))},
                        {"threads", num(threads)},
                        {"double_ms", num(median(double_s) * 1e3)},
                        {"double_path", str(std::string(to_string(double_path)))},
                        {"float_ms", num(median(float_s) * 1e3)},
                        {"float_gflops", num(flops / median(float_s) / 1e9)},
                        {"speedup", num(median(double_s) / median(float_s))},
                        {"relative_deviation", num(deviation / scale)},
                        {"reps", num(reps)}});
        }
    }
    return 0;
}

// The right-hand side at 1 and at 2 threads, interleaved (1, 2, 1, 2, ...): one system per
// thread count (the count is part of a system's model, as in a run).
int command_threads(const arguments& args) {
    const auto n = static_cast<std::size_t>(args.number("n", 4096));
    const auto d = static_cast<std::size_t>(args.number("d", 64));
    const int reps = static_cast<int>(args.number("reps", 7));
    const run_config c = bench_config(n, d, 4.0, 0.01, 1, 1);
    const simulation start(c);
    state_type x = start.state(), dxdt(x.size());
    attention_system one_thread(model_of(c), start.weights(), c.block);
    attention_system two_threads(model_of(bench_config(n, d, 4.0, 0.01, 1, 2)), start.weights(),
                                 c.block);
    auto system_of = [&](int t) -> attention_system& { return t == 1 ? one_thread : two_threads; };
    std::vector<double> one, two;
    for (int t : {1, 2}) // warm-up (workspaces)
        system_of(t)(x, dxdt, 0.0);
    state_type reference;
    for (int r = 0; r < reps; ++r) {
        for (int t : {1, 2}) {
            const auto began = clock_type::now();
            system_of(t)(x, dxdt, 0.0);
            (t == 1 ? one : two).push_back(seconds_since(began));
            if (reference.empty()) reference = dxdt;
            if (dxdt != reference) {
                std::cerr << "nadyn-bench: the right-hand side changed with the thread count\n";
                return 1;
            }
        }
    }
    print_json({{"what", str("threads")},
                {"n", num(double(n))},
                {"d", num(double(d))},
                {"rhs_ms_1", num(median(one) * 1e3)},
                {"rhs_ms_2", num(median(two) * 1e3)},
                {"speedup", num(median(one) / median(two))},
                {"rhs_ms_1_best", num(*std::min_element(one.begin(), one.end()) * 1e3)},
                {"rhs_ms_2_best", num(*std::min_element(two.begin(), two.end()) * 1e3)},
                {"speedup_best", num(*std::min_element(one.begin(), one.end()) /
                                     *std::min_element(two.begin(), two.end()))},
                {"reps", num(reps)},
                {"bitwise_equal", "true"}});
    return 0;
}

// One peer-comparison case: RK4 from the uniform start (seed 1), the final state written
// as raw doubles (n x d directions, then n magnitudes).
int command_peer(const arguments& args) {
    const auto n = static_cast<std::size_t>(args.number("n", 32));
    const auto d = static_cast<std::size_t>(args.number("d", 3));
    const auto steps = static_cast<std::int64_t>(args.number("steps", 100));
    const int reps = static_cast<int>(args.number("reps", 5));
    const int threads = static_cast<int>(args.number("threads", omp_get_num_procs()));
    const run_config c =
        bench_config(n, d, args.number("beta", 4.0), args.number("dt", 0.01), steps, threads);
    const simulation start(c);
    // Twice the steps as well: the difference is the marginal cost of `steps` RK4 steps, in
    // which the frames' own work (the step-error probe at the first and last frame, the last
    // frame's evaluation) cancels; the peers time their step loop only.
    const run_config c2 =
        bench_config(n, d, args.number("beta", 4.0), args.number("dt", 0.01), 2 * steps, threads);
    const simulation start_double(c2);
    state_type x, scratch;
    time_integrate(c, start, x); // warm-up
    std::vector<double> samples, doubled;
    for (int r = 0; r < reps; ++r) {
        samples.push_back(time_integrate(c, start, x));
        doubled.push_back(time_integrate(c2, start_double, scratch));
    }
    std::ofstream out(args.get("out", "final.bin"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(x.data()),
              static_cast<std::streamsize>(x.size() * sizeof(double)));
    std::sort(samples.begin(), samples.end());
    std::string all = "[";
    for (std::size_t i = 0; i < samples.size(); ++i)
        all += (i ? ", " : "") + num(samples[i]);
    print_json(
        {{"what", str("peer")},
         {"backend", str("nadyn")},
         {"n", num(double(n))},
         {"d", num(double(d))},
         {"steps", num(double(steps))},
         {"threads", num(threads)},
         {"seconds", num(median(doubled) - median(samples))},
         {"seconds_run", num(median(samples))},
         {"all", all + "]"},
         {"allocations_per_step", num(allocations_per_step(c, start, steps > 20 ? 20 : 1))}});
    return 0;
}

// The frame observables against the dynamics they describe, at one n, d: one right-hand
// side evaluation, the default observables (compute()), and compute() with each optional
// observable of the frame (pair_density, modes of K degrees: both in compute()'s Gram
// blocks; effective_rank: an SVD of the directions). Medians, interleaved per repetition so
// that a second process on the machine slows every side alike.
int command_observables(const arguments& args) {
    const std::size_t n = args.sizes("n", "1024").at(0), d = args.sizes("d", "64").at(0);
    const std::size_t K = args.sizes("modes", "8").at(0);
    const int reps = std::stoi(args.get("reps", "15"));
    const int threads = std::stoi(args.get("threads", std::to_string(omp_get_num_procs())));
    const run_config c = bench_config(n, d, 4.0, 0.01, 1, threads);
    const simulation start(c);
    attention_system system(model_of(c), start.weights(), c.block);
    const state_type x = start.state();
    state_type dxdt(x.size());
    const double* theta = directions(x);
    const double* r = magnitudes(x, n, d);
    const std::vector<double> initial(theta, theta + n * d);
    observables_calculator plain(n, d, initial, c.cluster_eps, 0, threads);
    observables_calculator pairs(n, d, initial, c.cluster_eps, 0, threads);
    pairs.measure_pairs(true);
    observables_calculator modes(n, d, initial, c.cluster_eps, 0, threads);
    modes.measure_modes(K);
    std::map<std::string, std::vector<double>> samples;
    auto sample = [&](const std::string& name, const std::function<void()>& work) {
        const auto began = clock_type::now();
        work();
        samples[name].push_back(seconds_since(began));
    };
    double sink = 0.0; // keeps the results alive
    for (int rep = 0; rep < reps; ++rep) {
        sample("rhs", [&] { system(x, dxdt, 0.0); });
        sample("observables", [&] { sink += plain.compute(theta, r, dxdt.data()).min_cos; });
        sample("with_pair_density",
               [&] { sink += pairs.compute(theta, r, dxdt.data()).pair_density; });
        sample("with_modes", [&] { sink += modes.compute(theta, r, dxdt.data()).modes[0]; });
        sample("effective_rank", [&] { sink += effective_rank(theta, n, d); });
    }
    const double rhs = median(samples["rhs"]), base = median(samples["observables"]);
    const double pair_density = median(samples["with_pair_density"]) - base;
    const double mode_sums = median(samples["with_modes"]) - base;
    const double rank = median(samples["effective_rank"]);
    // A default run writes a frame every 20 RK4 steps (about 100 frames over T = 20 at
    // dt = 0.01): 80 right-hand sides per frame.
    const double frame_dynamics = 80.0 * rhs;
    print_json({{"what", str("observables")},
                {"n", num(double(n))},
                {"d", num(double(d))},
                {"modes", num(double(K))},
                {"threads", num(threads)},
                {"rhs_seconds", num(rhs)},
                {"observables_seconds", num(base)},
                {"pair_density_seconds", num(pair_density)},
                {"modes_seconds", num(mode_sums)},
                {"effective_rank_seconds", num(rank)},
                {"share_of_default_frame_pair_density", num(pair_density / frame_dynamics)},
                {"share_of_default_frame_modes", num(mode_sums / frame_dynamics)},
                {"share_of_default_frame_effective_rank", num(rank / frame_dynamics)},
                {"checksum", num(sink)}});
    return 0;
}

// A frame's evaluation of the attention against a plain one, at one n, d and head count
// (beta = 4, make_weights' Gaussian Q, K, V per head, the uniform start of seed 1, one
// thread): the kernel's call that also takes each row's attention entropy from its own
// logits and exponentials (attention_kernel::observe_next_call, the frames of a run that
// records attention_entropy) and the call that does not. Medians of the time per call over
// `reps` batches of 20 calls, the two kinds interleaved batch by batch.
int command_observed(const arguments& args) {
    const double n_value = args.number("n", 64), d_value = args.number("d", 16);
    const double heads_value = args.number("heads", 8);
    const int reps = static_cast<int>(args.number("reps", 100));
    // Checked as doubles: a negative one cast to size_t is undefined.
    if (!(n_value >= 2.0) || !(d_value >= 1.0) || !(heads_value >= 1.0) || reps < 1) {
        std::cerr << "nadyn-bench observed: --n must be at least 2, --d, --heads and --reps at "
                     "least 1\n";
        return 2;
    }
    const auto n = static_cast<std::size_t>(n_value), d = static_cast<std::size_t>(d_value);
    const auto heads = static_cast<std::size_t>(heads_value);
    // The weights of `weights = "gaussian"` with --heads H, seed 1 (the ensemble's runs).
    weights_spec spec = weights_spec::parse("gaussian");
    spec.heads = heads;
    const attention_weights weights = make_weights(spec, d, 1);
    const initial_state start = make_initial(initial_spec::parse("uniform"), n, d, 1, 1.0);
    attention_options options{4.0, false};
    options.threads = 1;
    attention_kernel kernel(n, d);
    std::vector<double> out(n * d);
    constexpr int batch = 20;
    double sink = 0.0;
    auto calls = [&](bool observed) {
        const auto began = clock_type::now();
        for (int i = 0; i < batch; ++i) {
            if (observed) kernel.observe_next_call();
            kernel.compute(start.theta.data(), weights, options, out.data());
            sink += out[static_cast<std::size_t>(i) % out.size()];
            if (observed && !kernel.observed_entropy())
                throw std::runtime_error("the kernel's path for n = " + std::to_string(n) +
                                         ", d = " + std::to_string(d) +
                                         " does not take the entropy in its evaluation");
        }
        return seconds_since(began) / batch;
    };
    calls(false); // warm-up: the kernel's workspaces
    calls(true);
    std::vector<double> plain, observed;
    for (int r = 0; r < reps; ++r) {
        plain.push_back(calls(false));
        observed.push_back(calls(true));
    }
    const double plain_seconds = median(plain), observed_seconds = median(observed);
    print_json({{"what", str("observed")},
                {"n", num(static_cast<double>(n))},
                {"d", num(static_cast<double>(d))},
                {"heads", num(static_cast<double>(heads))},
                {"plain_seconds", num(plain_seconds)},
                {"observed_seconds", num(observed_seconds)},
                {"overhead", num(observed_seconds / plain_seconds - 1.0)},
                {"checksum", num(sink)}});
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr
            << "usage: nadyn-bench "
               "table|gemm|exp|threads|precision|peer|observables|observed [--key value ...]\n";
        return 2;
    }
    const std::string command = argv[1];
    arguments args;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (std::strncmp(argv[i], "--", 2) != 0) {
            std::cerr << "nadyn-bench: expected --key value, got " << argv[i] << "\n";
            return 2;
        }
        args.values[argv[i] + 2] = argv[i + 1];
    }
    try {
        if (command == "table") return command_table(args);
        if (command == "gemm") return command_gemm(args);
        if (command == "exp") return command_exp(args);
        if (command == "threads") return command_threads(args);
        if (command == "precision") return command_precision(args);
        if (command == "peer") return command_peer(args);
        if (command == "observables") return command_observables(args);
        if (command == "observed") return command_observed(args);
    } catch (const std::exception& e) {
        std::cerr << "nadyn-bench: " << e.what() << "\n";
        return 1;
    }
    std::cerr << "nadyn-bench: unknown command " << command << "\n";
    return 2;
}
