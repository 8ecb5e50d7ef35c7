// Order of the fixed-step integrators and the accuracy of dopri5 (docs/model.md §6).
#include "test_support.hpp"

#include "nadyn/model/integrate.hpp"
#include "nadyn/model/reduced.hpp"

#include <doctest/doctest.h>

using namespace nadyn;

namespace {

state_type final_state(integrator_kind kind, const scheme_parameters& scheme, double dt, double T,
                       double rtol = 1e-8) {
    const std::size_t n = 12, d = 3;
    attention_system system({n, d, 1.5, false, scheme}, attention_weights{});
    state_type x = testing::uniform_start(n, d, 7, 1.2);
    integration_settings settings{kind, T, dt, rtol, rtol * 1e-2, 1 << 30};
    solver_statistics statistics;
    integrate(
        system, x, settings, [](const state_type&, const state_type&, double, std::int64_t) {},
        statistics);
    return x;
}

} // namespace

TEST_CASE("rk4 converges at order 4 for every scheme") {
    const double T = 2.0;
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        // t_switch = 1 falls on a step boundary of every dt below, so mix-ln's kink does not
        // lower the order.
        const scheme_parameters scheme{row.id, 0.8, 1.0};
        const state_type reference = final_state(integrator_kind::dopri5, scheme, 0.01, T, 1e-13);
        const double e1 = testing::max_abs_difference(
            final_state(integrator_kind::rk4, scheme, 0.1, T), reference);
        const double e2 = testing::max_abs_difference(
            final_state(integrator_kind::rk4, scheme, 0.05, T), reference);
        const double e3 = testing::max_abs_difference(
            final_state(integrator_kind::rk4, scheme, 0.025, T), reference);
        CAPTURE(e1);
        CAPTURE(e2);
        CAPTURE(e3);
        // Order 4: halving dt divides the error by 2^4 = 16, here within 10%.
        CHECK(e1 / e2 == doctest::Approx(16.0).epsilon(0.10));
        CHECK(e2 / e3 == doctest::Approx(16.0).epsilon(0.10));
    }
}

TEST_CASE("euler converges at order 1") {
    const scheme_parameters scheme{scheme::peri_ln, 1.0, 0.5};
    const double T = 1.0;
    const state_type reference = final_state(integrator_kind::dopri5, scheme, 0.01, T, 1e-13);
    const double e1 = testing::max_abs_difference(
        final_state(integrator_kind::euler, scheme, 0.004, T), reference);
    const double e2 = testing::max_abs_difference(
        final_state(integrator_kind::euler, scheme, 0.002, T), reference);
    CHECK(e1 / e2 == doctest::Approx(2.0).epsilon(0.05));
}

TEST_CASE("dopri5 meets its tolerance against the scalar ODE") {
    const std::size_t n = 5;
    const double beta = 3.0, T = 6.0;
    for (double rtol : {1e-6, 1e-9}) {
        CAPTURE(rtol);
        const scheme_parameters scheme{scheme::pre_ln, 1.0, 0.0};
        attention_system system({n, n, beta, false, scheme}, attention_weights{});
        state_type x = testing::symmetric_start(n, n);
        solver_statistics statistics;
        std::vector<double> times;
        integrate(
            system, x, {integrator_kind::dopri5, T, 0.1, rtol, rtol, 10},
            [&](const state_type&, const state_type&, double t, std::int64_t) {
                times.push_back(t);
            },
            statistics);
        // gamma = <theta_1, theta_2>, recomputed from the final state.
        double gamma = 0.0;
        for (std::size_t c = 0; c < n; ++c)
            gamma += x[c] * x[n + c];
        const auto reduced = integrate_reduced({scheme, double(n), beta, 1.0}, {T});
        // Global error of an adaptive method is a modest multiple of its local tolerance.
        CHECK(std::abs(gamma - (1.0 - reduced[0].u)) < 20.0 * rtol);
        CHECK(statistics.rejected_steps + statistics.accepted_steps > 0);
        // Frames land exactly on the output times every * dt = 1, and on T.
        REQUIRE(times.size() == 7);
        for (std::size_t i = 0; i < times.size(); ++i)
            CHECK(times[i] == static_cast<double>(i));
    }
}
