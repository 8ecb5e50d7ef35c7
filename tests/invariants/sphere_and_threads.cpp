// Invariants of every run: unit directions at every frame (docs/model.md §6), results
// independent of the OpenMP thread count (bitwise), permutation and rotation invariance.
#include "test_support.hpp"

#include "nadyn/experiment/run.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <omp.h>

using namespace nadyn;

namespace {

struct recorded_run {
    std::vector<state_type> states;
    std::vector<frame_observables> frames;
};

recorded_run record(const run_config& config) {
    simulation run(config);
    recorded_run out;
    run.run([&](const state_type& x, double, std::int64_t, const frame_observables& o) {
        out.states.push_back(x);
        out.frames.push_back(o);
    });
    return out;
}

} // namespace

TEST_CASE("directions stay on the sphere to 1e-12 at every frame: every scheme and integrator") {
    for (const auto& row : scheme_table) {
        for (integrator_kind kind : {integrator_kind::rk4, integrator_kind::dopri5,
                                     integrator_kind::euler, integrator_kind::layers}) {
            CAPTURE(row.name);
            CAPTURE(to_string(kind));
            run_config c;
            c.scheme_id = row.id;
            c.n = 20;
            c.d = 4;
            c.beta = 3.0;
            c.integration = {kind, 3.0, 0.05, 1e-7, 1e-9, 5};
            c.weights = weights_spec::parse("random");
            const recorded_run run = record(c);
            REQUIRE(run.frames.size() >= 2);
            for (const auto& f : run.frames)
                CHECK(f.norm_error <= 1e-12);
            for (const auto& x : run.states) {
                for (std::size_t k = 0; k < c.n; ++k) {
                    double norm2 = 0.0;
                    for (std::size_t a = 0; a < c.d; ++a)
                        norm2 += x[k * c.d + a] * x[k * c.d + a];
                    CHECK(std::abs(std::sqrt(norm2) - 1.0) <= 1e-12);
                }
            }
        }
    }
}

TEST_CASE("one, two and three threads give bitwise identical trajectories") {
    // n = 700 with blocks of 64 queries: 11 attention blocks and 6 observable blocks,
    // so every thread gets work; random weights and the causal mask exercise every path.
    // Three threads on two cores also checks an uneven split of the blocks.
    run_config c;
    c.scheme_id = scheme::peri_ln;
    c.n = 700;
    c.d = 5;
    c.block = 64;
    c.causal = true;
    c.weights = weights_spec::parse("random");
    c.integration = {integrator_kind::rk4, 0.2, 0.05, 1e-8, 1e-10, 2};
    const int process_threads = omp_get_max_threads();
    c.threads = 1;
    const recorded_run one = record(c);
    for (int threads : {2, 3}) {
        CAPTURE(threads);
        c.threads = threads;
        const recorded_run many = record(c);
        // The run's own count, recorded as used; the process's setting is left alone.
        REQUIRE(simulation(c).parameters().integer("threads") == threads);
        CHECK(omp_get_max_threads() == process_threads);
        REQUIRE(one.states.size() == many.states.size());
        for (std::size_t f = 0; f < one.states.size(); ++f) {
            CHECK(one.states[f] == many.states[f]); // operator== on doubles: bitwise
            // Bitwise, NaN included (step_error is NaN at frames without an estimate).
            const auto &a = one.frames[f].values, &b = many.frames[f].values;
            CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
        }
    }
}

TEST_CASE("permuting the tokens permutes the right-hand side") {
    const std::size_t n = 30, d = 6;
    state_type x = testing::uniform_start(n, d, 21, 1.3);
    // The permutation k -> (7k + 3) mod n (7 and 30 are coprime).
    state_type y(x.size());
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t p = (7 * k + 3) % n;
        for (std::size_t a = 0; a < d; ++a)
            y[p * d + a] = x[k * d + a];
        y[n * d + p] = x[n * d + k];
    }
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        attention_system system({n, d, 2.5, false, {row.id, 1.0, 0.5}}, attention_weights{});
        state_type fx(x.size()), fy(x.size());
        system(x, fx, 1.0);
        system(y, fy, 1.0);
        double worst = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t p = (7 * k + 3) % n;
            for (std::size_t a = 0; a < d; ++a)
                worst = std::max(worst, std::abs(fy[p * d + a] - fx[k * d + a]));
            worst = std::max(worst, std::abs(fy[n * d + p] - fx[n * d + k]));
        }
        CHECK(worst < 1e-14); // only the summation order differs
    }
}

TEST_CASE("rotating every token rotates the right-hand side (identity weights)") {
    const std::size_t n = 25, d = 3;
    state_type x = testing::uniform_start(n, d, 4, 0.8);
    // Rotation by 0.7 rad about the z axis, then 0.3 rad about x.
    const double c1 = std::cos(0.7), s1 = std::sin(0.7), c2 = std::cos(0.3), s2 = std::sin(0.3);
    const double R[3][3] = {{c1, -s1, 0}, {c2 * s1, c2 * c1, -s2}, {s2 * s1, s2 * c1, c2}};
    auto rotate = [&](const double* v, double* out) {
        for (int i = 0; i < 3; ++i)
            out[i] = R[i][0] * v[0] + R[i][1] * v[1] + R[i][2] * v[2];
    };
    state_type y = x;
    for (std::size_t k = 0; k < n; ++k)
        rotate(&x[k * d], &y[k * d]);
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        attention_system system({n, d, 4.0, false, {row.id, 1.3, 0.5}}, attention_weights{});
        state_type fx(x.size()), fy(x.size());
        system(x, fx, 0.2);
        system(y, fy, 0.2);
        double worst = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
            double rotated[3];
            rotate(&fx[k * d], rotated);
            for (std::size_t a = 0; a < d; ++a)
                worst = std::max(worst, std::abs(fy[k * d + a] - rotated[a]));
            worst = std::max(worst, std::abs(fy[n * d + k] - fx[n * d + k]));
        }
        CHECK(worst < 1e-13);
    }
}

TEST_CASE("the right-hand side of the directions is tangent to the sphere") {
    const std::size_t n = 40, d = 8;
    state_type x = testing::uniform_start(n, d, 9, 2.0);
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        attention_system system({n, d, 1.0, true, {row.id, 1.0, 0.0}}, attention_weights{});
        state_type f(x.size());
        system(x, f, 0.5);
        for (std::size_t k = 0; k < n; ++k) {
            double along = 0.0;
            for (std::size_t a = 0; a < d; ++a)
                along += x[k * d + a] * f[k * d + a];
            CHECK(std::abs(along) < 1e-15);
        }
    }
}
