// Multi-head attention (docs/model.md §7): the heads' mean and sum against independent
// computations: H copies of one head give the one-head model, and the kernel with
// several heads equals a plain loop over the heads of the reference attention.
#include "../../src/model/kernel/general.hpp" // detail::worth_parallel
#include "nadyn/experiment/run.hpp"
#include "nadyn/model/attention.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace nadyn;
using namespace nadyn::testing;

namespace {

run_config small_run(integrator_kind kind) {
    run_config c;
    c.scheme_id = scheme::pre_ln;
    c.n = 21;
    c.d = 4;
    c.beta = 2.0;
    c.init = initial_spec::parse("uniform");
    c.integration = {kind, 1.0, 0.05, 1e-9, 1e-11, 1};
    return c;
}

// The final state of a run with the given weights.
state_type final_state(const run_config& c, const attention_weights& weights) {
    const initial_state start = make_initial(c.init, c.n, c.d, c.seed, c.r0);
    simulation run(c, start, weights);
    state_type last;
    run.run([&](const state_type& x, double, std::int64_t, const frame_observables&) { last = x; });
    return last;
}

attention_weights copies(const attention_head& head, std::size_t heads) {
    attention_weights w;
    w.heads.assign(heads, head);
    return w;
}

weights_spec gaussian_heads(std::size_t heads, const char* family = "gaussian") {
    weights_spec spec = weights_spec::parse(family);
    spec.heads = heads;
    return spec;
}

} // namespace

TEST_CASE("H identical heads with mean give the one-head trajectory") {
    const std::size_t d = 4;
    const attention_head head = make_weights(gaussian_heads(1), d, 3).heads[0];
    for (integrator_kind kind :
         {integrator_kind::rk4, integrator_kind::dopri5, integrator_kind::layers}) {
        CAPTURE(to_string(kind));
        const run_config c = small_run(kind);
        const state_type one = final_state(c, copies(head, 1));
        for (std::size_t heads : {2, 3, 5}) {
            CAPTURE(heads);
            const state_type many = final_state(c, copies(head, heads));
            CHECK(max_abs_difference(one, many) < 1e-14);
        }
    }
}

TEST_CASE("H identical heads with sum give H times the attention output") {
    const std::size_t n = 37, d = 5;
    const state_type x = uniform_start(n, d, 4);
    const attention_head head = make_weights(gaussian_heads(1), d, 8).heads[0];
    attention_kernel kernel(n, d, 8);
    std::vector<double> one(n * d), many(n * d);
    for (bool causal : {false, true}) {
        const attention_options options{1.5, causal};
        kernel.compute(x.data(), copies(head, 1), options, one.data());
        for (std::size_t heads : {2, 3, 4}) {
            kernel.compute(x.data(), combine_heads(copies(head, heads), head_combine::sum, d),
                           options, many.data());
            double worst = 0.0;
            for (std::size_t i = 0; i < n * d; ++i)
                worst = std::max(worst, std::abs(many[i] - double(heads) * one[i]));
            CHECK(worst < 1e-14 * double(heads));
        }
    }
}

TEST_CASE("the multi-head kernel equals a loop over the heads of the reference attention") {
    // n^2 (d + 16) > 4e6: the kernel deals its blocks (general path) and tiles (symmetric
    // path, the "symmetric" family) to the threads asked for; below it every call runs on
    // one thread and the thread counts compared here would all be one.
    const std::size_t n = 453, d = 5, heads = 3;
    REQUIRE(detail::worth_parallel(n, d));
    const state_type x = uniform_start(n, d, 6);
    for (const std::string family : {"gaussian", "symmetric", "orthogonal"}) {
        CAPTURE(family);
        const attention_weights w = make_weights(gaussian_heads(heads, family.c_str()), d, 2);
        for (bool causal : {false, true}) {
            for (head_combine combine : {head_combine::mean, head_combine::sum}) {
                CAPTURE(causal);
                const attention_options options{2.0, causal};
                // The naive loop: each head alone through the O(n^2 d) definition.
                std::vector<double> expected(n * d, 0.0), part(n * d);
                for (const attention_head& head : w.heads) {
                    attention_weights alone;
                    alone.heads = {head};
                    reference_attention(x.data(), n, d, alone, options, part.data());
                    const double share = combine == head_combine::mean ? 1.0 / double(heads) : 1.0;
                    for (std::size_t i = 0; i < n * d; ++i)
                        expected[i] += share * part[i];
                }
                std::vector<std::vector<double>> by_threads;
                for (int threads : {1, 2, 3}) {
                    attention_options on_threads = options;
                    on_threads.threads = threads;     // the call's own count
                    attention_kernel kernel(n, d, 8); // n is not a multiple of the block
                    std::vector<double> out(n * d);
                    kernel.compute(x.data(), combine_heads(w, combine, d), on_threads, out.data());
                    // Q = K without a mask takes the symmetric register tiles (d <= 16),
                    // the rest the blocks.
                    const bool tiles = family == "symmetric" && !causal;
                    CHECK(kernel.last_path() == (tiles ? attention_kernel::path::symmetric_small_d
                                                       : attention_kernel::path::general));
                    by_threads.push_back(out);
                    CHECK(max_abs_difference(out, expected) < 1e-12);
                }
                CHECK(by_threads[0] == by_threads[1]);
                CHECK(by_threads[0] == by_threads[2]);
            }
        }
    }
}
