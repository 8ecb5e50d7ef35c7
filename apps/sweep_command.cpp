// nadyn sweep EXPERIMENT.toml: every run of an experiment in one process, one labelled file.
#include "commands.hpp"

#include "nadyn/error.hpp"
#include "nadyn/sweep.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>

namespace nadyn::cli {

namespace {

std::atomic<bool> sweep_stop{false};

extern "C" void request_sweep_stop(int) {
    sweep_stop.store(true);
}

struct sweep_command_options {
    std::string experiment_path;
    std::vector<std::string> overrides;
    std::string out;
    std::string resume;
    int jobs = 0;
    bool dry_run = false;
    bool force = false;
    bool quiet = false;
};

// "runs 37/512 [####      ] elapsed 3.1s ETA 40s" on stderr, redrawn in place.
void draw_progress(const sweep_progress& p) {
    const int width = 30;
    const double fraction = p.total ? double(p.done) / double(p.total) : 1.0;
    std::string bar(static_cast<std::size_t>(fraction * width + 0.5), '#');
    bar.resize(width, ' ');
    const double eta = p.done ? p.elapsed * double(p.total - p.done) / double(p.done) : 0.0;
    std::fprintf(stderr, "\rruns %zu/%zu [%s] elapsed %.1fs ETA %.1fs ", p.done, p.total,
                 bar.c_str(), p.elapsed, eta);
    std::fflush(stderr);
}

std::string default_sweep_name(const std::string& experiment_path) {
    return std::filesystem::path(experiment_path).stem().string() + ".h5";
}

} // namespace

command add_sweep(CLI::App& app) {
    auto o = std::make_shared<sweep_command_options>();
    app.add_option("experiment", o->experiment_path,
                   "Experiment file (TOML): [run] with nadyn simulate's parameters, [sweep] "
                   "with the axes");
    app.add_option("--set", o->overrides,
                   "Override a key, in TOML syntax: run.n=128, sweep.seed.range=[1,8], "
                   "sweep.scheme=[\"pre-ln\",\"post-ln\"] (repeatable)");
    app.add_option("--out", o->out, "Result file (default: the experiment's name with .h5)");
    app.add_flag("--dry-run", o->dry_run,
                 "Print the runs, the work, the memory and the schedule, then exit");
    app.add_option("--resume", o->resume,
                   "Run what is missing of the sweep in FILE (its recorded experiment)");
    app.add_option("--jobs", o->jobs,
                   "Runs side by side (0: chosen from the runs' size and the cores)")
        ->transform(decimal_integer<int>());
    app.add_flag("--force", o->force, "Overwrite an existing result file");
    app.add_flag("--quiet", o->quiet, "No progress bar");
    app.footer("Examples:\n"
               "  nadyn sweep examples/beta_sweep.toml --out beta.h5\n"
               "  nadyn sweep examples/beta_sweep.toml --set sweep.seed.range=[1,4] --dry-run\n"
               "  nadyn sweep --resume beta.h5          # after Ctrl-C: run what is missing");
    return [o]() {
        if (o->jobs < 0)
            throw input_error("--jobs must be >= 0 (0: chosen automatically), got " +
                              std::to_string(o->jobs));
        sweep_options options;
        options.jobs = o->jobs;
        options.stop = &sweep_stop;
        options.overwrite = o->force;
        const bool bar = !o->quiet && isatty(STDERR_FILENO);
        if (bar) options.progress = draw_progress;
        sweep_stop.store(false);

        sweep_summary summary;
        std::string path;
        if (!o->resume.empty()) {
            if (!o->experiment_path.empty() || !o->overrides.empty() || !o->out.empty())
                throw input_error("--resume runs the experiment recorded in its FILE; give no "
                                  "EXPERIMENT, --set or --out with it");
            path = o->resume;
            const experiment e = sweep_experiment(path);
            if (o->dry_run) {
                std::printf("%s\n", describe_plan(e, plan_sweep(e, o->jobs)).c_str());
                return 0;
            }
            std::signal(SIGINT, request_sweep_stop);
            std::signal(SIGTERM, request_sweep_stop);
            summary = resume_sweep(path, options);
        } else {
            if (o->experiment_path.empty())
                throw input_error("nadyn sweep needs an EXPERIMENT file (or --resume FILE); see "
                                  "'nadyn sweep --help' and examples/beta_sweep.toml");
            const experiment e = experiment::load(o->experiment_path, o->overrides);
            if (o->dry_run) {
                std::printf("%s\n", describe_plan(e, plan_sweep(e, o->jobs)).c_str());
                return 0;
            }
            path = o->out.empty() ? default_sweep_name(o->experiment_path) : o->out;
            std::signal(SIGINT, request_sweep_stop);
            std::signal(SIGTERM, request_sweep_stop);
            summary = run_sweep(e, path, options);
        }
        if (bar) std::fprintf(stderr, "\n");
        const bool interrupted = sweep_stop.load() || summary.interrupted > 0;
        std::printf("%s: %zu runs complete, %zu interrupted, %zu failed, %zu already done "
                    "(%d side by side), %.3f s\n%s %s\n",
                    interrupted ? "interrupted" : "complete", summary.complete, summary.interrupted,
                    summary.failed, summary.skipped, summary.jobs, summary.wall_seconds,
                    interrupted ? "kept the finished runs in" : "wrote", path.c_str());
        if (summary.failed)
            std::fprintf(stderr, "nadyn: %zu runs failed; the first: %s\n", summary.failed,
                         summary.first_failure.c_str());
        if (interrupted) return 130;
        return summary.failed ? 1 : 0;
    };
}

} // namespace nadyn::cli
