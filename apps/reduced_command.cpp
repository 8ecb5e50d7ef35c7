// nadyn reduced: the scalar ODE of the symmetric orthogonal start (docs/model.md §3).
#include "commands.hpp"

#include "nadyn/error.hpp"
#include "nadyn/h5md.hpp"
#include "nadyn/reduced.hpp"
#include "nadyn/version.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace nadyn::cli {

namespace {

struct reduced_options {
    std::string scheme = "peri-ln";
    double n = 256, beta = 5.0, r0 = 1.0, alpha = 1.0, t_switch = 0.0, T = 30.0;
    CLI::Option* t_switch_option = nullptr;
    std::int64_t samples = 100;
    std::string spacing = "linear";
    double rtol = 1e-13;
    std::string out;
    bool force = false, csv = false;
};

void require(bool ok, const std::string& message) {
    if (!ok) throw input_error(message);
}

} // namespace

command add_reduced(CLI::App& app) {
    auto o = std::make_shared<reduced_options>();
    app.add_option("--scheme", o->scheme, "Normalisation scheme: " + scheme_names())
        ->capture_default_str();
    app.add_option("--n", o->n, "Number of tokens (> 1; the formula is smooth in n)")
        ->capture_default_str();
    app.add_option("--beta", o->beta, "Inverse temperature")->capture_default_str();
    app.add_option("--r0", o->r0, "Initial magnitude")->capture_default_str();
    app.add_option("--alpha", o->alpha, "nGPT step alpha")->capture_default_str();
    o->t_switch_option =
        app.add_option("--t-switch", o->t_switch, "mix-ln switch time (default 0.25 T)");
    app.add_option("--T", o->T, "Horizon")->capture_default_str();
    app.add_option("--samples", o->samples, "Output samples after t = 0")
        ->check(decimal_integer<std::int64_t>())
        ->capture_default_str();
    app.add_option("--spacing", o->spacing,
                   "linear | log (log: samples from 1e-3 T to T, for terminal laws)")
        ->capture_default_str();
    app.add_option("--rtol", o->rtol, "Relative tolerance of the adaptive Dormand-Prince stepper")
        ->capture_default_str();
    app.add_flag("--csv", o->csv, "CSV on stdout instead of a table");
    app.add_option("--out", o->out,
                   "Also write an H5MD file (observables mean_cos, gap, "
                   "velocity, r_mean)");
    app.add_flag("--force", o->force, "Overwrite an existing output file");

    return [o]() {
        reduced_parameters p;
        p.scheme.id = parse_scheme(o->scheme);
        require(std::isfinite(o->n) && o->n > 1.0, "n must be a finite number > 1");
        require(std::isfinite(o->beta), "beta must be a finite number");
        require(std::isfinite(o->T) && o->T > 0.0, "T must be a finite number > 0");
        require(std::isfinite(o->r0) && o->r0 > 0.0, "r0 must be a finite number > 0");
        require(std::isfinite(o->alpha) && o->alpha > 0.0, "alpha must be a finite number > 0");
        require(o->samples >= 1 && o->samples <= 10000000, "samples must be in 1 .. 10^7");
        require(std::isfinite(o->rtol) && o->rtol >= 1e-15 && o->rtol < 1.0,
                "rtol must be in [1e-15, 1)");
        require(o->spacing == "linear" || o->spacing == "log",
                "unknown spacing '" + o->spacing + "'; valid choices: linear, log");
        const bool switch_given = o->t_switch_option->count() > 0;
        require(!switch_given || (std::isfinite(o->t_switch) && o->t_switch >= 0.0),
                "t-switch must be a finite number >= 0");
        p.scheme.alpha = o->alpha;
        p.scheme.t_switch = switch_given ? o->t_switch : 0.25 * o->T;
        p.n = o->n;
        p.beta = o->beta;
        p.r0 = o->r0;
        if (!o->out.empty() && !o->force && std::filesystem::exists(o->out))
            throw input_error("output file '" + o->out +
                              "' already exists; pass --force to overwrite it");

        std::vector<double> times{0.0};
        for (std::int64_t i = 1; i <= o->samples; ++i) {
            const double f = double(i) / double(o->samples);
            times.push_back(o->spacing == "linear" ? f * o->T : o->T * std::pow(1e-3, 1.0 - f));
        }
        const auto samples = integrate_reduced(p, times, o->rtol, 0.0);

        if (!o->out.empty()) {
            trajectory_layout layout;
            layout.n = 1; // one representative token: every r_k is the same
            layout.d = 2;
            layout.positions = false;
            layout.scheme = std::string(info(p.scheme.id).name);
            layout.observable_names = {"mean_cos", "gap", "velocity", "r_mean"};
            std::unique_ptr<trajectory_writer> writer;
            try {
                writer = std::make_unique<trajectory_writer>(o->out, layout, o->force);
            } catch (const io_error& e) {
                throw input_error(e.what());
            }
            parameter_list params;
            params.set("model", std::string("reduced"));
            params.set("scheme", layout.scheme);
            params.set("n", o->n);
            params.set("beta", o->beta);
            params.set("r0", o->r0);
            params.set("alpha", o->alpha);
            params.set("t_switch", p.scheme.t_switch);
            params.set("T", o->T);
            params.set("rtol", o->rtol);
            params.set("spacing", o->spacing);
            params.set("command_line", invocation);
            params.set("nadyn_version", std::string(version()));
            params.set("git_commit", std::string(git_commit()));
            writer->write_parameters(params);
            std::int64_t step = 0;
            for (const auto& s : samples)
                writer->write_frame(step++, s.t, nullptr, &s.r, {1.0 - s.u, s.u, s.velocity, s.r});
            writer->finish(run_status::complete, {});
        }

        if (o->csv) {
            std::printf("t,gamma,gap,velocity,r\n");
            for (const auto& s : samples)
                std::printf("%.17g,%.17g,%.17g,%.17g,%.17g\n", s.t, 1.0 - s.u, s.u, s.velocity,
                            s.r);
        } else {
            std::printf("%s, n = %g, beta = %g, r0 = %g, alpha = %g, t_switch = %g\n",
                        info(p.scheme.id).name.data(), o->n, o->beta, o->r0, o->alpha,
                        p.scheme.t_switch);
            std::printf("%14s %22s %22s %22s %14s\n", "t", "gamma", "1 - gamma", "gamma'", "r");
            const std::size_t rows = std::min<std::size_t>(samples.size(), 21);
            for (std::size_t row = 0; row < rows; ++row) {
                const auto& s = samples[rows == 1 ? 0 : row * (samples.size() - 1) / (rows - 1)];
                std::printf("%14.6g %22.15g %22.15e %22.15e %14.8g\n", s.t, 1.0 - s.u, s.u,
                            s.velocity, s.r);
            }
            if (!o->out.empty()) std::printf("wrote %s\n", o->out.c_str());
        }
        return 0;
    };
}

} // namespace nadyn::cli
