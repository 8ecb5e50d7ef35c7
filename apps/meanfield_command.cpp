// nadyn meanfield: the tokens' density under the mean-field continuity equation
// (docs/model.md §16), the n -> infinity limit of `nadyn simulate`.
#include "commands.hpp"
#include "stop_signal.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/meanfield/density_file.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"

#include <cstdio>

namespace nadyn::cli {

namespace {

struct meanfield_options {
    std::string geometry = "auto", scheme = "post-ln", init = "noise:0.01";
    std::string weights = "identity", value = "same", combine = "mean";
    std::size_t d = 2, points = 1024, degree = 64, heads = 1, modes = 8;
    double beta = 4.0, r0 = 1.0, alpha = 1.0, t_switch = 0.0, T = 20.0, dt = 0.01, rtol = 1e-9,
           atol = 1e-11, resolution_tol = 1e-8, peak_floor = 2.0;
    std::int64_t every = 10, threads = 0;
    std::uint64_t seed = 1;
    std::string out, resume;
    bool force = false, quiet = false;
    CLI::Option* t_switch_option = nullptr;
    std::vector<CLI::Option*> run_options;
};

meanfield::meanfield_config to_config(const meanfield_options& o) {
    meanfield::meanfield_config c;
    c.geometry = meanfield::parse_geometry(o.geometry);
    c.d = o.d;
    c.points = o.points;
    c.degree = o.degree;
    c.beta = o.beta;
    c.r0 = o.r0;
    c.scheme.id = parse_scheme(o.scheme);
    c.scheme.alpha = o.alpha;
    if (o.t_switch_option->count() > 0) c.t_switch = o.t_switch;
    c.T = o.T;
    c.dt = o.dt;
    c.every = o.every;
    c.rtol = o.rtol;
    c.atol = o.atol;
    c.init = meanfield::density_init::parse(o.init);
    c.weights = weights_spec::parse(o.weights);
    c.weights.heads = o.heads;
    c.weights.value = parse_value_family(o.value);
    c.combine = parse_head_combine(o.combine);
    c.seed = o.seed;
    c.modes = o.modes;
    c.resolution_tol = o.resolution_tol;
    c.peak_floor = o.peak_floor;
    c.threads = static_cast<int>(o.threads);
    c.command_line = invocation;
    return c;
}

int report(const meanfield::density_summary& s, const std::string& path, bool quiet) {
    using meanfield::density_outcome;
    if (s.outcome == density_outcome::unresolved) {
        std::fprintf(stderr,
                     "nadyn: unresolved at t = %.6g: the density's top coefficients reached "
                     "%.3g of its mean (--resolution-tol); the frames up to t = %.6g are kept in "
                     "%s; raise --points (circle) or --degree (sphere, zonal) to go further\n",
                     s.unresolved_time, s.unresolved_tail, s.last_time, path.c_str());
        return 1;
    }
    if (!quiet)
        std::printf("%s: %zu frames, t = %g, %.3f s (%lld steps, %lld rejected, %lld RHS "
                    "evaluations)\n%s %s\n",
                    meanfield::to_string(s.outcome), s.frames, s.last_time, s.wall_seconds,
                    static_cast<long long>(s.steps), static_cast<long long>(s.rejected),
                    static_cast<long long>(s.evaluations),
                    s.outcome == density_outcome::interrupted ? "kept the frames in" : "wrote",
                    path.c_str());
    // Interrupted by SIGINT (130) or SIGTERM (143), as nadyn simulate (docs/cli.md).
    return s.outcome == density_outcome::interrupted ? stopped_status() : 0;
}

} // namespace

command add_meanfield(CLI::App& app) {
    auto o = std::make_shared<meanfield_options>();
    auto run_option = [&](CLI::Option* option) {
        o->run_options.push_back(option);
        return option;
    };
    run_option(app.add_option("--geometry", o->geometry,
                              "auto (circle for d = 2, sphere for d = 3, zonal otherwise), "
                              "circle, sphere, zonal (densities of x_d alone, any d)"))
        ->capture_default_str();
    run_option(app.add_option("--d", o->d, "Dimension (the sphere S^{d-1}), 2 to 512"))
        ->capture_default_str();
    run_option(app.add_option("--points", o->points, "The circle's nodes (even)"))
        ->capture_default_str();
    run_option(app.add_option("--degree", o->degree,
                              "The highest spherical-harmonic degree (sphere, zonal)"))
        ->capture_default_str();
    run_option(app.add_option("--beta", o->beta, "Inverse temperature (> 0)"))
        ->capture_default_str();
    run_option(app.add_option("--scheme", o->scheme,
                              "post-ln | sqrt-scaling | ngpt | mix-ln (up to its switch) | pre-ln "
                              "and peri-ln (the kinetic form: circle, identity weights)"))
        ->capture_default_str();
    run_option(app.add_option("--r0", o->r0, "Every token's starting magnitude (pre-ln, peri-ln)"))
        ->capture_default_str();
    run_option(app.add_option("--alpha", o->alpha, "nGPT step alpha"))->capture_default_str();
    o->t_switch_option = run_option(
        app.add_option("--t-switch", o->t_switch, "mix-ln switch time (must be >= T here)"));
    run_option(app.add_option("--T", o->T, "Horizon"))->capture_default_str();
    run_option(app.add_option("--dt", o->dt, "First step; frames every `every * dt`"))
        ->capture_default_str();
    run_option(app.add_option("--every", o->every, "A frame every `every * dt` in time")
                   ->check(decimal_integer<std::int64_t>()))
        ->capture_default_str();
    run_option(app.add_option("--rtol", o->rtol, "Relative tolerance (adaptive Dormand-Prince)"))
        ->capture_default_str();
    run_option(app.add_option("--atol", o->atol, "Absolute tolerance"))->capture_default_str();
    run_option(app.add_option("--init", o->init,
                              "uniform | perturbed:K,EPS | vonmises:Q,KAPPA | noise:EPS[,KMAX]"))
        ->capture_default_str();
    run_option(
        app.add_option("--weights", o->weights,
                       "identity, or fixed weights (d = 2 only): " + std::string(weights_names)))
        ->capture_default_str();
    run_option(app.add_option("--heads", o->heads, "Attention heads"))->capture_default_str();
    run_option(
        app.add_option("--value", o->value, "Value matrix family: " + std::string(value_names)))
        ->capture_default_str();
    run_option(app.add_option("--head-combine", o->combine, "mean | sum"))->capture_default_str();
    run_option(app.add_option("--seed", o->seed, "Seed of the noise start and random weights")
                   ->check(decimal_integer<std::uint64_t>()))
        ->capture_default_str();
    run_option(app.add_option("--mode-count", o->modes, "Degrees k = 1..K of the modes"))
        ->capture_default_str();
    run_option(app.add_option("--resolution-tol", o->resolution_tol,
                              "Stop when the top third of the grid's coefficients exceeds this "
                              "fraction of the mean (or rho < -tol max rho)"))
        ->capture_default_str();
    run_option(app.add_option("--peak-floor", o->peak_floor,
                              "peaks counts local maxima above this density (uniform = 1)"))
        ->capture_default_str();
    run_option(app.add_option("--threads", o->threads, "OpenMP threads (0: all cores)")
                   ->check(decimal_integer<std::int64_t>()))
        ->capture_default_str();
    app.add_option("--out", o->out, "Output file (default meanfield.h5)");
    app.add_flag("--force", o->force, "Overwrite an existing output file");
    app.add_option("--resume", o->resume, "Continue the run of this density file");
    app.add_flag("--quiet", o->quiet, "No summary line");
    app.footer("Examples:\n"
               "  nadyn meanfield --beta 5 --points 4096 --init noise:0.01 --T 15 --out circle.h5\n"
               "  nadyn meanfield --d 64 --geometry zonal --degree 48 --init perturbed:2,1e-3\n"
               "  nadyn meanfield --resume circle.h5");

    return [o]() {
        const std::atomic<bool>* stop = nullptr;
        if (!o->resume.empty()) {
            for (const CLI::Option* option : o->run_options)
                if (option->count() > 0)
                    throw input_error("--resume takes every input from its file; " +
                                      option->get_name() + " cannot be combined with it");
            if (!o->out.empty())
                throw input_error("--resume appends to its FILE; --out cannot be combined with it");
            stop = install_stop_signals();
            try {
                return report(meanfield::resume_file(o->resume, stop), o->resume, o->quiet);
            } catch (const io_error&) {
                refuse_empty_output(o->resume); // a stub left at creation: say so
                throw;
            }
        }
        meanfield::density_solver solver(to_config(*o));
        const std::string out = o->out.empty() ? "meanfield.h5" : o->out;
        check_output_path(out, o->force);
        stop = install_stop_signals();
        return report(meanfield::run_to_file(solver, out, o->force, stop), out, o->quiet);
    };
}

} // namespace nadyn::cli
