// Multi-head runs (docs/model.md §7) rerun from their file alone and resumed after a stop
// are bitwise identical to the uninterrupted run: /parameters holds every head (H x d x d
// datasets) and per-layer weights are redrawn from the seed.
#include "nadyn/experiment/run.hpp"
#include "nadyn/model/error.hpp"
#include "run_files.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace nadyn;

namespace {

using testing::check_same_frames;
using testing::run_stopped;

std::string scratch(const std::string& name) {
    return testing::scratch_h5("multi_head_rerun", name);
}

struct case_ {
    const char* name;
    integrator_kind kind;
    const char* weights;
    const char* value;
    std::size_t heads;
    head_combine combine;
};

const std::vector<case_> cases = {
    {"layers_gaussian_per_layer", integrator_kind::layers, "gaussian-per-layer", "same", 4,
     head_combine::mean},
    {"rk4_orthogonal_qk", integrator_kind::rk4, "orthogonal", "qk", 3, head_combine::sum},
    {"dopri5_symmetric", integrator_kind::dopri5, "symmetric", "gpt2", 2, head_combine::mean},
    {"euler_gpt2", integrator_kind::euler, "gpt2", "minus-identity", 3, head_combine::mean},
    // Per-layer weights in continuous time: redraws every 0.3 (inside fixed steps of 0.05).
    {"euler_gaussian_per_layer", integrator_kind::euler, "gaussian-per-layer", "same", 8,
     head_combine::mean},
    {"rk4_orthogonal_per_layer", integrator_kind::rk4, "orthogonal-per-layer", "qk", 2,
     head_combine::sum},
    {"dopri5_gpt2_per_layer", integrator_kind::dopri5, "gpt2-per-layer", "same", 3,
     head_combine::mean},
};

run_config config_for(const case_& k) {
    run_config c;
    c.scheme_id = scheme::peri_ln;
    c.n = 19;
    c.d = 4;
    c.beta = 2.0;
    c.weights = weights_spec::parse(k.weights);
    c.weights.heads = k.heads;
    c.weights.value = parse_value_family(k.value);
    c.combine = k.combine;
    c.integration = {k.kind, 2.0, 0.05, 1e-7, 1e-9, 4};
    c.integration.layer_time = 0.3;
    return c;
}

} // namespace

TEST_CASE("multi-head runs rerun and resume bitwise") {
    for (const case_& k : cases) {
        CAPTURE(k.name);
        const std::string full = scratch(std::string(k.name) + "_full"),
                          again = scratch(std::string(k.name) + "_again"),
                          part = scratch(std::string(k.name) + "_part");
        simulation(config_for(k)).run_to_file(full, true);
        {
            const trajectory_reader file(full);
            std::size_t rows = 0, cols = 0, stack = 0;
            const auto q = file.parameter_matrix("Q", &rows, &cols, &stack);
            if (config_for(k).weights.per_layer) {
                CHECK(!q); // redrawn from the seed
            } else {
                REQUIRE(q);
                CHECK(stack == k.heads);
                CHECK(rows == k.heads * 4);
            }
            CHECK(file.parameters().integer("heads") == std::int64_t(k.heads));
        }
        simulation::from_file(full).run_to_file(again, true);
        check_same_frames(full, again);

        simulation first(config_for(k));
        run_stopped(first, part, 3);
        simulation::from_file(part).resume_file(part, std::nullopt);
        check_same_frames(full, part);
    }
}

TEST_CASE("a recorded head count that disagrees with the datasets is refused") {
    const case_ k = cases[1];
    const std::string path = scratch("mismatch");
    simulation(config_for(k)).run_to_file(path, true);
    {
        // Rewrite heads = 2 beside 3 x d x d datasets.
        const std::size_t frames = trajectory_reader(path).frame_count();
        auto writer = trajectory_writer::append(path, frames);
        parameter_list p;
        p.set("heads", std::int64_t{2});
        writer->write_parameters(p);
        writer->finish(run_status::complete, {});
    }
    CHECK_THROWS_AS(simulation::from_file(path), input_error);
}
