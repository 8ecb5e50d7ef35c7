// nadyn simulate: parse the flags into a run_config, run it to a file, report.
#include "commands.hpp"
#include "stop_signal.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/files/child_reader.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/parallel/parallel_context.hpp"
#ifdef NADYN_WITH_MPI
#include "nadyn/parallel/mpi_token_exchange.hpp"
#endif

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <type_traits>
#include <vector>

namespace nadyn::cli {

namespace {

// The text given for each of the registry's parameters, and the command's own options (where
// the file goes, how the command behaves).
struct simulate_options {
    std::map<std::string, std::string, std::less<>> values; // registry name -> text given
    std::map<std::string, bool, std::less<>> switches;      // registry name -> flag given
    std::map<std::string, CLI::Option*, std::less<>> options;
    std::string out;
    std::string resume;
    bool force = false;
    bool quiet = false;

    // The registry's parameters the command line set, in registry order.
    [[nodiscard]] std::vector<std::string> given() const {
        std::vector<std::string> names;
        for (const parameter_spec& spec : parameter_registry()) {
            const auto option = options.find(spec.name);
            if (option != options.end() && option->second->count() > 0)
                names.emplace_back(spec.name);
        }
        return names;
    }
};

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

// mpirun -np P nadyn simulate: the run's tokens shared among the ranks (token_exchange.hpp);
// nullptr in a job of one.
std::unique_ptr<token_exchange> token_sharing(std::size_t n) {
#ifdef NADYN_WITH_MPI
    if (sweep_ranks && sweep_ranks->size() > 1) return share_tokens_over_ranks(*sweep_ranks, n);
#endif
    (void)n;
    return nullptr;
}

// Rank 0 speaks for a shared run: it alone prints the summary and the progress bar.
bool speaks() {
    return !sweep_ranks || sweep_ranks->root();
}

// A run shared among ranks is past the point where the ranks can agree on an outcome once
// it has started: a failure on one rank (the writer's disk, say) ends the job loudly instead
// of leaving the others waiting in the next exchange. Numerical faults need no such care:
// every rank steps the same state and meets them at the same step.
template <class Run> run_summary run_shared(const token_exchange* exchange, Run&& go) {
    if (!exchange) return go();
    try {
        return go();
    } catch (const numerical_fault&) {
        throw;
    } catch (const input_error&) {
        throw; // agreed before any run starts (agree_on_file)
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nadyn: rank %d: %s\n", sweep_ranks->rank(), e.what());
        sweep_ranks->abort(1);
    }
}

// The ranks of an MPI job run one command line (agreed at start-up), but its `file:` paths
// resolve in each rank's own working directory: the ranks agree on a hash of what each read
// (the whole parameter record, every input file's contents, for a resume the file resumed)
// before any file is touched. A rank that could not read its inputs ends every rank with its
// message (instead of leaving the others in the first collective), and so do inputs that
// differ. `prepare` builds this rank's run; a job of one just runs it.
simulation prepared_on_every_rank(const std::function<simulation()>& prepare,
                                  const std::string& resumed) {
    const bool shared = sweep_ranks && sweep_ranks->size() > 1;
    if (!shared) return prepare();
    std::optional<simulation> run;
    std::string refusal, digest;
    try {
        run.emplace(prepare());
        digest = run->inputs_digest();
        if (!resumed.empty()) digest += input_file_sha256(resumed);
    } catch (const input_error& e) {
        refusal = e.what();
    } catch (const io_error& e) {
        refusal = e.what();
    }
    std::uint64_t hash = 0;
    for (const char c : digest) // FNV-1a of the hex digest: the collective compares 64 bits
        hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    const start_agreement agreed = sweep_ranks->agree_on_inputs(hash, !refusal.empty());
    if (agreed.refused_rank >= 0) {
        const std::string text = sweep_ranks->text_from(agreed.refused_rank, refusal);
        throw input_error(agreed.refused_rank == 0
                              ? text
                              : "rank " + std::to_string(agreed.refused_rank) + ": " + text);
    }
    if (agreed.differing_rank >= 0)
        throw input_error("MPI rank " + std::to_string(agreed.differing_rank) +
                          " read other inputs than rank 0 (a file: path that names another file "
                          "there, e.g. from another working directory); every rank must read "
                          "the same files, so none runs");
    return std::move(*run);
}

// The run's warnings, once per job (every rank of a shared run meets the same ones).
void warn(const std::string& warning) {
    if (speaks()) std::fprintf(stderr, "nadyn: %s\n", warning.c_str());
}

void print_shared(const token_exchange* exchange, const run_summary& summary) {
    if (!exchange || !speaks()) return;
    std::printf("shared over %d ranks by tokens (rank 0, %.3f s): %.3f s computing its rows of "
                "A, %.3f s waiting for the others, %.3f s exchanging rows\n",
                exchange->processes(), summary.wall_seconds, exchange->compute_seconds(),
                exchange->waiting_seconds(), exchange->exchange_seconds());
}

} // namespace

void print_summary(const run_summary& summary, const std::string& path) {
    const bool interrupted = summary.outcome == integration_outcome::interrupted;
    // clusters is NaN when the run does not record it (--observables without clusters).
    char clusters[48] = "";
    if (!std::isnan(summary.last.clusters))
        std::snprintf(clusters, sizeof clusters, ", clusters = %g", summary.last.clusters);
    std::printf("%s: %zu frames, t = %g, mean_cos = %.12g%s, %.3f s (%llu RHS "
                "evaluations)\n%s %s\n",
                interrupted ? "interrupted" : "complete", summary.frames, summary.last_time,
                summary.last.mean_cos, clusters, summary.wall_seconds,
                static_cast<unsigned long long>(summary.statistics.rhs_evaluations),
                interrupted ? "kept the frames in" : "wrote", path.c_str());
}

// --resume FILE: every input comes from the file; a flag given on the command line must
// agree with it, except --T (which may grow) and the options that do not change the
// trajectory (the registry's resumable rows).
int resume(const simulate_options& o, const std::function<run_config()>& to_config) {
    if (!o.out.empty())
        throw input_error("--resume appends to its FILE; --out cannot be combined with it");
    const run_config given = to_config();
    const std::vector<std::string> names = o.given();
    simulation run = prepared_on_every_rank(
        [&] {
            refuse_live_output(o.resume); // before any read of a file being written
            simulation from = [&] {
                try {
                    // libhdf5 crashes on some damaged metadata: the same reads, and a walk
                    // of every object, first in a child process, whose crash is then one
                    // line (child_reader.hpp).
                    read_in_child(o.resume, [&] {
                        (void)simulation::from_file(o.resume);
                        verify_readable(o.resume);
                        return 0;
                    });
                    return simulation::from_file(o.resume);
                } catch (const io_error&) {
                    refuse_empty_output(o.resume); // a stub left at creation: say so
                    throw;
                }
            }();
            check_resume_agreement(from.config(), given, names, o.resume);
            from.check_inputs_unchanged(o.resume);
            return from;
        },
        o.resume);
    run.set_warning_sink(warn);
    std::optional<double> horizon;
    if (std::find(names.begin(), names.end(), "T") != names.end()) horizon = given.integration.T;
    const auto exchange = token_sharing(run.config().n);
    run.share_tokens(exchange.get());
    const std::atomic<bool>* stop = install_stop_signals();
    progress_bar bar(!o.quiet && speaks() && isatty(STDERR_FILENO));
    const run_summary summary = run_shared(exchange.get(), [&] {
        return run.resume_file(o.resume, horizon, stop, [&bar](double f) { bar(f); });
    });
    bar.finish();
    if (speaks()) print_summary(summary, o.resume);
    print_shared(exchange.get(), summary);
    return summary.outcome == integration_outcome::interrupted ? stopped_status() : 0;
}

command add_simulate(CLI::App& app, std::function<run_config()>* config) {
    auto o = std::make_shared<simulate_options>();
    // One flag per registry row; the default shown is the default run_config's value.
    for (const parameter_spec& spec : parameter_registry()) {
        if (spec.flag.empty()) continue;
        const std::string name(spec.name), flag(spec.flag);
        std::string help(spec.help);
        if (spec.type == value_type::switch_) {
            o->options[name] = app.add_flag(flag, o->switches[name], help);
            continue;
        }
        if (spec.name == "scheme") help += ": " + scheme_names();
        o->options[name] = app.add_option(flag, o->values[name], help)
                               ->default_str(default_text(spec))
                               ->type_name(spec.type == value_type::integer  ? "INT"
                                           : spec.type == value_type::number ? "FLOAT"
                                                                             : "TEXT");
    }
    auto* out_option =
        app.add_option("--out", o->out, "Output file (default: a new descriptive name here)");
    app.add_flag("--force", o->force,
                 "Overwrite an existing output file; run even if the memory estimate exceeds "
                 "the memory available now");
    app.add_flag("--quiet", o->quiet, "No progress bar");
    auto* resume_option = app.add_option(
        "--resume", o->resume,
        "Continue the run in FILE from its last frame, appending to it (flags may only extend "
        "--T; --threads may differ)");
    app.footer(
        "Examples:\n"
        "  nadyn simulate                        # peri-ln, n = 64, d = 3, beta = 4, T = 20\n"
        "  nadyn simulate --scheme post-ln --n 128 --d 16 --beta 1 --T 30 --out post.h5\n"
        "  nadyn simulate --resume post.h5 --T 60   # continue that run to T = 60");

    auto to_config = [o]() {
        run_config c;
        for (const parameter_spec& spec : parameter_registry()) {
            const auto option = o->options.find(spec.name);
            if (option == o->options.end() || option->second->count() == 0) continue;
            const std::string text = spec.type == value_type::switch_
                                         ? std::string(spec.switch_sets)
                                         : o->values.at(std::string(spec.name));
            try {
                spec.assign(c, text);
            } catch (const input_error& e) {
                throw input_error(std::string(spec.flag) + " '" + text + "': " + e.what());
            }
        }
        c.ignore_memory_estimate = o->force;
        c.command_line = invocation;
        return c;
    };
    if (config) *config = to_config;

    return [o, to_config, resume_option, out_option]() {
        if (out_option->count() > 0 && o->out.empty())
            throw input_error("--out needs a file name (omit it for a new descriptive name)");
        if (resume_option->count() > 0) return resume(*o, to_config);
        const run_config c = to_config();
        // Validates and reads every input file before any output exists.
        simulation run = prepared_on_every_rank([&] { return simulation(c); }, "");
        run.set_warning_sink(warn);
        const auto exchange = token_sharing(c.n);
        run.share_tokens(exchange.get());
        std::string path = o->out;
        // Only the writing rank names (and so creates) the file; the others learn whether it
        // could (run_to_file agrees on it before any step).
        auto name_output = [&] {
            if (path.empty())
                path = reserve_output_name(c, ".");
            else
                check_output_path(path, o->force);
        };
        if (!exchange) {
            name_output();
        } else {
            std::exception_ptr refused;
            if (speaks()) {
                try {
                    name_output();
                } catch (const input_error&) {
                    refused = std::current_exception();
                }
            }
            const bool named = exchange->writer_value(refused ? 0 : 1) != 0;
            if (refused) std::rethrow_exception(refused);
            if (!named) throw input_error("rank 0 refused the output file");
        }

        const std::atomic<bool>* stop = install_stop_signals();
        progress_bar bar(!o->quiet && speaks() && isatty(STDERR_FILENO));
        const run_summary summary = run_shared(exchange.get(), [&] {
            return run.run_to_file(path, true, stop, [&bar](double f) { bar(f); });
        });
        bar.finish();
        if (speaks()) print_summary(summary, path);
        print_shared(exchange.get(), summary);
        return summary.outcome == integration_outcome::interrupted ? stopped_status() : 0;
    };
}

} // namespace nadyn::cli
