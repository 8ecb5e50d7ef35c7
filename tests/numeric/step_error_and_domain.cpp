// The run's own checks on its numbers (integrate.hpp, diagnostics.hpp): a magnitude that
// leaves r > 0 is a numerical fault with the last good frame kept; the step-doubling
// estimate of a fixed step's local error has the order of the method, leaves the trajectory
// untouched, and warns once (through the sink, not on stderr) when it exceeds its bound;
// a configuration whose switch never happens or whose step count is absurd is warned about.
#include "test_support.hpp"

#include "nadyn/model/diagnostics.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/scheme.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace nadyn;

namespace {

struct recorded_run {
    std::vector<double> times, step_errors, r_min;
    state_type final_state;
    std::vector<std::string> warnings;
    std::string fault; // the numerical_fault's message, empty if none
};

recorded_run run(integrator_kind kind, const scheme_parameters& scheme, double dt, double T,
                 const attention_weights& weights, state_type x, std::int64_t every, std::size_t n,
                 std::size_t d, double beta = 1.5) {
    attention_system system({n, d, beta, false, scheme}, weights);
    recorded_run out;
    integration_settings settings{kind, T, dt, 1e-8, 1e-10, every};
    settings.warn = [&out](const std::string& w) { out.warnings.push_back(w); };
    solver_statistics statistics;
    const frame_observer observer = [&](const state_type& s, const state_type&, double t,
                                        std::int64_t) {
        out.times.push_back(t);
        out.step_errors.push_back(statistics.step_error);
        const double* r = magnitudes(s, n, d);
        double smallest = r[0];
        for (std::size_t k = 1; k < n; ++k)
            smallest = std::min(smallest, r[k]);
        out.r_min.push_back(smallest);
    };
    try {
        integrate(system, x, settings, observer, statistics);
    } catch (const numerical_fault& fault) {
        out.fault = fault.what();
    }
    out.final_state = x;
    return out;
}

attention_weights negative_identity_v(std::size_t d) {
    attention_weights w;
    w.heads.front().V =
        -matrix::Identity(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
    return w;
}

} // namespace

TEST_CASE("a magnitude driven through zero stops the run as a numerical fault") {
    // pre-ln with V = -I: dr_k/dt = <theta_k, A_k> < 0 (A_k is minus a convex combination
    // that includes theta_k itself), so r reaches zero in finite time from r0 = 1.
    const std::size_t n = 6, d = 4;
    for (const scheme s : {scheme::pre_ln, scheme::peri_ln}) {
        CAPTURE(info(s).name);
        for (const integrator_kind kind :
             {integrator_kind::rk4, integrator_kind::euler, integrator_kind::dopri5}) {
            CAPTURE(to_string(kind));
            const recorded_run r = run(kind, {s, 1.0, 0.0}, 0.01, 20.0, negative_identity_v(d),
                                       testing::uniform_start(n, d, 3, 1.0), 10, n, d);
            REQUIRE_FALSE(r.fault.empty());
            CHECK(r.fault.find("at t = ") != std::string::npos);
            // dopri5's controller shrinks its step as the speed 1/r grows and stops at its
            // floor before r can cross zero; the fixed steps cross it.
            if (kind != integrator_kind::dopri5) {
                CHECK(r.fault.find("left the model's domain") != std::string::npos);
                CHECK(r.fault.find("token ") != std::string::npos);
                CHECK(r.fault.find("r = -") != std::string::npos);
            }
            // The last frame is the last good state: every magnitude still positive.
            REQUIRE_FALSE(r.r_min.empty());
            CHECK(r.r_min.back() > 0.0);
            CHECK(r.times.back() < 20.0);
            const double* magnitudes_left = magnitudes(r.final_state, n, d);
            for (std::size_t k = 0; k < n; ++k)
                CHECK(magnitudes_left[k] > 0.0);
        }
    }
    // The same weights under post-ln (r fixed) stay in the domain.
    const recorded_run post =
        run(integrator_kind::rk4, {scheme::post_ln, 1.0, 0.0}, 0.01, 2.0, negative_identity_v(d),
            testing::uniform_start(n, d, 3), 10, n, d);
    CHECK(post.fault.empty());
}

TEST_CASE("the step-doubling estimate of rk4 scales as dt^5 and does not touch the trajectory") {
    // A smooth case (peri-ln, beta = 1.5, 12 tokens on S^2): the estimate at t = 0 is the
    // local error of one step, C dt^5 + O(dt^6), so halving dt divides it by about 32.
    const std::size_t n = 12, d = 3;
    const scheme_parameters peri{scheme::peri_ln, 1.0, 0.0};
    std::vector<double> at_zero;
    for (const double dt : {0.1, 0.05, 0.025}) {
        const recorded_run r = run(integrator_kind::rk4, peri, dt, 0.2, {},
                                   testing::uniform_start(n, d, 7, 1.2), 1 << 20, n, d);
        REQUIRE(r.step_errors.size() == 2); // the first and the last state
        at_zero.push_back(r.step_errors.front());
    }
    CAPTURE(at_zero[0]);
    CAPTURE(at_zero[1]);
    CAPTURE(at_zero[2]);
    CHECK(at_zero[0] / at_zero[1] == doctest::Approx(32.0).epsilon(0.15));
    CHECK(at_zero[1] / at_zero[2] == doctest::Approx(32.0).epsilon(0.15));

    // Euler: local error C dt^2, ratio about 4.
    const recorded_run e1 = run(integrator_kind::euler, peri, 0.02, 0.02, {},
                                testing::uniform_start(n, d, 7, 1.2), 1, n, d);
    const recorded_run e2 = run(integrator_kind::euler, peri, 0.01, 0.01, {},
                                testing::uniform_start(n, d, 7, 1.2), 1, n, d);
    CHECK(e1.step_errors.front() / e2.step_errors.front() == doctest::Approx(4.0).epsilon(0.1));

    // The estimate runs on copies: the trajectory with frames at every step (an estimate per
    // step) equals, bit for bit, the one with only two frames.
    const recorded_run dense = run(integrator_kind::rk4, peri, 0.05, 1.0, {},
                                   testing::uniform_start(n, d, 7, 1.2), 1, n, d);
    const recorded_run sparse = run(integrator_kind::rk4, peri, 0.05, 1.0, {},
                                    testing::uniform_start(n, d, 7, 1.2), 1 << 20, n, d);
    CHECK(dense.final_state == sparse.final_state);
    CHECK(dense.step_errors.size() == 21);

    // dopri5 and layers do not estimate it.
    const recorded_run adaptive = run(integrator_kind::dopri5, peri, 0.05, 0.2, {},
                                      testing::uniform_start(n, d, 7, 1.2), 1, n, d);
    REQUIRE_FALSE(adaptive.step_errors.empty());
    CHECK(std::isnan(adaptive.step_errors.front()));
}

TEST_CASE("a step too large for the dynamics warns once through the sink, a small one does not") {
    const std::size_t n = 16, d = 3;
    const scheme_parameters post{scheme::post_ln, 1.0, 0.0};
    // beta = 8 with dt = 0.5: the attention changes within a step, local error >> 1e-6.
    const recorded_run coarse = run(integrator_kind::rk4, post, 0.5, 10.0, {},
                                    testing::uniform_start(n, d, 5), 1, n, d, 8.0);
    REQUIRE(coarse.warnings.size() == 1);
    CHECK(coarse.warnings.front().find("warning: the estimated local error of one rk4 step") == 0);
    CHECK(coarse.warnings.front().find("--dt ") != std::string::npos);
    CHECK(coarse.warnings.front().find("--integrator dopri5") != std::string::npos);
    // The suggested step, used, brings the estimate at t = 0 near the bound (the estimate
    // is asymptotic, so within a factor of 4).
    const double suggested = suggested_step(0.5, coarse.step_errors.front(), step_error_bound, 4);
    CHECK(suggested < 0.5);
    const recorded_run refined = run(integrator_kind::rk4, post, suggested, suggested, {},
                                     testing::uniform_start(n, d, 5), 1, n, d, 8.0);
    CHECK(refined.step_errors.front() < 4.0 * step_error_bound);
    CHECK(refined.step_errors.front() > step_error_bound / 4.0);

    const recorded_run fine = run(integrator_kind::rk4, post, 0.01, 10.0, {},
                                  testing::uniform_start(n, d, 5), 100, n, d, 8.0);
    CHECK(fine.warnings.empty());
    for (double e : fine.step_errors)
        CHECK(e < step_error_bound);
}

TEST_CASE("configuration warnings: a mix-ln switch beyond T, an absurd number of steps") {
    CHECK(configuration_warnings(scheme::mix_ln, 10.0, 0.01, 2.5, integrator_kind::rk4).empty());
    const auto never =
        configuration_warnings(scheme::mix_ln, 10.0, 0.01, 12.0, integrator_kind::rk4);
    REQUIRE(never.size() == 1);
    CHECK(never.front().find("never happens") != std::string::npos);
    // The switch time of other schemes means nothing.
    CHECK(configuration_warnings(scheme::pre_ln, 10.0, 0.01, 12.0, integrator_kind::rk4).empty());
    const auto huge =
        configuration_warnings(scheme::post_ln, 1e7, 0.01, 0.0, integrator_kind::euler);
    REQUIRE(huge.size() == 1);
    CHECK(huge.front().find("1e+09 steps") != std::string::npos);
    CHECK(configuration_warnings(scheme::post_ln, 1e5, 0.01, 0.0, integrator_kind::layers).empty());
    // dopri5's dt is only its first step.
    CHECK(configuration_warnings(scheme::post_ln, 1e7, 0.01, 0.0, integrator_kind::dopri5).empty());
    CHECK(suggested_step(0.1, 32e-6, 1e-6, 4) == doctest::Approx(0.05));
}
