// nadyn simulate: parse the flags into a run_config, run it to a file, report.
#include "commands.hpp"

#include "nadyn/error.hpp"
#include "nadyn/run.hpp"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <limits>
#include <type_traits>

namespace nadyn::cli {

namespace {

std::atomic<bool> stop_requested{false};

extern "C" void request_stop(int) {
    stop_requested.store(true);
}

struct simulate_options {
    std::string scheme = "peri-ln";
    std::int64_t n = 64, d = 3;
    double beta = 4.0, T = 20.0, dt = 0.01, rtol = 1e-8, atol = 1e-10;
    std::string integrator = "rk4";
    std::string init = "uniform";
    std::string weights = "identity";
    std::uint64_t seed = 1;
    double r0 = 1.0, alpha = 1.0;
    double t_switch = -1.0;
    bool causal = false;
    std::string precision = "double";
    std::int64_t every = 0;
    std::string positions = "all";
    int threads = 0;
    double cluster_eps = 1e-3;
    bool compress = false;
    std::string out;
    std::string resume;
    bool force = false;
    bool no_swmr = false;
    bool quiet = false;
};

std::string trimmed_number(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", value);
    return buffer;
}

// A new descriptive name in the current directory: scheme, n, d, beta and the UTC time,
// with a counter when that name is taken (two runs in the same second).
std::string default_output_name(const run_config& c) {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &parts);
    const std::string stem = std::string(info(c.scheme_id).name) + "_n" + std::to_string(c.n) +
                             "_d" + std::to_string(c.d) + "_beta" + trimmed_number(c.beta) + "_" +
                             stamp;
    std::string name = stem + ".h5";
    for (int counter = 2; std::filesystem::exists(name); ++counter)
        name = stem + "_" + std::to_string(counter) + ".h5";
    return name;
}

class progress_bar {
  public:
    explicit progress_bar(bool enabled)
        : m_enabled(enabled), m_start(std::chrono::steady_clock::now()) {}
    void operator()(double fraction) {
        if (!m_enabled) return;
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
        const int width = 30;
        const int filled = static_cast<int>(fraction * width + 0.5);
        std::string bar(static_cast<std::size_t>(filled), '#');
        bar.resize(width, ' ');
        const double eta = fraction > 0 ? elapsed * (1.0 - fraction) / fraction : 0.0;
        std::fprintf(stderr, "\r[%s] %5.1f%%  elapsed %.1fs  ETA %.1fs ", bar.c_str(),
                     100.0 * fraction, elapsed, eta);
        std::fflush(stderr);
        m_drawn = true;
    }
    void finish() {
        if (m_drawn) std::fprintf(stderr, "\n");
    }

  private:
    bool m_enabled;
    bool m_drawn = false;
    std::chrono::steady_clock::time_point m_start;
};

} // namespace

void print_summary(const run_summary& summary, const std::string& path) {
    const bool interrupted = summary.outcome == integration_outcome::interrupted;
    std::printf("%s: %zu frames, t = %g, mean_cos = %.12g, clusters = %g, %.3f s (%llu RHS "
                "evaluations)\n%s %s\n",
                interrupted ? "interrupted" : "complete", summary.frames, summary.last_time,
                summary.last.mean_cos, summary.last.clusters, summary.wall_seconds,
                static_cast<unsigned long long>(summary.statistics.rhs_evaluations),
                interrupted ? "kept the frames in" : "wrote", path.c_str());
}

// --resume FILE: every input comes from the file; a flag given on the command line must
// agree with it, except --T (which may grow) and the options that do not change the
// trajectory.
int resume(const CLI::App& app, const simulate_options& o,
           const std::function<run_config()>& to_config) {
    if (!o.out.empty())
        throw input_error("--resume appends to its FILE; --out cannot be combined with it");
    simulation run = simulation::from_file(o.resume);
    const parameter_list recorded = run.config().to_parameters();
    const parameter_list given = to_config().to_parameters();
    const std::pair<const char*, const char*> flags[] = {{"--scheme", "scheme"},
                                                         {"--n", "n"},
                                                         {"--d", "d"},
                                                         {"--beta", "beta"},
                                                         {"--dt", "dt"},
                                                         {"--integrator", "integrator"},
                                                         {"--rtol", "rtol"},
                                                         {"--atol", "atol"},
                                                         {"--init", "init"},
                                                         {"--weights", "weights"},
                                                         {"--seed", "seed"},
                                                         {"--r0", "r0"},
                                                         {"--alpha", "alpha"},
                                                         {"--t-switch", "t_switch"},
                                                         {"--causal", "causal"},
                                                         {"--precision", "precision"},
                                                         {"--every", "every"},
                                                         {"--positions", "positions"},
                                                         {"--cluster-eps", "cluster_eps"},
                                                         {"--compress", "compress"}};
    for (const auto& [flag, name] : flags) {
        if (app.get_option(flag)->count() == 0) continue;
        const std::string want = to_display_string(*given.find(name));
        const std::string have = to_display_string(*recorded.find(name));
        if (want != have)
            throw input_error("--" + std::string(name) + " = " + want + " disagrees with '" +
                              o.resume + "', which was run with " + name + " = " + have +
                              " (a resumed run may only extend --T)");
    }
    std::optional<double> horizon;
    if (app.get_option("--T")->count() > 0) {
        if (!std::isfinite(o.T) || o.T < run.config().integration.T)
            throw input_error("--T = " + std::to_string(o.T) + " cannot shorten the run in '" +
                              o.resume + "' (T = " + std::to_string(run.config().integration.T) +
                              ")");
        horizon = o.T;
    }
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    progress_bar bar(!o.quiet && isatty(STDERR_FILENO));
    const run_summary summary =
        run.resume_file(o.resume, horizon, &stop_requested, [&bar](double f) { bar(f); });
    bar.finish();
    print_summary(summary, o.resume);
    return summary.outcome == integration_outcome::interrupted ? 130 : 0;
}

command add_simulate(CLI::App& app, std::function<run_config()>* config) {
    auto o = std::make_shared<simulate_options>();
    app.add_option("--scheme", o->scheme, "Normalisation scheme: " + scheme_names())
        ->capture_default_str();
    app.add_option("--n", o->n, "Number of tokens (>= 1)")
        ->capture_default_str()
        ->transform(decimal_integer<std::int64_t>());
    app.add_option("--d", o->d, "Dimension (>= 2); tokens live on S^{d-1}")
        ->capture_default_str()
        ->transform(decimal_integer<std::int64_t>());
    app.add_option("--beta", o->beta, "Inverse temperature of the softmax")->capture_default_str();
    app.add_option("--T", o->T, "Horizon (final time, continuous depth)")->capture_default_str();
    app.add_option("--dt", o->dt, "Step (fixed steppers, layers: h), initial step (dopri5)")
        ->capture_default_str();
    app.add_option("--integrator", o->integrator, "rk4 | dopri5 | euler | layers")
        ->capture_default_str();
    app.add_option("--rtol", o->rtol, "Relative tolerance (dopri5)")->capture_default_str();
    app.add_option("--atol", o->atol, "Absolute tolerance (dopri5)")->capture_default_str();
    app.add_option("--init", o->init, "uniform | orthogonal | cap:EPS | file:PATH")
        ->capture_default_str();
    app.add_option("--weights", o->weights, "identity | random | random-per-layer | file:PATH")
        ->capture_default_str();
    app.add_option("--seed", o->seed, "Seed of the initial condition and random weights")
        ->capture_default_str()
        ->transform(decimal_integer<std::uint64_t>());
    app.add_option("--r0", o->r0, "Initial magnitude of every token")->capture_default_str();
    app.add_option("--alpha", o->alpha, "nGPT step alpha")->capture_default_str();
    // Whether the flag was given, not a sentinel value: --t-switch -1 must be refused.
    auto* t_switch_option =
        app.add_option("--t-switch", o->t_switch, "mix-ln switch time (default 0.25 T)");
    app.add_flag("--causal", o->causal, "Causal mask: token k attends to j <= k");
    app.add_option("--precision", o->precision,
                   "Arithmetic of the attention kernel: double | float (float: about "
                   "beta * 1e-7 relative error in A, faster for large n)")
        ->capture_default_str();
    app.add_option("--every", o->every, "Write a frame every K steps (default: about 100 frames)")
        ->transform(decimal_integer<std::int64_t>());
    app.add_option("--positions", o->positions,
                   "all | none (none: magnitudes and observables "
                   "only, for large n)")
        ->capture_default_str();
    app.add_option("--threads", o->threads, "OpenMP threads (0: all cores)")
        ->capture_default_str()
        ->transform(decimal_integer<int>());
    app.add_option("--cluster-eps", o->cluster_eps,
                   "Tokens with cosine >= 1 - eps are in one cluster (single linkage)")
        ->capture_default_str();
    app.add_flag("--no-swmr", o->no_swmr,
                 "Write without HDF5's single-writer/multiple-reader mode (for file systems "
                 "without the locking it needs; the file then uses the HDF5 1.8 format)");
    app.add_flag("--compress", o->compress, "Deflate + shuffle the positions (slower writes)");
    app.add_option("--out", o->out, "Output file (default: a new descriptive name here)");
    app.add_flag("--force", o->force,
                 "Overwrite an existing output file; run even if the memory estimate exceeds "
                 "the memory available now");
    app.add_flag("--quiet", o->quiet, "No progress bar");

    auto to_config = [o, t_switch_option]() {
        run_config c;
        c.scheme_id = parse_scheme(o->scheme);
        if (o->n < 1)
            throw input_error("n must be at least 1 (number of tokens), got " +
                              std::to_string(o->n));
        if (o->d < 2)
            throw input_error("d must be at least 2 (dimension of the sphere S^{d-1}), got " +
                              std::to_string(o->d));
        c.n = static_cast<std::size_t>(o->n);
        c.d = static_cast<std::size_t>(o->d);
        c.beta = o->beta;
        c.integration.kind = parse_integrator(o->integrator);
        c.integration.T = o->T;
        c.integration.dt = o->dt;
        c.integration.rtol = o->rtol;
        c.integration.atol = o->atol;
        c.integration.every = o->every;
        if (o->every < 0)
            throw input_error("every must be >= 1 (or 0 for about 100 frames), got " +
                              std::to_string(o->every));
        c.init = initial_spec::parse(o->init);
        c.weights = weights_spec::parse(o->weights);
        c.seed = o->seed;
        c.r0 = o->r0;
        c.alpha = o->alpha;
        if (t_switch_option->count() > 0) c.t_switch = o->t_switch;
        c.causal = o->causal;
        c.arithmetic = parse_precision(o->precision);
        if (o->positions != "all" && o->positions != "none")
            throw input_error("unknown positions '" + o->positions + "'; valid choices: all, none");
        c.positions = o->positions == "all";
        c.threads = o->threads;
        c.cluster_eps = o->cluster_eps;
        c.compress = o->compress;
        c.swmr = !o->no_swmr;
        c.ignore_memory_estimate = o->force;
        c.command_line = invocation;
        return c;
    };
    if (config) *config = to_config;

    auto* resume_option = app.add_option(
        "--resume", o->resume,
        "Continue the run in FILE from its last frame, appending to it (flags may only extend "
        "--T; --threads may differ)");

    return [o, to_config, &app, resume_option]() {
        if (resume_option->count() > 0) return resume(app, *o, to_config);
        const run_config c = to_config();
        simulation run(c); // validates and reads every input file before any output exists
        const std::string path = o->out.empty() ? default_output_name(c) : o->out;
        if (!o->force && std::filesystem::exists(path))
            throw input_error("output file '" + path +
                              "' already exists; pass --force to "
                              "overwrite it");

        std::signal(SIGINT, request_stop);
        std::signal(SIGTERM, request_stop);
        progress_bar bar(!o->quiet && isatty(STDERR_FILENO));
        const run_summary summary =
            run.run_to_file(path, o->force, &stop_requested, [&bar](double f) { bar(f); });
        bar.finish();
        print_summary(summary, path);
        return summary.outcome == integration_outcome::interrupted ? 130 : 0;
    };
}

} // namespace nadyn::cli
