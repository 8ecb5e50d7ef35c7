// The parameter registry: one row per input drives parsing, checks, the /parameters record,
// its read-back and the resume agreement; and the library guards of a run (output names,
// resume horizon) that used to live only in the command line.
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace nadyn;

namespace {

std::string records(const run_config& c) {
    std::string out;
    const parameter_list list = c.to_parameters();
    for (const auto& [name, value] : list.entries())
        out += name + "=" + to_display_string(value) + ";";
    return out;
}

std::filesystem::path fresh_dir(const std::string& name) {
    const std::filesystem::path dir = std::filesystem::path(NADYN_TEST_TMPDIR) / "registry" / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

} // namespace

TEST_CASE("every row's record reads back to the same value, defaults and non-defaults") {
    run_config changed;
    const std::vector<std::pair<const char*, const char*>> values = {{"scheme", "mix-ln"},
                                                                     {"n", "17"},
                                                                     {"d", "5"},
                                                                     {"beta", "0.3"},
                                                                     {"beta_log_n", "1"},
                                                                     {"T", "7.5"},
                                                                     {"dt", "0.025"},
                                                                     {"integrator", "euler"},
                                                                     {"rtol", "1e-6"},
                                                                     {"atol", "1e-9"},
                                                                     {"init", "cap:0.5"},
                                                                     {"weights", "random"},
                                                                     {"heads", "3"},
                                                                     {"layer_time", "0.75"},
                                                                     {"head_combine", "sum"},
                                                                     {"value", "minus-qk"},
                                                                     {"qkv_norm", "1"},
                                                                     {"norm_noise", "0.05"},
                                                                     {"seed", "42"},
                                                                     {"init_seed", "43"},
                                                                     {"weights_seed", "44"},
                                                                     {"noise_seed", "45"},
                                                                     {"r0", "2.5"},
                                                                     {"alpha", "0.5"},
                                                                     {"ngpt_layer", "add"},
                                                                     {"t_switch", "1.25"},
                                                                     {"causal", "true"},
                                                                     {"precision", "float"},
                                                                     {"attention", "unnormalized"},
                                                                     {"norm", "layernorm"},
                                                                     {"ln_params", "file:ln.h5"},
                                                                     {"every", "3"},
                                                                     // frames at chosen times
                                                                     // exclude every: their
                                                                     // record is in
                                                                     // invariants/frame_times
                                                                     {"frame_times", "none"},
                                                                     {"positions", "none"},
                                                                     {"compress", "1"},
                                                                     {"swmr", "0"},
                                                                     {"cluster_eps", "0.01"},
                                                                     {"observe", "unselectable"},
                                                                     {"observables", "r_min,gap"},
                                                                     {"threads", "2"},
                                                                     {"block", "32"},
                                                                     {"mode_count", "12"},
                                                                     {"plateau_min", "2.5"}};
    std::set<std::string> covered;
    for (const auto& [name, text] : values) {
        assign_parameter(changed, name, text);
        covered.insert(name);
    }
    // The list above covers the whole registry, so a new row must be added to it.
    for (const parameter_spec& spec : parameter_registry())
        CHECK_MESSAGE(covered.count(std::string(spec.name)) == 1, spec.name);
    CHECK(changed.n == 17);
    CHECK(changed.scheme_id == scheme::mix_ln);
    CHECK(changed.causal);
    CHECK(!changed.swmr);
    // --observables keeps the table's order; step_size is recorded whatever the choice.
    CHECK(changed.observables == std::vector<std::string>{"gap", "r_min"});
    CHECK(changed.recorded_observables() ==
          std::vector<std::string>{"gap", "r_min", "step_size", "unselectable"});
    CHECK(run_config{}.recorded_observables().size() == observable_names(false).size());
    CHECK(parameter_text(run_config{}, parameter("observables")) == "all");
    CHECK(changed.switch_time() == 1.25);
    CHECK(changed.scheme_settings().ngpt_step == ngpt_layer::add);
    CHECK(run_config{}.scheme_settings().ngpt_step == ngpt_layer::interpolate);
    // beta_log_n: the logits use beta log n (docs/model.md §14); off by default.
    CHECK(changed.beta_log_n);
    CHECK(changed.logit_beta() == 0.3 * std::log(17.0));
    CHECK(run_config{}.logit_beta() == run_config{}.beta);
    CHECK(changed.seed_for_init() == 43);
    CHECK(changed.seed_for_weights() == 44);
    CHECK(changed.seed_for_noise() == 45);
    // Unset, a purpose follows seed, and "seed" unsets it again.
    CHECK(run_config{}.seed_for_weights() == run_config{}.seed);
    assign_parameter(changed, "weights_seed", "seed");
    CHECK(changed.seed_for_weights() == 42);
    assign_parameter(changed, "weights_seed", "44");
    for (const run_config& c : {run_config{}, changed}) {
        const run_config back = run_config::from_parameters(c.to_parameters());
        CHECK(records(back) == records(c));
        // And through the text form every row prints.
        run_config through_text;
        for (const parameter_spec& spec : parameter_registry())
            spec.assign(through_text, parameter_text(c, spec));
        CHECK(records(through_text) == records(c));
    }
}

TEST_CASE("defaults come from run_config, and the registry's checks are validate()'s") {
    const run_config defaults;
    CHECK(default_text(parameter("scheme")) == "peri-ln");
    CHECK(default_text(parameter("n")) == "64");
    CHECK(default_text(parameter("beta")) == "4");
    CHECK(default_text(parameter("t_switch")).empty());
    CHECK(default_text(parameter("seed")) == "1");
    CHECK(default_text(parameter("weights_seed")).empty()); // follows seed
    CHECK_NOTHROW(defaults.validate());

    const std::vector<std::pair<const char*, const char*>> bad = {{"n", "0"},
                                                                  {"d", "1"},
                                                                  {"beta", "inf"},
                                                                  {"T", "-1"},
                                                                  {"dt", "0"},
                                                                  {"rtol", "0"},
                                                                  {"atol", "-1"},
                                                                  {"r0", "0"},
                                                                  {"alpha", "nan"},
                                                                  {"t_switch", "-2"},
                                                                  {"cluster_eps", "3"},
                                                                  {"observe", "unselectable,gap"},
                                                                  {"norm_noise", "-0.1"},
                                                                  {"norm_noise", "inf"},
                                                                  {"mode_count", "0"},
                                                                  {"mode_count", "1025"},
                                                                  {"init_seed", "-1"},
                                                                  {"noise_seed", "0.5"},
                                                                  {"plateau_min", "-1"},
                                                                  {"plateau_min", "101%"},
                                                                  {"plateau_min", "nan"},
                                                                  {"plateau_min", "5 %"},
                                                                  {"block", "65"}};
    for (const auto& [name, text] : bad) {
        INFO(std::string(name) << " = " << text);
        run_config c;
        // Either the parser or validate() refuses it, naming the parameter (as its flag
        // spells it), never silently.
        std::string flag_name = name;
        std::replace(flag_name.begin(), flag_name.end(), '_', '-');
        bool refused = false;
        try {
            assign_parameter(c, name, text);
            c.validate();
        } catch (const input_error& e) {
            refused = std::string(e.what()).find(flag_name) != std::string::npos;
        }
        CHECK(refused);
    }
    run_config scratch;
    CHECK_THROWS_WITH_AS(assign_parameter(scratch, "bogus", "1"),
                         doctest::Contains("unknown parameter 'bogus'; valid parameters: scheme"),
                         input_error);
    CHECK_THROWS_WITH_AS(parse_integer("0x10", "n"), "n = '0x10' is not a whole number",
                         input_error);
    CHECK(parse_number("+2.5", "beta") == 2.5);
    // observe: canonical text whatever the spelling; none is the empty list.
    assign_parameter(scratch, "observe", "unselectable,unselectable");
    CHECK(scratch.observe == std::vector<std::string>{"unselectable"});
    CHECK(parameter_text(scratch, parameter("observe")) == "unselectable");
    // The order of optional_observable_names, not of the spelling.
    assign_parameter(scratch, "observe", "angle,pair_change,angle");
    CHECK(scratch.observe == std::vector<std::string>{"pair_change", "angle"});
    CHECK(parameter_text(scratch, parameter("observe")) == "pair_change,angle");
    assign_parameter(scratch, "observe", "none");
    CHECK(scratch.observe.empty());
    CHECK(default_text(parameter("observe")) == "none");
    CHECK_THROWS_AS(parse_switch("maybe", "causal"), input_error);
}

TEST_CASE("an observable asked for under the other key is told where it belongs") {
    run_config scratch;
    // clusters is standard (--observables), angle optional (--observe): the message names
    // the key that takes it instead of listing the wrong key's choices.
    CHECK_THROWS_WITH_AS(assign_parameter(scratch, "observe", "angle,clusters"),
                         "'clusters' is a standard observable: ask for it under observables, "
                         "not observe (observe = 'angle,clusters')",
                         input_error);
    CHECK_THROWS_WITH_AS(assign_parameter(scratch, "observables", "mean_cos,angle"),
                         "'angle' is an optional observable: ask for it under observe, not "
                         "observables (observables = 'mean_cos,angle')",
                         input_error);
    // A name of neither list still lists the valid choices.
    CHECK_THROWS_WITH_AS(assign_parameter(scratch, "observe", "clusterz"),
                         doctest::Contains("valid choices: none, unselectable"), input_error);
}

TEST_CASE("a resume may extend T and change resumable rows, nothing else") {
    run_config recorded;
    recorded.integration.T = 10.0;
    run_config given = recorded;
    given.integration.T = 20.0;
    given.threads = 7;
    CHECK_NOTHROW(check_resume_agreement(recorded, given, {"T", "threads"}, "f.h5"));
    given.beta = 5.0;
    CHECK_NOTHROW(check_resume_agreement(recorded, given, {"T"}, "f.h5")); // beta not given
    CHECK_THROWS_WITH_AS(check_resume_agreement(recorded, given, {"beta"}, "f.h5"),
                         doctest::Contains("beta = 5 disagrees with 'f.h5'"), input_error);
    given.integration.T = 5.0;
    CHECK_THROWS_WITH_AS(check_resume_agreement(recorded, given, {"T"}, "f.h5"),
                         doctest::Contains("cannot shorten"), input_error);
}

TEST_CASE("the library refuses to resume to a shorter horizon") {
    const auto dir = fresh_dir("shorter");
    run_config c;
    c.n = 8;
    c.integration.T = 1.0;
    c.integration.dt = 0.05;
    c.integration.every = 5;
    const std::string path = (dir / "run.h5").string();
    simulation(c).run_to_file(path, false);
    simulation again = simulation::from_file(path);
    CHECK_THROWS_WITH_AS(again.resume_file(path, 0.5), doctest::Contains("cannot shorten"),
                         input_error);
    CHECK_THROWS_AS(again.resume_file(path, std::nan("")), input_error);
}

TEST_CASE("output names are reserved atomically, and bad output paths name the problem") {
    const auto dir = fresh_dir("names");
    run_config c;
    std::vector<std::string> names(8);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < names.size(); ++i)
        threads.emplace_back([&, i] { names[i] = reserve_output_name(c, dir.string()); });
    for (auto& t : threads)
        t.join();
    const std::set<std::string> distinct(names.begin(), names.end());
    CHECK(distinct.size() == names.size());
    for (const auto& name : names)
        CHECK(std::filesystem::exists(name));

    CHECK_THROWS_WITH_AS(check_output_path(dir.string(), false),
                         doctest::Contains("is a directory"), input_error);
    CHECK_THROWS_WITH_AS(check_output_path("", false), doctest::Contains("empty"), input_error);
    // A reserved name is an empty placeholder, which a run may take; a file with content is
    // only replaced when asked.
    CHECK_NOTHROW(check_output_path(names.front(), false));
    { std::ofstream(names.front()) << "keep me"; }
    CHECK_THROWS_WITH_AS(check_output_path(names.front(), false),
                         doctest::Contains("already exists; pass --force"), input_error);
    CHECK_NOTHROW(check_output_path(names.front(), true));
}

TEST_CASE("a trajectory file describes every parameter the registry records") {
    const auto dir = fresh_dir("descriptions");
    run_config c;
    c.n = 4;
    c.integration.T = 0.1;
    const std::string path = (dir / "run.h5").string();
    simulation(c).run_to_file(path, false);
    const trajectory_reader file(path);
    const auto descriptions = file.parameter_descriptions();
    for (const auto& [name, value] : file.parameters().entries()) {
        bool described = false;
        for (const auto& [key, text] : descriptions)
            described = described || (key == name && !text.empty());
        CHECK_MESSAGE(described, name);
    }
}
