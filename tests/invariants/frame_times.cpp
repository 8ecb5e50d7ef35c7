// --frame-times (integration_settings::frame_times): frames at chosen times. On the step grid
// they are the --every run's frames bit for bit; off the grid the fixed steppers take the
// steps a run with T at that time takes (bitwise), dopri5 lands on it (within its
// tolerance); layers refuse a time that is not a whole number of layers; a stopped run
// resumes bit for bit.
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/model/error.hpp"
#include "run_files.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

using namespace nadyn;

namespace {

using testing::check_same_frames;
using testing::run_stopped;

std::string scratch(const std::string& name) {
    return testing::scratch_h5("frame_times", name);
}

run_config config_for(integrator_kind kind, double T, std::int64_t every = 0) {
    run_config c;
    c.scheme_id = kind == integrator_kind::layers ? scheme::mix_ln : scheme::peri_ln;
    c.n = 16;
    c.d = 4;
    c.beta = 3.0;
    c.weights = weights_spec::parse("random");
    c.t_switch = 0.5; // the same switch whatever T
    c.integration = {kind, T, 0.02, 1e-9, 1e-11, every};
    return c;
}

std::string show_number(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

run_config with_times(run_config c, const std::string& text) {
    assign_parameter(c, "frame_times", text);
    c.validate();
    return c;
}

} // namespace

TEST_CASE("frame times parse: list, linspace, logspace, sorted without repeats, recorded") {
    run_config c = config_for(integrator_kind::rk4, 10.0);
    assign_parameter(c, "frame_times", "2.5,0.5,1,1");
    CHECK(c.integration.frame_times == std::vector<double>{0.5, 1.0, 2.5});
    CHECK(parameter_text(c, parameter("frame_times")) == "0.5,1,2.5");
    CHECK(parameter_text(c, parameter("every")) == "0");
    assign_parameter(c, "frame_times", "linspace:0,5,11");
    REQUIRE(c.integration.frame_times.size() == 11);
    CHECK(c.integration.frame_times[3] == 1.5);
    assign_parameter(c, "frame_times", "logspace:-1,1,3");
    CHECK(c.integration.frame_times == std::vector<double>{0.1, 1.0, 10.0});
    // The record reads back to the same run.
    const run_config back = run_config::from_parameters(c.to_parameters());
    CHECK(back.integration.frame_times == c.integration.frame_times);
    CHECK(back.integration.every == 0);
    CHECK_THROWS_AS(assign_parameter(c, "frame_times", "linspace:0,5"), input_error);
    CHECK_THROWS_AS(assign_parameter(c, "frame_times", "1,x"), input_error);
    CHECK_THROWS_AS(assign_parameter(c, "frame_times", "nan"), input_error);
    CHECK_THROWS_AS(with_times(config_for(integrator_kind::rk4, 2.0), "3"), input_error);
    CHECK_THROWS_AS(with_times(config_for(integrator_kind::rk4, 2.0), "-0.5"), input_error);
    CHECK_THROWS_AS(with_times(config_for(integrator_kind::rk4, 2.0, 5), "1"), input_error);
    // layers: a whole number of layers of h = 0.02, to round-off.
    CHECK_NOTHROW(with_times(config_for(integrator_kind::layers, 2.0), "0.1,0.3,1.3"));
    try {
        (void)with_times(config_for(integrator_kind::layers, 2.0), "0.51");
        FAIL("0.51 is not a whole number of layers");
    } catch (const input_error& e) {
        const std::string message = e.what();
        CHECK(message.find("0.5 and 0.52") != std::string::npos);
    }
}

TEST_CASE("frame times on the step grid are the --every run's frames, bit for bit") {
    for (integrator_kind kind :
         {integrator_kind::rk4, integrator_kind::euler, integrator_kind::layers}) {
        CAPTURE(to_string(kind));
        const std::string name(to_string(kind));
        const std::string every = scratch(name + "_every"), chosen = scratch(name + "_chosen");
        simulation(config_for(kind, 2.0, 5)).run_to_file(every, true);
        // 0, 0.1, ..., 2: every 5 steps of 0.02.
        simulation(with_times(config_for(kind, 2.0), "linspace:0,2,21")).run_to_file(chosen, true);
        const trajectory_reader a(every), b(chosen);
        REQUIRE(a.frame_count() == 21);
        REQUIRE(b.frame_count() == 21);
        CHECK(a.steps() == b.steps());
        const auto ta = a.times(), tb = b.times();
        for (std::size_t f = 0; f < a.frame_count(); ++f) {
            CHECK(tb[f] == spaced_values("linspace", 0.0, 2.0, 21)[f]); // the chosen times
            CHECK(std::abs(ta[f] - tb[f]) <= 1e-14);
            CHECK(a.positions(f) == b.positions(f));
            CHECK(a.magnitudes(f) == b.magnitudes(f));
        }
    }
}

TEST_CASE("a frame time off the grid holds the state of a run with T at that time") {
    // 0.53 and 1.171 lie between the grid points of dt = 0.02.
    for (integrator_kind kind : {integrator_kind::rk4, integrator_kind::euler}) {
        CAPTURE(to_string(kind));
        const std::string name(to_string(kind));
        const std::string chosen = scratch(name + "_off");
        simulation(with_times(config_for(kind, 2.0), "0.53,1.171")).run_to_file(chosen, true);
        const trajectory_reader b(chosen);
        REQUIRE(b.frame_count() == 4);
        CHECK(b.times() == std::vector<double>{0.0, 0.53, 1.171, 2.0});
        // A frame's step counts the shortened steps: grid index + off-grid times passed
        // (26 to 0.52, then 0.53: 27; 58 to 1.16, then 1.171: 60; 100 grid steps to T: 102).
        CHECK(b.steps() == std::vector<std::int64_t>{0, 27, 60, 102});
        // The first chosen time off the grid: the steps so far are those of the run to T.
        for (const double T : {0.53, 1.171}) {
            CAPTURE(T);
            const std::string shorter = scratch(name + "_T"), single = scratch(name + "_single");
            simulation(config_for(kind, T)).run_to_file(shorter, true);
            simulation(with_times(config_for(kind, 2.0), show_number(T))).run_to_file(single, true);
            const trajectory_reader a(shorter), one(single);
            REQUIRE(one.frame_count() == 3);
            CHECK(a.times().back() == T);
            CHECK(one.times()[1] == T);
            CHECK(a.positions(a.frame_count() - 1) == one.positions(1));
            CHECK(a.magnitudes(a.frame_count() - 1) == one.magnitudes(1));
            if (T == 0.53) CHECK(a.positions(a.frame_count() - 1) == b.positions(1));
        }
        // The detour through 0.53 and 1.171 changes the state at T only by the error of the
        // steps: O(dt^p) apart from the plain run (rk4 ~ 1e-8, euler ~ 1e-2).
        const std::string plain = scratch(name + "_plain");
        simulation(config_for(kind, 2.0)).run_to_file(plain, true);
        const trajectory_reader a(plain);
        const auto x = a.positions(a.frame_count() - 1), y = b.positions(3);
        double difference = 0.0;
        for (std::size_t i = 0; i < x.size(); ++i)
            difference = std::max(difference, std::abs(x[i] - y[i]));
        CHECK(difference < (kind == integrator_kind::rk4 ? 1e-7 : 5e-2));
        CHECK(difference > 0.0);
    }
}

TEST_CASE("dopri5 lands on each frame time: the state of a run with T at that time") {
    const std::string chosen = scratch("dopri5_off");
    simulation(with_times(config_for(integrator_kind::dopri5, 2.0), "0.53,1.171"))
        .run_to_file(chosen, true);
    const trajectory_reader b(chosen);
    REQUIRE(b.frame_count() == 4);
    CHECK(b.times() == std::vector<double>{0.0, 0.53, 1.171, 2.0});
    for (const auto& [frame, T] : {std::pair{1, 0.53}, std::pair{2, 1.171}}) {
        const std::string shorter = scratch("dopri5_T" + std::to_string(frame));
        simulation(config_for(integrator_kind::dopri5, T)).run_to_file(shorter, true);
        const trajectory_reader a(shorter);
        CHECK(a.times().back() == T);
        const auto x = a.positions(a.frame_count() - 1), y = b.positions(frame);
        double difference = 0.0;
        for (std::size_t i = 0; i < x.size(); ++i)
            difference = std::max(difference, std::abs(x[i] - y[i]));
        CHECK(difference < 1e-7); // both within rtol 1e-9 of the flow
    }
}

TEST_CASE("a stopped run with frame times resumes bit for bit") {
    for (integrator_kind kind : {integrator_kind::rk4, integrator_kind::euler,
                                 integrator_kind::dopri5, integrator_kind::layers}) {
        CAPTURE(to_string(kind));
        const std::string name(to_string(kind));
        const std::string full = scratch(name + "_resume_full"),
                          part = scratch(name + "_resume_part");
        const std::string times =
            kind == integrator_kind::layers ? "0.1,0.34,0.5,0.96,1.5" : "0.1,0.33,0.5,0.971,1.5";
        const run_config c = with_times(config_for(kind, 2.0), times);
        simulation(c).run_to_file(full, true);
        {
            simulation first(c);
            run_stopped(first, part, 3);
        }
        simulation::from_file(part).resume_file(part, std::nullopt);
        REQUIRE(trajectory_reader(full).frame_count() == 7);
        check_same_frames(full, part);
    }
}
