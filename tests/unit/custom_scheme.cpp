// A scheme is one unit: a struct in one file and a line in schemes/list.hpp. This scheme
// exists only here, outside the library's list, and runs through the same right-hand side,
// integrators (fixed steps, dopri5 with its breakpoint, the discrete layers) and optional
// parts (the clock) as the library's, by its compiled operations (scheme_operations.hpp).
#include "nadyn/model/growth_rates.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/scheme_operations.hpp"
#include "nadyn/model/schemes/list.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

using namespace nadyn;

namespace {

// Constant speed: 1 / s_k = c before t_switch and 2c from then on, r_k constant. Two tokens on
// the circle at beta = 0 with Q = K = V = I see A_k = (theta_1 + theta_2) / 2, so each moves
// towards the other at c sin(phi) / 2 and the angle between them obeys phi' = -c sin(phi):
// tan(phi / 2) = tan(phi_0 / 2) e^{-tau(t)}, tau(t) = c min(t, t_s) + 2c max(t - t_s, 0).
struct constant_speed {
    static constexpr double c = 0.5;
    static constexpr scheme_row row{.name = "constant-speed",
                                    .layer = "x <- LN(x + c h Attn(x))",
                                    .speed = "1 / c, then 1 / 2c",
                                    .radial_rate = "0"};

    static double speed_at(const scheme_parameters& p, double t) {
        return t < p.t_switch ? c : 2.0 * c;
    }
    static token_rates rates(const scheme_parameters& p, double, double step_start, double, double,
                             double) {
        return {speed_at(p, step_start), 0.0};
    }
    static layer_step layer(const scheme_parameters& p, double t, double h, double, double) {
        return {1.0, speed_at(p, t) * h, true};
    }
    static std::optional<double> breakpoint(const scheme_parameters& p) { return p.t_switch; }
    static double clock(const scheme_parameters& p, double t, double, double) {
        return c * std::min(t, p.t_switch) + 2.0 * c * std::max(t - p.t_switch, 0.0);
    }
};

constexpr double phi0 = 2.0, t_switch = 0.7, T = 2.0;

double closed_form_angle(double t) {
    scheme_parameters p;
    p.t_switch = t_switch;
    return 2.0 * std::atan(std::tan(phi0 / 2.0) * std::exp(-constant_speed::clock(p, t, 0, 0)));
}

struct run_end {
    double angle, r1, r2;
};

run_end run(integrator_kind kind, double dt) {
    scheme_parameters scheme = custom_scheme<constant_speed>();
    scheme.t_switch = t_switch;
    attention_system system({2, 2, 0.0, false, scheme}, attention_weights{});
    state_type x{1.0, 0.0, std::cos(phi0), std::sin(phi0), 1.5, 0.5};
    solver_statistics statistics;
    const integration_outcome outcome = integrate(
        system, x, {kind, T, dt, 1e-12, 1e-14, 1 << 30},
        [](const state_type&, const state_type&, double, std::int64_t) {}, statistics);
    REQUIRE(outcome == integration_outcome::complete);
    const double cross = x[0] * x[3] - x[1] * x[2], dot = x[0] * x[2] + x[1] * x[3];
    return {std::atan2(cross, dot), x[4], x[5]};
}

} // namespace

TEST_CASE("a scheme outside the list: its row, and the optional parts it has") {
    scheme_parameters p = custom_scheme<constant_speed>();
    p.t_switch = 2.0;
    CHECK(info(p).name == "constant-speed");
    CHECK(info(p).has_breakpoint);
    CHECK(info(p).has_clock);
    CHECK_FALSE(info(p).has_initial_velocity);
    CHECK_FALSE(info(p).has_terminal_law);
    CHECK(rates(p, 0.0, 0.0, 3.0, 0.2, 0.4).inverse_speed == constant_speed::c);
    CHECK(rates(p, 2.5, 2.0, 3.0, 0.2, 0.4).inverse_speed == 2.0 * constant_speed::c);
    CHECK(breakpoint(p) == 2.0);
    CHECK(uniform_clock(p, 1.5, 1.0, 2, attention_kind::softmax) ==
          doctest::Approx(constant_speed::c * 1.5));
    reduced_parameters reduced;
    reduced.scheme = p;
    CHECK_THROWS_WITH_AS(initial_velocity_closed_form(reduced),
                         "scheme 'constant-speed' has no closed form of gamma'(0)", input_error);
    // The library's list knows only its own names.
    CHECK_THROWS_AS(parse_scheme("constant-speed"), input_error);
}

TEST_CASE("a scheme outside the list runs through rk4 and dopri5 to its closed form") {
    const double exact = closed_form_angle(T);
    // The switch lands on a step boundary of rk4 (dt = 0.01) and is a breakpoint of dopri5.
    const run_end rk4 = run(integrator_kind::rk4, 0.01);
    CHECK(rk4.angle == doctest::Approx(exact).epsilon(1e-9));
    const run_end dopri5 = run(integrator_kind::dopri5, 0.01);
    CHECK(dopri5.angle == doctest::Approx(exact).epsilon(1e-9));
    CHECK(rk4.r1 == 1.5); // r_k constant
    CHECK(rk4.r2 == 0.5);
}

TEST_CASE("a scheme outside the list runs through the discrete layers at order 1") {
    const double exact = closed_form_angle(T);
    const double e1 = std::abs(run(integrator_kind::layers, 0.01).angle - exact);
    const double e2 = std::abs(run(integrator_kind::layers, 0.005).angle - exact);
    CAPTURE(e1);
    CAPTURE(e2);
    CHECK(e1 < 1e-2);
    CHECK(e1 / e2 == doctest::Approx(2.0).epsilon(0.05));
}

TEST_CASE("the list generates the table: one row per scheme struct, ids by position") {
    REQUIRE(scheme_table.size() == all_schemes::size);
    for (std::size_t i = 0; i < scheme_table.size(); ++i) {
        CAPTURE(scheme_table[i].name);
        CHECK(static_cast<std::size_t>(scheme_table[i].id) == i);
        CHECK(parse_scheme(scheme_table[i].name) == scheme_table[i].id);
        CHECK(&info(scheme_table[i].id) == &scheme_table[i]);
    }
    CHECK(info(scheme_id<schemes::mix_ln>).name == "mix-ln");
    CHECK(info(scheme::mix_ln).has_breakpoint);
    CHECK_FALSE(info(scheme::no_norm).has_clock);
    CHECK_FALSE(info(scheme::no_norm).has_terminal_law);
}
