// `nadyn sweep --dry-run`'s attention work is the flops of the algorithm the kernel runs, the
// count of the benchmarks' rooflines (attention_flops(), docs/performance.md "The rooflines";
// bench/ensemble.py, tests/python/test_ensemble_bench.py): heads that share their values
// summed before one value product, each head's own values one product per head.
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/model/attention.hpp"
#include "nadyn/model/weights.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace nadyn;

namespace {

// Two seeds of 10 Euler steps (one evaluation each) of 8 heads of n = 64 tokens in d = 16.
experiment heads_experiment(const std::string& weights) {
    return experiment::parse(
        "[run]\nn = 64\nd = 16\nheads = 8\n" + weights +
            "T = 1\ndt = 0.1\nintegrator = \"euler\"\n[sweep]\nseed = [1, 2]\n",
        "heads.toml");
}

// Whether the kernel sums the heads of the experiment's first run before one value product.
bool kernel_sums_values(const experiment& e) {
    const simulation run(e.point(0));
    const run_config& c = run.config();
    attention_kernel kernel(c.n, c.d);
    const attention_weights w = combine_heads(run.weights(), c.combine, c.d);
    std::vector<double> out(c.n * c.d);
    attention_options options;
    options.unit_inputs = true;
    kernel.compute(run.state().data(), w, options, out.data());
    return kernel.summed_values();
}

} // namespace

TEST_CASE("the dry run counts shared values once and each head's own values per head") {
    constexpr double n = 64, d = 16, heads = 8, evaluations = 2 * 10;
    // Identity values averaged over the heads (V = I / 8 each): one value product for all
    // heads, no values' projection; each head's queries projected by K^T Q.
    const experiment shared =
        heads_experiment("weights = \"gaussian\"\nvalue = \"identity\"\nhead_combine = \"mean\"\n");
    CHECK(kernel_sums_values(shared));
    const double shared_flops = heads * (2 * n * n * d + 2 * n * d * d) + 2 * n * n * d;
    CHECK(shared_flops == 1441792.0); // tests/python/test_ensemble_bench.py's, V = s I
    CHECK(attention_flops(64, 16, 8, true, false) == shared_flops);
    CHECK(plan_sweep(shared).flops == evaluations * shared_flops);

    // Gaussian Q, K, V per head (the ensemble's case): a value product and projection per head.
    const experiment own = heads_experiment("weights = \"gaussian\"\n");
    CHECK_FALSE(kernel_sums_values(own));
    const double own_flops = heads * (4 * n * n * d + 4 * n * d * d);
    CHECK(own_flops == 8 * 327680.0); // tests/python/test_ensemble_bench.py's
    CHECK(attention_flops(64, 16, 8, false) == own_flops);
    CHECK(plan_sweep(own).flops == evaluations * own_flops);
}

TEST_CASE("identity weights count no projection") {
    // One head, Q = K = V = I: the logits and the value product only, 4 n^2 d.
    const experiment plain = experiment::parse(
        "[run]\nn = 32\nd = 8\nT = 1\ndt = 0.5\nintegrator = \"euler\"\n", "plain.toml");
    CHECK(plan_sweep(plain).flops == 2 * 4.0 * 32 * 32 * 8);
}
