// nadyn sweep EXPERIMENT.toml: every run of an experiment in one process, one labelled file.
#include "commands.hpp"
#include "stop_signal.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/meanfield/density_sweep.hpp"
#include "nadyn/model/error.hpp"
#if defined(NADYN_WITH_MPI)
#include "nadyn/parallel/mpi_sweep.hpp"
#endif

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>

namespace nadyn::cli {

const parallel_context* sweep_ranks = nullptr;

std::ostream& quiet_stream() {
    static std::ostream discard(nullptr);
    return discard;
}

namespace {

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

// A resume that found runs marked complete whose results are not the ones written (a disk
// that filled up, a file edited by hand) ran them again: say so.
void warn_distrusted(const sweep_summary& summary) {
    if (summary.distrusted == 0) return;
    std::fprintf(stderr,
                 "nadyn: %zu runs were marked complete but their results in the file did not "
                 "match their checksums; they were run again\n",
                 summary.distrusted);
}

std::string default_sweep_name(const std::string& experiment_path) {
    return std::filesystem::path(experiment_path).stem().string() + ".h5";
}

#if defined(NADYN_WITH_MPI)
// mpirun -np P nadyn sweep: rank 0 prepares (and alone prints), every rank takes part.
int sweep_on_ranks(const parallel_context& ranks, const sweep_command_options& o,
                   sweep_options options, bool bar) {
    if (!ranks.root()) options.progress = nullptr;
    options.stop = install_stop_signals();
    std::string plan; // --dry-run's, printed once every rank has read the inputs
    const auto prepare = [&] {
        ranks_sweep_job job;
        if (!o.resume.empty()) {
            if (!o.experiment_path.empty() || !o.overrides.empty() || !o.out.empty())
                throw input_error("--resume runs the experiment recorded in its FILE; give no "
                                  "EXPERIMENT, --set or --out with it");
            job.path = o.resume;
            job.resume = true;
            job.e = sweep_experiment(job.path);
        } else {
            if (o.experiment_path.empty())
                throw input_error("nadyn sweep needs an EXPERIMENT file (or --resume FILE); see "
                                  "'nadyn sweep --help' and examples/beta_sweep.toml");
            job.e = experiment::load(o.experiment_path, o.overrides);
            job.path = o.out.empty() ? default_sweep_name(o.experiment_path) : o.out;
        }
        if (o.dry_run) {
            const rank_schedule schedule = schedule_on_rank(ranks, job.e, o.jobs);
            plan = describe_plan(job.e, plan_sweep(job.e, o.jobs)) +
                   "\nranks: " + std::to_string(ranks.size()) +
                   ", every one computing (rank 0 also writes the file); on rank 0: " +
                   std::to_string(schedule.jobs) + " side by side, threads per run " +
                   (schedule.threads > 0 ? std::to_string(schedule.threads)
                                         : std::string("OMP_NUM_THREADS"));
            job.plan_only = true;
        }
        return job;
    };
    const ranks_sweep_result result = sweep_over_ranks(ranks, prepare, options);
    if (o.dry_run) {
        if (ranks.root()) std::printf("%s\n", plan.c_str());
        return 0;
    }
    const sweep_summary& summary = result.summary;
    const bool interrupted = result.stopped || summary.interrupted > 0;
    if (ranks.root()) {
        const std::string path = !o.resume.empty() ? o.resume
                                 : o.out.empty()   ? default_sweep_name(o.experiment_path)
                                                   : o.out;
        if (bar) std::fprintf(stderr, "\n");
        warn_distrusted(summary);
        std::string per_rank;
        for (const std::size_t runs : result.runs_per_rank)
            per_rank += (per_rank.empty() ? "" : ", ") + std::to_string(runs);
        std::printf("%s: %zu runs complete, %zu interrupted, %zu failed, %zu already done "
                    "(%d ranks computing, runs per rank %s; %d side by side each), %.3f s\n"
                    "rank 0: %.3f s writing, %.3f s receiving, %.3f s idle\n"
                    "%s %s\n",
                    interrupted ? "interrupted" : "complete", summary.complete, summary.interrupted,
                    summary.failed, summary.skipped, ranks.size(), per_rank.c_str(), summary.jobs,
                    summary.wall_seconds, result.writing_seconds, result.receiving_seconds,
                    result.idle_seconds, interrupted ? "kept the finished runs in" : "wrote",
                    path.c_str());
        if (summary.failed)
            std::fprintf(stderr, "nadyn: %zu runs failed; the first: %s\n", summary.failed,
                         summary.first_failure.c_str());
    }
    if (interrupted) return stopped_status();
    return summary.failed ? 1 : 0;
}
#endif

// A sweep of the density solver ([run] model = "meanfield"): its runs one after the other.
int density_sweep(const sweep_command_options& o, bool bar) {
    meanfield::density_experiment e;
    std::string path;
    const bool resume = !o.resume.empty();
    if (resume) {
        path = o.resume;
        e = meanfield::density_experiment::from_file(path);
    } else {
        e = meanfield::density_experiment::parse(read_experiment_text(o.experiment_path),
                                                 o.experiment_path, o.overrides);
        path = o.out.empty() ? default_sweep_name(o.experiment_path) : o.out;
    }
    if (o.dry_run) {
        std::printf("%zu runs of nadyn meanfield, one after the other, into %s\n", e.size(),
                    path.c_str());
        for (std::size_t i = 0; i < e.size(); ++i)
            std::printf("  %zu  %s\n", i, e.label(i).c_str());
        return 0;
    }
    if (!resume) check_output_path(path, o.force);
    const std::atomic<bool>* stop = install_stop_signals();
    const auto progress = [&](std::size_t done, std::size_t total, const std::string&) {
        if (bar) draw_progress({done, total, 0.0});
    };
    const meanfield::density_sweep_summary s =
        meanfield::run_density_sweep(e, path, o.force, resume, stop, progress);
    if (bar) std::fprintf(stderr, "\n");
    std::printf(
        "%s: %zu runs complete, %zu unresolved, %zu interrupted, %zu failed, %.3f s\n%s %s\n",
        s.stopped ? "interrupted" : "complete", s.complete, s.unresolved, s.interrupted, s.failed,
        s.wall_seconds, s.stopped ? "kept the finished runs in" : "wrote", path.c_str());
    if (s.unresolved)
        std::fprintf(stderr,
                     "nadyn: %zu runs outgrew their grid before T (status 4, unresolved_time); "
                     "their frames up to then are kept\n",
                     s.unresolved);
    if (s.stopped) return stopped_status();
    return s.failed ? 1 : 0;
}

// Whether the command line names a density solver's experiment or sweep file.
bool is_density_sweep(const sweep_command_options& o) {
    if (!o.resume.empty()) {
        try {
            return meanfield::is_density_sweep_file(o.resume);
        } catch (const io_error&) {
            return false; // the particles' path says what is wrong with the file
        }
    }
    if (o.experiment_path.empty()) return false;
    return experiment_model(read_experiment_text(o.experiment_path), o.experiment_path,
                            o.overrides) == "meanfield";
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
               "  nadyn sweep --resume beta.h5          # after Ctrl-C: run what is missing\n"
               "  mpirun -np 5 nadyn sweep exp.toml     # over MPI ranks (docs/cli.md: Clusters)");
    return [o]() {
        sweep_options options;
        options.jobs = o->jobs;
        options.overwrite = o->force;
        const bool bar = !o->quiet && isatty(STDERR_FILENO);
        if (bar) options.progress = draw_progress;
        options.warn = [](const std::string& warning) {
            std::fprintf(stderr, "nadyn: %s\n", warning.c_str());
        };
        if (!o->resume.empty() &&
            (!o->experiment_path.empty() || !o->overrides.empty() || !o->out.empty()))
            throw input_error("--resume runs the experiment recorded in its FILE; give no "
                              "EXPERIMENT, --set or --out with it");
        if (is_density_sweep(*o)) {
            if (sweep_ranks && sweep_ranks->size() > 1)
                throw input_error("a meanfield experiment runs in one process (its runs use "
                                  "every core in turn); run nadyn sweep without mpirun");
            return density_sweep(*o, bar);
        }
#if defined(NADYN_WITH_MPI)
        if (sweep_ranks && sweep_ranks->size() > 1)
            return sweep_on_ranks(*sweep_ranks, *o, options, bar);
#endif

        sweep_summary summary;
        std::string path;
        if (!o->resume.empty()) {
            if (!o->experiment_path.empty() || !o->overrides.empty() || !o->out.empty())
                throw input_error("--resume runs the experiment recorded in its FILE; give no "
                                  "EXPERIMENT, --set or --out with it");
            path = o->resume;
            const experiment e = [&] {
                try {
                    return sweep_experiment(path);
                } catch (const std::exception&) {
                    refuse_empty_output(path); // a stub left at creation: say so
                    throw;
                }
            }();
            if (o->dry_run) {
                std::printf("%s\n", describe_plan(e, plan_sweep(e, o->jobs)).c_str());
                return 0;
            }
            options.stop = install_stop_signals();
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
            options.stop = install_stop_signals();
            summary = run_sweep(e, path, options);
        }
        if (bar) std::fprintf(stderr, "\n");
        warn_distrusted(summary);
        const bool interrupted = stop_signalled() || summary.interrupted > 0;
        std::printf("%s: %zu runs complete, %zu interrupted, %zu failed, %zu already done "
                    "(%d side by side), %.3f s\n%s %s\n",
                    interrupted ? "interrupted" : "complete", summary.complete, summary.interrupted,
                    summary.failed, summary.skipped, summary.jobs, summary.wall_seconds,
                    interrupted ? "kept the finished runs in" : "wrote", path.c_str());
        if (summary.failed)
            std::fprintf(stderr, "nadyn: %zu runs failed; the first: %s\n", summary.failed,
                         summary.first_failure.c_str());
        if (interrupted) return stopped_status();
        return summary.failed ? 1 : 0;
    };
}

} // namespace nadyn::cli
