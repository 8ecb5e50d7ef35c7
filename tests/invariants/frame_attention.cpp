// A frame's attention observables come from the frame's own evaluation where the kernel can
// take them (attention_kernel::observe_next_call, small n on the general path) and from a
// pass of their own elsewhere: either way every frame's attention entropy must be bitwise
// what attention_observables gives for the frame's state, for every integrator.
#include "test_support.hpp"

#include "nadyn/attention_observables.hpp"
#include "nadyn/run.hpp"

#include <doctest/doctest.h>

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
