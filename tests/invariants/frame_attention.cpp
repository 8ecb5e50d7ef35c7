// A frame's attention observables come from the frame's own evaluation where the kernel can
// take them (attention_kernel::observe_next_call, small n on the general path) and from a
// pass of their own elsewhere: either way every frame's attention entropy must be bitwise
// what attention_observables gives for the frame's state, for every integrator.
#include "test_support.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/model/attention_observables.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/random.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <optional>

using namespace nadyn;

TEST_CASE("every frame's attention entropy is the observables' pass on the frame's state") {
    for (integrator_kind kind : {integrator_kind::euler, integrator_kind::rk4,
                                 integrator_kind::dopri5, integrator_kind::layers}) {
        for (bool causal : {false, true}) {
            CAPTURE(to_string(kind));
            CAPTURE(causal);
            run_config c;
            c.scheme_id = scheme::pre_ln;
            c.n = 64;
            c.d = 16;
            c.beta = 4.0;
            c.causal = causal;
            c.weights = weights_spec::parse("gaussian");
            c.weights.heads = 2;
            c.integration.kind = kind;
            c.integration.T = 1.0;
            c.integration.dt = 0.1;
            c.integration.every = 2;
            c.seed = 5;
            simulation run(c);
            const attention_weights weights =
                combine_heads(make_weights(c.weights, c.d, c.seed, -1), c.combine, c.d);
            attention_options options{c.beta, c.causal};
            options.threads = 1;
            attention_observables pass(c.n, c.d);
            std::size_t frames = 0;
            run.run([&](const state_type& x, double, std::int64_t, const frame_observables& o) {
                ++frames;
                // pre-ln's attention reads the directions, the state's first n d values.
                const double expected = pass.compute(x.data(), weights, options).attention_entropy;
                CHECK(o.attention_entropy == expected);
                CHECK(o.argmax_flips == 0.0);
            });
            CHECK(frames >= 5);
        }
    }
}

TEST_CASE("fixed steps: every frame takes the kernel's observables, probed frames too") {
    // The step-error probe runs between a frame's evaluation and its observer (every 20
    // steps): it must not drop the observables the evaluation took, or those frames pay for
    // the observables' own pass again. Two Gaussian heads, n = 64: the small-n path observes.
    const std::size_t n = 64, d = 16;
    random_source source(3);
    attention_weights weights;
    weights.heads.clear();
    for (int h = 0; h < 2; ++h)
        weights.heads.push_back({testing::random_matrix(source, d, 0.25),
                                 testing::random_matrix(source, d, 0.25),
                                 testing::random_matrix(source, d, 0.25)});
    for (integrator_kind kind : {integrator_kind::euler, integrator_kind::rk4}) {
        CAPTURE(to_string(kind));
        attention_system system({n, d, 4.0, false, scheme::pre_ln}, weights);
        state_type x = testing::uniform_start(n, d, 9);
        const integration_settings settings{kind, 6.0, 0.1, 1e-8, 1e-10, 5};
        solver_statistics statistics;
        std::size_t frames = 0, probed = 0;
        attention_observables pass(n, d);
        integrate(
            system, x, settings,
            [&](const state_type& s, const state_type&, double t, std::int64_t) {
                ++frames;
                if (!std::isnan(statistics.step_error)) ++probed;
                const std::optional<attention_summary> taken = system.frame_attention(t);
                REQUIRE(taken.has_value());
                CHECK(taken->attention_entropy ==
                      pass.compute(s.data(), weights, {4.0, false}).attention_entropy);
            },
            statistics);
        CHECK(frames == 13);
        CHECK(probed == 4); // steps 0, 20, 40 and 60
    }
}
