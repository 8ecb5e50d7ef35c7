#include "nadyn/experiment/reduced_run.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/version.hpp"

#include <cmath>
#include <memory>

namespace nadyn {

namespace {

void require(bool ok, const std::string& message) {
    if (!ok) throw input_error(message);
}

} // namespace

sample_spacing parse_spacing(const std::string& name) {
    if (name == "linear") return sample_spacing::linear;
    if (name == "log") return sample_spacing::log;
    throw input_error("unknown spacing '" + name + "'; valid choices: linear, log");
}

void reduced_run::validate() const {
    require(std::isfinite(n) && n > 1.0, "n must be a finite number > 1");
    require(std::isfinite(beta), "beta must be a finite number");
    require(attention == attention_kind::softmax || beta < 700.0,
            "beta must be below 700 with --attention unnormalized (exp(beta) overflows)");
    require(std::isfinite(T) && T > 0.0, "T must be a finite number > 0");
    require(std::isfinite(r0) && r0 > 0.0, "r0 must be a finite number > 0");
    require(std::isfinite(alpha) && alpha > 0.0, "alpha must be a finite number > 0");
    require(samples >= 1 && samples <= 10000000, "samples must be in 1 .. 10^7");
    require(std::isfinite(rtol) && rtol >= 1e-15 && rtol < 1.0, "rtol must be in [1e-15, 1)");
    require(!t_switch || (std::isfinite(*t_switch) && *t_switch >= 0.0),
            "t-switch must be a finite number >= 0");
}

reduced_parameters reduced_run::parameters() const {
    reduced_parameters p;
    p.scheme.id = id;
    p.scheme.alpha = alpha;
    p.scheme.t_switch = t_switch.value_or(0.25 * T);
    p.n = n;
    p.beta = beta;
    p.r0 = r0;
    p.attention = attention;
    return p;
}

std::vector<double> reduced_run::sample_times() const {
    std::vector<double> times{0.0};
    for (std::int64_t i = 1; i <= samples; ++i) {
        const double f = double(i) / double(samples);
        times.push_back(spacing == sample_spacing::linear ? f * T : T * std::pow(1e-3, 1.0 - f));
    }
    return times;
}

std::vector<reduced_sample> reduced_run::integrate() const {
    validate();
    return integrate_reduced(parameters(), sample_times(), rtol, 0.0);
}

void reduced_run::write_file(const std::string& path, const std::vector<reduced_sample>& result,
                             bool overwrite, const std::string& command_line) const {
    check_output_path(path, overwrite);
    trajectory_layout layout;
    layout.n = 1; // one representative token: every r_k is the same
    layout.d = 2;
    layout.positions = false;
    layout.scheme = std::string(info(id).name);
    for (const char* name : {"mean_cos", "gap", "velocity", "r_mean"})
        layout.observables.push_back({name, 1, find_model_observable(name)});
    std::unique_ptr<trajectory_writer> writer;
    // A path that cannot be used is an input_error (the claim's checks); a disk that cannot
    // take the header is an io_error.
    writer = std::make_unique<trajectory_writer>(path, layout, overwrite);
    parameter_list params;
    params.set("model", std::string("reduced"));
    params.set("scheme", layout.scheme);
    params.set("n", n);
    params.set("beta", beta);
    params.set("r0", r0);
    params.set("alpha", alpha);
    params.set("attention", std::string(to_string(attention)));
    params.set("t_switch", parameters().scheme.t_switch);
    params.set("T", T);
    params.set("samples", samples);
    params.set("rtol", rtol);
    params.set("spacing", std::string(spacing == sample_spacing::linear ? "linear" : "log"));
    params.set("command_line", command_line);
    params.set("nadyn_version", std::string(version()));
    params.set("git_commit", std::string(git_commit()));
    params.set("compiler", std::string(compiler()));
    params.set("compiler_flags", std::string(compiler_flags()));
    params.set("build_type", std::string(build_type()));
    try {
        writer->write_parameters(params);
    } catch (const io_error&) {
        writer->discard(); // a header without its parameters is no use
        throw;
    }
    std::int64_t step = 0;
    for (const auto& s : result)
        writer->write_frame(step++, s.t, nullptr, &s.r, {1.0 - s.u, s.u, s.velocity, s.r});
    writer->finish(run_status::complete, {});
}

} // namespace nadyn
