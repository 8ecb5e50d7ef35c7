// A stopped run resumed from its file, and a run rerun from its file, are bitwise identical,
// frame for frame, to the uninterrupted run (fixed steps, dopri5 with its controller state,
// and the discrete layers with weights drawn per layer).
#include "nadyn/experiment/run.hpp"
#include "nadyn/model/error.hpp"
#include "run_files.hpp"

#include <doctest/doctest.h>

#include <cstring>

#include <filesystem>

using namespace nadyn;

namespace {

using testing::check_same_frames;
using testing::run_stopped;

std::string scratch(const std::string& name) {
    return testing::scratch_h5("resume_rerun", name);
}

run_config config_for(integrator_kind kind) {
    run_config c;
    c.scheme_id = kind == integrator_kind::layers ? scheme::mix_ln : scheme::peri_ln;
    c.n = 24;
    c.d = 5;
    c.beta = 3.0;
    c.causal = kind == integrator_kind::euler;
    c.weights =
        weights_spec::parse(kind == integrator_kind::layers ? "random-per-layer" : "random");
    c.integration = {kind, 2.0, 0.02, 1e-7, 1e-9, 5};
    return c;
}

} // namespace

TEST_CASE("a stopped run, resumed (twice), equals the uninterrupted run bit for bit") {
    for (integrator_kind kind : {integrator_kind::rk4, integrator_kind::euler,
                                 integrator_kind::dopri5, integrator_kind::layers}) {
        CAPTURE(to_string(kind));
        const std::string name(to_string(kind));
        const std::string full = scratch(name + "_full"), part = scratch(name + "_part");
        simulation(config_for(kind)).run_to_file(full, true);

        simulation first(config_for(kind));
        run_stopped(first, part, 3);
        {
            const trajectory_reader stopped(part);
            CHECK(stopped.status() == "interrupted");
            CHECK(stopped.frame_count() == 4); // 3 on cadence + the stop's own frame
        }
        // Resume, stop again after two more frames, resume to the end.
        simulation second = simulation::from_file(part);
        std::atomic<bool> stop{false};
        std::size_t written = 0;
        const run_summary again =
            second.resume_file(part, std::nullopt, &stop, {}, [&](double, std::int64_t) {
                if (++written == 2) stop = true;
            });
        CHECK(again.outcome == integration_outcome::interrupted);
        simulation third = simulation::from_file(part);
        CHECK(third.resume_file(part, std::nullopt).outcome == integration_outcome::complete);
        check_same_frames(full, part);
    }
}

TEST_CASE("a complete run extended to a longer T equals the longer run") {
    for (integrator_kind kind : {integrator_kind::rk4, integrator_kind::dopri5}) {
        CAPTURE(to_string(kind));
        const std::string name(to_string(kind));
        const std::string full = scratch(name + "_long"), part = scratch(name + "_short");
        simulation(config_for(kind)).run_to_file(full, true);
        run_config half = config_for(kind);
        half.integration.T = 1.0; // a multiple of the frame interval 5 * 0.02
        simulation(half).run_to_file(part, true);
        simulation::from_file(part).resume_file(part, 2.0);
        check_same_frames(full, part);
        // Complete and not extended: nothing to resume.
        CHECK_THROWS_AS(simulation::from_file(part).resume_file(part, std::nullopt), input_error);
    }
}

TEST_CASE("rerun from the file alone is bitwise identical") {
    for (integrator_kind kind : {integrator_kind::rk4, integrator_kind::dopri5,
                                 integrator_kind::euler, integrator_kind::layers}) {
        CAPTURE(to_string(kind));
        const std::string name(to_string(kind));
        const std::string original = scratch(name + "_original"), again = scratch(name + "_again");
        simulation(config_for(kind)).run_to_file(original, true);
        simulation::from_file(original).run_to_file(again, true);
        check_same_frames(original, again);
    }
}

TEST_CASE("a file without positions cannot be resumed") {
    run_config c = config_for(integrator_kind::rk4);
    c.positions = false;
    const std::string path = scratch("no_positions");
    simulation run(c);
    run_stopped(run, path, 2);
    CHECK_THROWS_AS(simulation::from_file(path).resume_file(path, std::nullopt), input_error);
}
