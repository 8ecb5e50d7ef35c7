// Regression: mix-ln chose its phase from each stage's time, so the last RK4 stage of a step
// ending on t_switch (and dopri5's stages at c = 1) used the pre-ln rates for an interval
// that is post-ln. RK4 then converged at order 1 for mix-ln (errors 0.0116, 0.0058, 0.0029
// at dt = 0.1, 0.05, 0.025). The phase now comes from the step's start.
//
// What mix-ln is (docs/model.md §2.3 and §4): post-ln before t_switch, pre-ln from it on, the
// phase of a step (or layer) taken from the time at which it starts. Checked here against
// computations that share nothing with rates(), the system or Odeint: one RK4 step and one
// layer of pre-ln written out from the reference attention and the formulas of
// docs/model.md §2.2 and §4, and post-ln's magnitudes, which stay at r0.
#include "test_support.hpp"

#include "nadyn/model/attention.hpp"
#include "nadyn/model/integrate.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace nadyn;

namespace {

constexpr std::size_t n = 8, d = 3;
constexpr double beta = 2.0, r0 = 2.0;

// The state after integrating `scheme` from the seeded start to T.
state_type run(scheme id, integrator_kind kind, double t_switch, double T, double dt) {
    attention_system system({n, d, beta, false, {id, 1.0, t_switch}}, attention_weights{});
    state_type x = testing::uniform_start(n, d, 3, r0);
    solver_statistics statistics;
    integrate(
        system, x, {kind, T, dt, 1e-8, 1e-10, 1},
        [](const state_type&, const state_type&, double, std::int64_t) {}, statistics);
    return x;
}

// A_k of identity weights at the directions of x (which need not be unit: an RK4 stage).
std::vector<double> attention_of(const state_type& x) {
    std::vector<double> a(n * d);
    reference_attention(x.data(), n, d, attention_weights{}, attention_options{beta}, a.data());
    return a;
}

// pre-ln's right-hand side (docs/model.md §2.2): d theta_k/dt = (A_k - <theta_k, A_k>
// theta_k) / r_k, d r_k/dt = <theta_k, A_k>.
state_type pre_ln_rate(const state_type& x) {
    const std::vector<double> a = attention_of(x);
    state_type rate(x.size());
    for (std::size_t k = 0; k < n; ++k) {
        double along = 0.0;
        for (std::size_t c = 0; c < d; ++c)
            along += x[k * d + c] * a[k * d + c];
        const double r = x[n * d + k];
        for (std::size_t c = 0; c < d; ++c)
            rate[k * d + c] = (a[k * d + c] - along * x[k * d + c]) / r;
        rate[n * d + k] = along;
    }
    return rate;
}

state_type plus(const state_type& x, double h, const state_type& rate) {
    state_type y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        y[i] = x[i] + h * rate[i];
    return y;
}

void to_sphere(state_type& x) {
    for (std::size_t k = 0; k < n; ++k) {
        double norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c)
            norm2 += x[k * d + c] * x[k * d + c];
        for (std::size_t c = 0; c < d; ++c)
            x[k * d + c] /= std::sqrt(norm2);
    }
}

// One classical RK4 step of pre-ln from x, then the directions back onto the sphere.
state_type pre_ln_rk4_step(const state_type& x, double h) {
    const state_type k1 = pre_ln_rate(x);
    const state_type k2 = pre_ln_rate(plus(x, h / 2, k1));
    const state_type k3 = pre_ln_rate(plus(x, h / 2, k2));
    const state_type k4 = pre_ln_rate(plus(x, h, k3));
    state_type y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        y[i] = x[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    to_sphere(y);
    return y;
}

// One pre-ln layer (docs/model.md §4): y = r_k theta_k + h A_k, theta_k <- y/‖y‖, r_k <- ‖y‖.
state_type pre_ln_layer(const state_type& x, double h) {
    const std::vector<double> a = attention_of(x);
    state_type y(x.size());
    for (std::size_t k = 0; k < n; ++k) {
        double norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
            y[k * d + c] = x[n * d + k] * x[k * d + c] + h * a[k * d + c];
            norm2 += y[k * d + c] * y[k * d + c];
        }
        for (std::size_t c = 0; c < d; ++c)
            y[k * d + c] /= std::sqrt(norm2);
        y[n * d + k] = std::sqrt(norm2);
    }
    return y;
}

bool magnitudes_are_r0(const state_type& x) {
    for (std::size_t k = 0; k < n; ++k)
        if (x[n * d + k] != r0) return false;
    return true;
}

} // namespace

TEST_CASE("a step ending on t_switch is pure post-ln; one starting there pure pre-ln") {
    const double t_switch = 0.5, dt = 0.25;
    SUBCASE("rk4 and dopri5: the steps up to the switch are post-ln's") {
        for (integrator_kind kind : {integrator_kind::rk4, integrator_kind::dopri5}) {
            CAPTURE(to_string(kind));
            // Same operations in the same order as post-ln's: equal to the last bit, and the
            // magnitudes still r0 (post-ln's dr/dt = 0), which a pre-ln stage would move.
            const state_type at_switch = run(scheme::mix_ln, kind, t_switch, t_switch, dt);
            CHECK(at_switch == run(scheme::post_ln, kind, t_switch, t_switch, dt));
            CHECK(magnitudes_are_r0(at_switch));
        }
    }
    SUBCASE("rk4: the step starting on t_switch is pre-ln's in all four stages") {
        const state_type at_switch =
            run(scheme::mix_ln, integrator_kind::rk4, t_switch, t_switch, dt);
        const state_type after =
            run(scheme::mix_ln, integrator_kind::rk4, t_switch, t_switch + dt, dt);
        const state_type expected = pre_ln_rk4_step(at_switch, dt);
        CHECK(testing::max_abs_difference(after, expected) < 1e-13);
        // The step is not post-ln's: the two differ by O(dt) (r moves off r0).
        const state_type post =
            run(scheme::post_ln, integrator_kind::rk4, t_switch, t_switch + dt, dt);
        CHECK(testing::max_abs_difference(post, expected) > 1e-3);
    }
    SUBCASE("rk4: a step that crosses t_switch is post-ln throughout") {
        // Steps start at 0, 0.2 and 0.4; the third ends at 0.6, past the switch at 0.5.
        const double crossing = 0.2;
        CHECK(run(scheme::mix_ln, integrator_kind::rk4, t_switch, 0.6, crossing) ==
              run(scheme::post_ln, integrator_kind::rk4, t_switch, 0.6, crossing));
    }
}

TEST_CASE("layers: post-ln's layers while t_l < t_switch, pre-ln's from the layer at t_switch") {
    // h = 0.25: layers 0 and 1 (t_l = 0, 0.25) are post-ln's, layer 2 (t_l = 0.5 = t_switch)
    // is the first pre-ln layer.
    const double t_switch = 0.5, h = 0.25;
    const state_type two = run(scheme::mix_ln, integrator_kind::layers, t_switch, 2 * h, h);
    CHECK(two == run(scheme::post_ln, integrator_kind::layers, t_switch, 2 * h, h));
    CHECK(magnitudes_are_r0(two));
    const state_type three = run(scheme::mix_ln, integrator_kind::layers, t_switch, 3 * h, h);
    const state_type expected = pre_ln_layer(two, h);
    CHECK(testing::max_abs_difference(three, expected) < 1e-14);
    CHECK(!magnitudes_are_r0(three));
}
