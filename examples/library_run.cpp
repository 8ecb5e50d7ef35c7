// nadyn as a library: configure a run, simulate it, read the observables of every frame.
// This file is docs/library.md's example; ctest builds and runs it (examples/library_run).
#include "nadyn/experiment/run.hpp"

#include <cmath>
#include <cstdio>

int main() {
    nadyn::run_config config; // defaults: peri-ln, n = 64, d = 3, beta = 4, rk4, T = 20
    config.scheme_id = nadyn::scheme::pre_ln;
    config.n = 16;
    config.d = 3;
    config.beta = 4.0;
    config.integration.T = 1.0;
    config.integration.dt = 0.01;
    config.integration.every = 25; // a frame every 25 steps
    config.seed = 7;

    nadyn::simulation sim(config); // validates, draws theta(0); throws nadyn::input_error
    const nadyn::run_summary summary =
        sim.run([](const nadyn::state_type&, double t, std::int64_t step,
                   const nadyn::frame_observables& o) {
            std::printf("step %3lld  t = %4.2f  mean_cos = %.9f  r_mean = %.9f\n",
                        static_cast<long long>(step), t, o.mean_cos, o.r_mean);
        });
    // sim.run_to_file("pre-ln.h5", /*overwrite=*/true) writes the H5MD trajectory instead.

    const bool ok = summary.outcome == nadyn::integration_outcome::complete &&
                    summary.frames == 5 && summary.last_time == 1.0 &&
                    std::isfinite(summary.last.mean_cos) && summary.last.norm_error <= 1e-12;
    std::printf("%s: %zu frames, %llu right-hand side evaluations\n", ok ? "ok" : "FAILED",
                summary.frames,
                static_cast<unsigned long long>(summary.statistics.rhs_evaluations));
    return ok ? 0 : 1;
}
