// Per-layer weights in continuous time (docs/model.md §7): the ODE integrators hold the
// weights of layer l on [l tau, (l+1) tau), the discrete model's layer-l weights, and step
// exactly onto every redraw, so RK4 keeps its order 4 across the discontinuities.
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <numeric>

using namespace nadyn;
using namespace nadyn::testing;

namespace {

run_config per_layer_run(integrator_kind kind, double dt, double tau) {
    run_config c;
    c.scheme_id = scheme::post_ln;
    c.n = 8;
    c.d = 3;
    c.beta = 1.0;
    c.weights = weights_spec::parse("gaussian-per-layer");
    c.weights.heads = 2;
    c.integration = {kind, 1.2, dt, 1e-10, 1e-12, 1};
    c.integration.layer_time = tau;
    return c;
}

state_type final_state(const run_config& c) {
    simulation run(c);
    state_type last;
    run.run([&](const state_type& x, double, std::int64_t, const frame_observables&) { last = x; });
    return last;
}

} // namespace

TEST_CASE("the weights used on [l tau, (l+1) tau) are the discrete model's layer-l weights") {
    const double tau = 0.3;
    for (integrator_kind kind :
         {integrator_kind::rk4, integrator_kind::euler, integrator_kind::dopri5}) {
        CAPTURE(to_string(kind));
        const run_config c = per_layer_run(kind, 0.07, tau);
        model_parameters model{c.n, c.d, c.beta, c.causal, c.scheme_settings(), c.arithmetic};
        attention_system system(model, make_weights(c.weights, c.d, c.seed, 0));
        state_type x = uniform_start(c.n, c.d, 3);
        std::vector<std::int64_t> requested;
        const layer_weights_source source = [&](std::int64_t layer) {
            requested.push_back(layer);
            return make_weights(c.weights, c.d, c.seed, layer);
        };
        std::size_t checked = 0;
        solver_statistics statistics;
        integrate(
            system, x, c.resolved_integration(),
            [&](const state_type&, const state_type&, double t, std::int64_t) {
                const auto layer = static_cast<std::int64_t>(std::floor(t / tau + 1e-12));
                const attention_weights expected = make_weights(c.weights, c.d, c.seed, layer);
                for (std::size_t h = 0; h < 2; ++h) {
                    CHECK(system.weights().heads[h].Q == expected.heads[h].Q);
                    CHECK(system.weights().heads[h].V == expected.heads[h].V);
                }
                ++checked;
            },
            statistics, nullptr, source);
        CHECK(checked > 10);
        // Each layer of [0, 1.2] drawn once, in order: 0, 1, 2, 3, and 4 at t = T = 1.2.
        CHECK(requested == std::vector<std::int64_t>{0, 1, 2, 3, 4});
    }
}

TEST_CASE("RK4 keeps order 4 across redraws that fall inside its steps") {
    // tau = 0.3 is no multiple of these steps: every redraw splits a step.
    const double tau = 0.3;
    const state_type reference = final_state(per_layer_run(integrator_kind::rk4, 0.3 / 512, tau));
    std::vector<double> errors;
    for (double dt : {0.04, 0.02, 0.01})
        errors.push_back(max_abs_difference(
            final_state(per_layer_run(integrator_kind::rk4, dt, tau)), reference));
    for (std::size_t i = 0; i + 1 < errors.size(); ++i) {
        CAPTURE(errors[i]);
        CAPTURE(errors[i + 1]);
        CHECK(errors[i] / errors[i + 1] == doctest::Approx(16.0).epsilon(0.10));
    }
    // dopri5 lands on every redraw too: it meets its tolerance.
    const state_type adaptive = final_state(per_layer_run(integrator_kind::dopri5, 0.05, tau));
    CHECK(max_abs_difference(adaptive, reference) < 1e-8);
}

TEST_CASE("the layers integrator redraws every tau / h layers, and per layer by default") {
    // tau = 4 h: layers 0-3 use draw 0, 4-7 draw 1, 8-10 draw 2. Checked against the default
    // (a draw per layer) fed, layer by layer, the draw the interval holds.
    const double h = 0.05;
    auto run_layers = [&](double tau, const std::function<std::int64_t(std::int64_t)>& draw_of,
                          std::vector<std::int64_t>& requested) {
        run_config c = per_layer_run(integrator_kind::layers, h, tau);
        c.integration.T = 11 * h;
        model_parameters model{c.n, c.d, c.beta, c.causal, c.scheme_settings(), c.arithmetic};
        attention_system system(model, make_weights(c.weights, c.d, c.seed, 0));
        state_type x = uniform_start(c.n, c.d, 3);
        const layer_weights_source source = [&](std::int64_t layer) {
            requested.push_back(layer);
            return make_weights(c.weights, c.d, c.seed, draw_of(layer));
        };
        solver_statistics statistics;
        integrate(
            system, x, c.resolved_integration(),
            [](const state_type&, const state_type&, double, std::int64_t) {}, statistics, nullptr,
            source);
        CHECK(statistics.accepted_steps == 11);
        return x;
    };
    std::vector<std::int64_t> held, per_layer, by_hand;
    const state_type every_four = run_layers(
        4 * h, [](std::int64_t l) { return l; }, held);
    CHECK(held == std::vector<std::int64_t>{0, 1, 2});
    // 0 (unset) is a draw per layer: layers 0..10, each once.
    const state_type unset = run_layers(
        0.0, [](std::int64_t l) { return l; }, per_layer);
    std::vector<std::int64_t> all(11);
    std::iota(all.begin(), all.end(), 0);
    CHECK(per_layer == all);
    const state_type expected = run_layers(
        0.0, [](std::int64_t l) { return l / 4; }, by_hand);
    CHECK(every_four == expected);
    CHECK(unset != expected);
    // The recorded layer_time is the resolved tau: dt for layers, 1 for the others.
    run_config c = per_layer_run(integrator_kind::layers, h, 0.0);
    CHECK(std::get<double>(parameter(std::string_view("layer_time")).record(c)) == h);
    c.integration.kind = integrator_kind::rk4;
    CHECK(std::get<double>(parameter(std::string_view("layer_time")).record(c)) == 1.0);
}
