// Runs with QKV-Norm and norm noise (docs/model.md §11): the identity case is the plain model
// bit for bit, sigma = 0 is the noiseless run, the noise does not depend on the thread count,
// resumed and rerun runs repeat it bit for bit, and RK4 keeps order 4 with the noise redrawn
// per layer-time interval.
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "run_files.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

using namespace nadyn;

namespace {

using testing::check_same_frames;
using testing::run_stopped;

std::string scratch(const std::string& name) {
    return testing::scratch_h5("qkv_noise_runs", name);
}

run_config noisy_config(integrator_kind kind) {
    run_config c;
    c.scheme_id = scheme::pre_ln;
    c.n = 24;
    c.d = 6;
    c.beta = 4.0;
    c.weights = weights_spec::parse("gaussian");
    c.qkv_norm = true;
    c.norm_noise = 0.1;
    // Boundaries of the noise between steps (0.25 / 0.02 = 12.5 steps): steps are split there.
    c.integration = {kind, 2.0, 0.02, 1e-7, 1e-9, 5};
    c.integration.layer_time = 0.25;
    c.threads = 1;
    return c;
}

// The final state of a run (directions, then magnitudes).
std::vector<double> final_state(const run_config& c) {
    std::vector<double> last;
    simulation(c).run(
        [&](const state_type& x, double, std::int64_t, const frame_observables&) { last = x; });
    return last;
}

} // namespace

TEST_CASE("QKV-Norm with identity weights is the plain model, every frame bit for bit") {
    // One head, or heads summed: every map is the identity and the directions are unit.
    for (const scheme id : {scheme::pre_ln, scheme::peri_ln}) {
        for (const std::size_t heads : {std::size_t{1}, std::size_t{3}}) {
            CAPTURE(info(id).name);
            CAPTURE(heads);
            run_config c;
            c.scheme_id = id;
            c.n = 20;
            c.d = 4;
            c.weights.heads = heads;
            c.combine = heads == 1 ? head_combine::mean : head_combine::sum;
            c.integration = {integrator_kind::rk4, 1.0, 0.05, 1e-8, 1e-10, 2};
            const std::string plain = scratch("plain"), normalised = scratch("normalised");
            simulation(c).run_to_file(plain, true);
            c.qkv_norm = true;
            simulation(c).run_to_file(normalised, true);
            check_same_frames(plain, normalised);
        }
    }
}

TEST_CASE("QKV-Norm under the heads' mean keeps the 1/H share of the values") {
    // combine_heads folds 1/H into V = I / H; QKV-Norm's values keep that norm, so the ODE is
    // the plain one. The runs differ only inside RK4's stages, whose directions are off the
    // sphere by O(dt^2) until the step's projection (QKV-Norm normalises them, the plain V
    // does not): a difference of the order of the integrator's error, not of the model.
    run_config c;
    c.scheme_id = scheme::pre_ln;
    c.n = 20;
    c.d = 4;
    c.weights.heads = 3;
    c.integration = {integrator_kind::rk4, 1.0, 0.05, 1e-8, 1e-10, 20};
    std::vector<double> plain, normalised;
    simulation(c).run(
        [&](const state_type& x, double, std::int64_t, const frame_observables&) { plain = x; });
    c.qkv_norm = true;
    simulation(c).run([&](const state_type& x, double, std::int64_t, const frame_observables&) {
        normalised = x;
    });
    REQUIRE(plain.size() == normalised.size());
    for (std::size_t i = 0; i < plain.size(); ++i)
        CHECK(std::abs(plain[i] - normalised[i]) < 1e-8);
}

TEST_CASE("norm noise 0 is the noiseless run; noise > 0 moves it and flips top keys") {
    run_config c = noisy_config(integrator_kind::rk4);
    c.norm_noise = 0.0;
    const std::string zero = scratch("sigma0"), off = scratch("off"), on = scratch("on");
    simulation(c).run_to_file(zero, true);
    run_config plain = c;
    assign_parameter(plain, "norm_noise", "0");
    simulation(plain).run_to_file(off, true);
    check_same_frames(zero, off);
    const trajectory_reader noiseless(zero);
    for (const double flips : noiseless.observable("argmax_flips"))
        CHECK(flips == 0.0);
    c.norm_noise = 0.2;
    simulation(c).run_to_file(on, true);
    const trajectory_reader noisy(on);
    double most = 0.0;
    for (const double flips : noisy.observable("argmax_flips")) {
        CHECK(flips >= 0.0);
        CHECK(flips <= 1.0);
        most = std::max(most, flips);
    }
    CHECK(most > 0.0);
    CHECK(noisy.positions(noisy.frame_count() - 1) !=
          noiseless.positions(noiseless.frame_count() - 1));
}

TEST_CASE("the noise and the attention observables do not depend on the thread count") {
    // Large enough for the kernel's and the observables' parallel blocks.
    run_config c = noisy_config(integrator_kind::rk4);
    c.n = 256;
    c.d = 48;
    c.integration.T = 0.3;
    c.integration.dt = 0.05;
    c.integration.every = 2;
    c.integration.layer_time = 0.1;
    const std::string one = scratch("threads1"), two = scratch("threads2");
    simulation(c).run_to_file(one, true);
    c.threads = 2;
    simulation(c).run_to_file(two, true);
    check_same_frames(one, two);
}

TEST_CASE("runs with noise resume and rerun bit for bit") {
    for (integrator_kind kind :
         {integrator_kind::rk4, integrator_kind::dopri5, integrator_kind::layers}) {
        CAPTURE(to_string(kind));
        run_config c = noisy_config(kind);
        if (kind == integrator_kind::layers) {
            c.integration.dt = 0.25;
            c.integration.every = 1;
            c.weights = weights_spec::parse("gaussian-per-layer");
        }
        const std::string name(to_string(kind));
        const std::string full = scratch(name + "_full"), part = scratch(name + "_part"),
                          again = scratch(name + "_again");
        simulation(c).run_to_file(full, true);
        simulation::from_file(full).run_to_file(again, true);
        check_same_frames(full, again);

        simulation first(c);
        run_stopped(first, part, 3);
        simulation::from_file(part).resume_file(part, std::nullopt);
        check_same_frames(full, part);
    }
}

TEST_CASE("RK4 keeps order 4 with the noise redrawn every layer time") {
    run_config c = noisy_config(integrator_kind::rk4);
    c.n = 8;
    c.d = 4;
    c.integration.T = 1.0;
    c.integration.layer_time = 0.3; // boundaries inside steps of every size below
    c.integration.every = 1000;
    c.integration.dt = 0.1 / 64;
    const std::vector<double> reference = final_state(c);
    double errors[3];
    for (int i = 0; i < 3; ++i) {
        c.integration.dt = 0.1 / std::ldexp(1.0, i);
        const std::vector<double> x = final_state(c);
        double worst = 0.0;
        for (std::size_t k = 0; k < x.size(); ++k)
            worst = std::max(worst, std::abs(x[k] - reference[k]));
        errors[i] = worst;
    }
    CAPTURE(errors[0]);
    CAPTURE(errors[1]);
    CAPTURE(errors[2]);
    // Order 4: each halving divides the error by about 16.
    CHECK(std::log2(errors[0] / errors[1]) > 3.5);
    CHECK(std::log2(errors[1] / errors[2]) > 3.5);
}
