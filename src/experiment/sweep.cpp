#include "nadyn/experiment/sweep.hpp"

#include "files/hdf5.hpp"
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/experiment/run_scheduler.hpp"
#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/version.hpp"
#include "sweep_engine.hpp"

#include <hdf5.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <numeric>
#include <sstream>
#include <thread>

namespace nadyn {

using namespace detail;

namespace {

using detail::hdf5_lock;

// The frame times a run writes when it is not stopped (the contract of integrate()).
std::vector<double> frame_times(const run_config& c) {
    return output_times(c.resolved_integration());
}

// What a run's work and memory depend on (run_config::memory_bytes and the flops below):
// the plan visits each combination of these axes once, whatever the other axes.
bool costs(std::string_view axis) {
    static constexpr std::string_view names[] = {
        "n",          "d",        "heads",      "weights",   "value",
        "integrator", "T",        "dt",         "precision", "attention",
        "norm",       "qkv_norm", "norm_noise", "causal",    "layer_time"};
    return std::find(std::begin(names), std::end(names), axis) != std::end(names);
}

// What the frame times and the padded shapes depend on.
bool shapes(std::string_view axis) {
    return axis == "integrator" || axis == "T" || axis == "dt" || axis == "n" || axis == "d";
}

double evaluations_per_step(integrator_kind kind) {
    switch (kind) {
    case integrator_kind::rk4:
        return 4.0;
    case integrator_kind::dopri5:
        return 6.0;
    case integrator_kind::euler:
    case integrator_kind::layers:
        return 1.0;
    }
    return 1.0;
}

} // namespace

namespace detail {

sweep_layout layout_of(const experiment& e) {
    sweep_layout layout;
    for (const auto& axis : e.axes)
        layout.axes.push_back(axis.values.size());
    bool first = true;
    std::array<bool, optional_observable_names.size()> observed{}; // by any run
    std::array<bool, observable_names.size()> recorded{};          // by any run
    // Every combination of the axes the layout depends on: the shapes, and which observables
    // the runs record.
    const auto layout_axes = [](std::string_view axis) {
        return shapes(axis) || axis == "observe" || axis == "observables" || axis == "mode_count";
    };
    std::size_t modes = 0; // the largest K of the runs that record modes
    e.for_each_combination(layout_axes, [&](const run_config& c, std::size_t, std::size_t) {
        const auto times = frame_times(c);
        if (first) {
            layout.times = times;
            first = false;
        } else if (times != layout.times) {
            layout.shared_times = false;
            if (times.size() > layout.times.size()) layout.times = times;
        }
        for (std::size_t o = 0; o < optional_observable_names.size(); ++o)
            observed[o] = observed[o] || c.observes(optional_observable_names[o]);
        for (std::size_t o = 0; o < observable_names.size(); ++o)
            recorded[o] = recorded[o] || c.records(observable_names[o]);
        if (c.observes("modes")) modes = std::max(modes, c.modes);
        layout.tokens = std::max(layout.tokens, c.n);
        layout.dims = std::max(layout.dims, c.d);
    });
    layout.frames = layout.times.size();
    for (std::size_t o = 0; o < observable_names.size(); ++o)
        if (recorded[o]) layout.observables.emplace_back(observable_names[o]);
    for (std::size_t o = 0; o < optional_observable_names.size(); ++o)
        if (observed[o]) layout.observables.emplace_back(optional_observable_names[o]);
    layout.widths = observable_widths(layout.observables, modes);
    return layout;
}

} // namespace detail

namespace {

std::string parameters_text(const simulation& run) {
    std::string out;
    const parameter_list record = run.parameters();
    for (const auto& [name, value] : record.entries()) {
        if (name == "started" || name == "command_line") continue;
        out += (out.empty() ? "" : "; ") + name + "=" + to_display_string(value);
    }
    return out;
}

} // namespace

namespace detail {

namespace {

// The longest plateau of the run's clusters series over its `frames` frames on the grid.
void set_longest_plateau(run_record& record, const sweep_layout& layout, const run_config& c,
                         std::size_t frames) {
    const auto clusters =
        std::find(layout.observables.begin(), layout.observables.end(), std::string("clusters"));
    if (frames == 0 || clusters == layout.observables.end()) return;
    const std::vector<double>& counts =
        record.observables[static_cast<std::size_t>(clusters - layout.observables.begin())];
    const std::vector<plateau> table =
        find_plateaus(std::span(record.times).first(frames), std::span(counts).first(frames),
                      c.plateau_min.time(c.integration.T));
    const std::optional<plateau> longest = longest_plateau(table);
    record.plateau_length = longest ? longest->length() : 0.0;
    record.plateau_clusters = longest ? longest->clusters : missing_count;
}

} // namespace

// Runs one point; never throws for the run's own failures (they are its record).
run_record run_point(const experiment& e, const sweep_layout& layout, std::size_t index,
                     int threads, const std::atomic<bool>* stop) {
    run_record record;
    record.index = index;
    const std::size_t frames = layout.frames;
    record.observables.resize(layout.observables.size());
    for (std::size_t o = 0; o < layout.observables.size(); ++o)
        record.observables[o].assign(frames * layout.width(o),
                                     std::numeric_limits<double>::quiet_NaN());
    const std::size_t N = layout.tokens, D = layout.dims;
    const std::size_t position_frames = e.positions == sweep_positions::all ? frames : 1;
    if (e.positions != sweep_positions::none) {
        record.positions.assign(position_frames * N * D, std::numeric_limits<double>::quiet_NaN());
        record.magnitudes.assign(position_frames * N, std::numeric_limits<double>::quiet_NaN());
    }
    record.times.assign(frames, std::numeric_limits<double>::quiet_NaN());
    run_config c = e.point(index);
    c.threads = threads;
    c.command_line = "nadyn sweep (" + e.label(index) + ")";
    std::optional<simulation> run;
    try {
        auto guard = hdf5_lock(); // input files (init, weights) are read here
        run.emplace(c);
    } catch (const std::exception& error) {
        record.status = broken;
        record.failure = e.label(index) + ": " + error.what();
        return record;
    }
    record.parameters = parameters_text(*run);
    const auto times = frame_times(c);
    std::size_t slot = 0;
    std::vector<double> optional; // one optional observable's values at a frame
    auto keep_positions = [&](const state_type& x, std::size_t frame) {
        const double* theta = directions(x);
        const double* r = magnitudes(x, c.n, c.d);
        for (std::size_t k = 0; k < c.n; ++k) {
            std::copy(theta + k * c.d, theta + (k + 1) * c.d,
                      record.positions.begin() + static_cast<std::ptrdiff_t>((frame * N + k) * D));
            record.magnitudes[frame * N + k] = r[k];
        }
    };
    try {
        const run_summary summary = run->run(
            [&](const state_type& x, double t, std::int64_t, const frame_observables& o) {
                // Only the frames of the grid: a stop writes one more, off the grid.
                if (slot >= times.size() || t != times[slot]) return;
                const auto values = o.values();
                for (std::size_t v = 0; v < record.observables.size(); ++v) {
                    const std::string& name = layout.observables[v];
                    const auto standard =
                        std::find(observable_names.begin(), observable_names.end(), name);
                    if (standard != observable_names.end()) {
                        if (c.records(name))
                            record.observables[v][slot] =
                                values[std::size_t(standard - observable_names.begin())];
                        continue;
                    }
                    if (!c.observes(name)) continue;
                    // The run's values (K of them for modes) at the start of its row of the
                    // layout's width.
                    optional.clear();
                    o.append_optional(name, optional);
                    std::copy(optional.begin(), optional.end(),
                              record.observables[v].begin() +
                                  static_cast<std::ptrdiff_t>(slot * layout.width(v)));
                }
                record.times[slot] = t;
                record.merges.insert(record.merges.end(), o.merges.begin(), o.merges.end());
                record.clustering_times = o.clustering_times;
                if (e.positions == sweep_positions::all) keep_positions(x, slot);
                if (e.positions == sweep_positions::final) keep_positions(x, 0);
                ++slot;
            },
            stop);
        record.status = summary.outcome == integration_outcome::complete ? done : stopped;
        record.rhs = static_cast<std::int64_t>(summary.statistics.rhs_evaluations);
        record.accepted = static_cast<std::int64_t>(summary.statistics.accepted_steps);
        record.wall = summary.wall_seconds;
    } catch (const std::bad_alloc&) {
        record.status = broken;
        record.failure = e.label(index) + ": " + c.out_of_memory_message();
    } catch (const std::exception& error) {
        record.status = broken;
        record.failure = e.label(index) + ": " + error.what();
    }
    record.frames = static_cast<std::int64_t>(slot);
    set_longest_plateau(record, layout, c, slot);
    return record;
}

int choose_jobs(const experiment& e, int jobs) {
    const run_config c = e.point(0);
    return nadyn::choose_jobs(e.size(), c.n, c.d, jobs);
}

} // namespace detail

namespace {

sweep_summary execute(const experiment& e, sweep_file& file, const sweep_layout& layout,
                      const std::vector<std::size_t>& todo, const sweep_options& options,
                      std::size_t skipped) {
    const auto started = std::chrono::steady_clock::now();
    sweep_summary summary;
    summary.runs = e.size();
    summary.skipped = skipped;
    summary.jobs = choose_jobs(e, options.jobs);
    const int jobs = summary.jobs;
    std::mutex progress_lock;
    std::size_t finished = 0;
    auto one = [&](std::size_t i, int threads) {
        run_record record = run_point(e, layout, todo[i], threads, options.stop);
        std::lock_guard<std::mutex> lock(progress_lock);
        file.write(e, record); // a file that cannot be written stops the sweep (rethrown)
        switch (record.status) {
        case done:
            ++summary.complete;
            break;
        case stopped:
            ++summary.interrupted;
            break;
        default:
            ++summary.failed;
            if (summary.first_failure.empty()) summary.first_failure = record.failure;
        }
        ++finished;
        if (options.progress) {
            sweep_progress p;
            p.done = finished;
            p.total = todo.size();
            p.elapsed =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            options.progress(p);
        }
    };
    try {
        schedule_runs(todo.size(), jobs, one, options.stop);
    } catch (const std::exception& error) {
        // A write that failed (a full disk) stops the sweep: the file says so, and why.
        summary.wall_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        file.finish_failed(error.what(), summary);
        throw;
    }
    const bool stopped_early = options.stop && options.stop->load();
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const bool incomplete = stopped_early || summary.interrupted > 0 ||
                            summary.complete + summary.skipped + summary.failed < summary.runs;
    try {
        file.finish(incomplete ? "interrupted" : summary.failed ? "failed" : "complete", summary);
    } catch (const std::exception& error) {
        file.finish_failed(error.what(), summary); // in the room the last run's write kept
        throw;
    }
    return summary;
}

} // namespace

sweep_plan plan_sweep(const experiment& e, int jobs) {
    // A dry run says what the run would say of its inputs (a missing file: exit 2).
    e.check_input_files();
    sweep_plan plan;
    plan.runs = e.size();
    plan.jobs = choose_jobs(e, jobs);
    const sweep_layout layout = layout_of(e);
    double largest = 0.0;
    e.for_each_combination(costs, [&](const run_config& c, std::size_t, std::size_t runs) {
        const double steps = double(step_count(c.integration.T, c.integration.dt));
        // Per head and evaluation: the logits and the weighted values (4 n^2 d), and with
        // weights the projections of queries, keys and values (6 n d^2).
        const double n = double(c.n), d = double(c.d);
        const bool projects =
            c.weights.family != weights_family::identity || c.weights.value != value_family::same;
        plan.flops += double(runs) * double(c.weights.heads) *
                      (4.0 * n * n * d + (projects ? 6.0 * n * d * d : 0.0)) *
                      evaluations_per_step(c.integration.kind) * steps;
        largest = std::max(largest, c.memory_bytes());
    });
    plan.bytes_in_use = largest * plan.jobs;
    double per_run = double(layout.frames + 8) * 8.0 + 256.0;
    for (std::size_t o = 0; o < layout.observables.size(); ++o)
        per_run += double(layout.width(o) * layout.frames) * 8.0;
    if (e.positions == sweep_positions::final)
        per_run += 8.0 * double(layout.tokens * (layout.dims + 1));
    if (e.positions == sweep_positions::all)
        per_run += 8.0 * double(layout.frames * layout.tokens * (layout.dims + 1));
    plan.file_bytes = per_run * double(plan.runs);
    return plan;
}

std::string describe_plan(const experiment& e, const sweep_plan& plan) {
    std::ostringstream out;
    out.precision(3);
    out << e.source << ": " << plan.runs << " runs";
    for (const auto& axis : e.axes) {
        out << "\n  " << axis.name << " (" << axis.values.size() << "): ";
        for (std::size_t i = 0; i < axis.values.size(); ++i) {
            if (i == 4 && axis.values.size() > 6) {
                out << ", ..., " << axis.values.back();
                break;
            }
            out << (i ? ", " : "") << axis.values[i];
        }
    }
    // A nominal 10 GFLOP/s per core for the attention arithmetic (results/performance.md
    // measures the real rate); small runs are dominated by overheads this ignores.
    const double rate =
        10e9 * double(std::min(available_cores(), std::max(plan.jobs, available_cores())));
    out << "\nwork: " << plan.flops / 1e12 << " TFLOP of attention (about " << plan.flops / rate
        << " s at 10 GFLOP/s per core on " << available_cores() << " cores)"
        << "\nschedule: " << plan.jobs
        << (plan.jobs > 1 ? " runs side by side, one thread each" : " run at a time, all cores")
        << "\nmemory: about " << plan.bytes_in_use / double(1 << 20) << " MiB in use; file about "
        << plan.file_bytes / double(1 << 20) << " MiB (positions: " << to_string(e.positions)
        << ")";
    return out.str();
}

sweep_summary run_sweep(const experiment& e, const std::string& path,
                        const sweep_options& options) {
    check_output_path(path, options.overwrite);
    const sweep_plan plan = plan_sweep(e, options.jobs); // checks the input files
    if (options.warn)
        for (const std::string& warning : e.warnings())
            options.warn(warning);
    const double available = double(sysconf(_SC_AVPHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    if (available > 0 && plan.bytes_in_use > available)
        throw input_error("the sweep needs about " + std::to_string(plan.bytes_in_use / 1e9) +
                          " GB with " + std::to_string(plan.jobs) +
                          " runs side by side, more than the memory available; pass --jobs 1");
    const sweep_layout layout = layout_of(e);
    // A path that cannot be used is an input_error (the claim's checks); a disk that cannot
    // take the header is an io_error.
    auto file = std::make_unique<sweep_file>(path, e, layout, options.overwrite);
    std::vector<std::size_t> todo(e.size());
    std::iota(todo.begin(), todo.end(), 0);
    return execute(e, *file, layout, todo, options, 0);
}

bool is_sweep_file(const std::string& path) {
    auto guard = hdf5_lock();
    if (!detail::hdf5_file::is_hdf5(path)) return false;
    const auto file = detail::hdf5_file::open_read_only(path);
    const auto kind = file.read_attribute("nadyn_kind");
    return kind && std::holds_alternative<std::string>(*kind) &&
           std::get<std::string>(*kind) == "sweep";
}

namespace detail {

void check_recorded_experiment(const std::string& path, const experiment& e) {
    std::optional<std::string> recorded;
    std::optional<std::vector<std::string>> input_paths, input_hashes;
    {
        auto guard = hdf5_lock();
        const auto file = detail::hdf5_file::open_read_only(path);
        const auto value = file.read_attribute("experiment_hash");
        if (value && std::holds_alternative<std::string>(*value))
            recorded = std::get<std::string>(*value);
        if (file.has_attribute("input_files")) {
            input_paths = file.read_strings("input_files");
            input_hashes = file.read_strings("input_sha256");
        }
    }
    // Files written before the hash was recorded have none, and resume as they always did.
    if (recorded && *recorded != e.digest())
        throw input_error("'" + path +
                          "': its recorded experiment (or overrides) was changed after the sweep "
                          "was created (hash " +
                          e.digest() + ", recorded " + *recorded +
                          "); resuming would mix runs of two experiments, so start a new sweep");
    // Files written before the input hashes were recorded have none either. A file that is
    // gone is left to check_input_files, which names the run that needs it.
    if (!input_paths) return;
    if (!input_hashes || input_hashes->size() != input_paths->size())
        throw input_error("'" + path + "': its input_files and input_sha256 do not match");
    for (std::size_t i = 0; i < input_paths->size(); ++i) {
        const std::string& input = (*input_paths)[i];
        std::error_code missing;
        if (!std::filesystem::exists(input, missing)) continue;
        const std::string now = input_file_sha256(input);
        if (now != (*input_hashes)[i])
            throw input_error("input file '" + input + "' changed since the sweep '" + path +
                              "' was started (SHA-256 " + now + ", recorded " + (*input_hashes)[i] +
                              "); its remaining runs would come from other inputs: restore it, "
                              "or start a new sweep");
    }
}

} // namespace detail

experiment sweep_experiment(const std::string& path) {
    if (!is_sweep_file(path)) throw input_error("'" + path + "' is not a nadyn sweep file");
    std::string text, source;
    std::vector<std::string> overrides;
    {
        auto guard = hdf5_lock();
        const auto file = detail::hdf5_file::open_read_only(path);
        auto get = [&](const char* name) {
            const auto value = file.read_attribute(name);
            if (!value || !std::holds_alternative<std::string>(*value))
                throw input_error("'" + path + "' lacks the attribute " + name);
            return std::get<std::string>(*value);
        };
        text = get("experiment");
        source = get("experiment_source");
        // overrides: a list of strings; a sweep without any records one empty string.
        const auto recorded = file.read_strings("overrides");
        if (!recorded) throw io_error("'" + path + "' lacks the attribute overrides");
        for (const std::string& value : *recorded)
            if (!value.empty()) overrides.push_back(value);
    }
    return experiment::parse(text, source, overrides);
}

sweep_summary resume_sweep(const std::string& path, const sweep_options& options) {
    const experiment e = sweep_experiment(path);
    check_recorded_experiment(path, e);
    (void)choose_jobs(e, options.jobs); // refuses a bad count before the file is opened
    e.check_input_files();
    const sweep_layout layout = layout_of(e);
    sweep_file file(path, e, layout);
    std::size_t distrusted = 0;
    const std::vector<bool> trusted = file.trusted_runs(e, distrusted);
    std::vector<std::size_t> todo;
    std::size_t skipped = 0;
    for (std::size_t i = 0; i < trusted.size(); ++i) {
        if (trusted[i])
            ++skipped;
        else
            todo.push_back(i);
    }
    sweep_summary summary = execute(e, file, layout, todo, options, skipped);
    summary.distrusted = distrusted;
    return summary;
}

std::string describe_sweep_file(const std::string& path) {
    const experiment e = sweep_experiment(path);
    const sweep_layout layout = layout_of(e);
    std::ostringstream out;
    std::vector<signed char> status(e.size());
    std::map<std::string, std::vector<double>> last; // observable -> per run final value
    std::string sweep_status;
    {
        auto guard = hdf5_lock();
        const auto file = detail::hdf5_file::open_read_only(path);
        const auto s = file.read_attribute("status");
        sweep_status =
            s && std::holds_alternative<std::string>(*s) ? std::get<std::string>(*s) : "unknown";
        // Why a sweep stopped with status failed (sweep_file::finish_failed).
        const auto failure = file.read_attribute("failure");
        if (failure && std::holds_alternative<std::string>(*failure) &&
            !std::get<std::string>(*failure).empty())
            sweep_status += " (" + std::get<std::string>(*failure) + ")";
        file.open_dataset("status").read_all(H5T_NATIVE_SCHAR, status.data());
        std::vector<double> values(e.size() * layout.frames);
        for (const char* name : {"mean_cos", "min_cos", "clusters", "r_mean"}) {
            // Runs with --observables record only some (the table shows the others as nan).
            if (!file.has(name)) continue; // not recorded: no column of NaN
            file.open_dataset(name).read_all(H5T_NATIVE_DOUBLE, values.data());
            if (is_count(name)) // missing_count (-1) marks a missing frame of a count
                for (double& value : values)
                    if (value < 0) value = std::numeric_limits<double>::quiet_NaN();
            auto& column = last[name];
            column.assign(e.size(), std::numeric_limits<double>::quiet_NaN());
            for (std::size_t i = 0; i < e.size(); ++i)
                for (std::size_t f = layout.frames; f-- > 0;)
                    if (!std::isnan(values[i * layout.frames + f])) {
                        column[i] = values[i * layout.frames + f];
                        break;
                    }
        }
    }
    std::size_t complete = 0;
    for (signed char s : status)
        complete += s == done;
    out << path << ": nadyn sweep, " << sweep_status << ", " << complete << " of " << e.size()
        << " runs complete; positions: " << to_string(e.positions) << "\naxes:";
    for (const auto& axis : e.axes)
        out << " " << axis.name << " (" << axis.values.size() << ")";
    out << (layout.shared_times ? ", time (" : ", frame (") << layout.frames << ")\n";
    // The optional observables the runs record (modes with its `mode` dimension).
    std::size_t standard = 0;
    while (standard < layout.observables.size() &&
           find_observable_info(layout.observables[standard]))
        ++standard;
    if (standard < observable_names.size()) {
        out << "observables:";
        for (std::size_t o = 0; o < standard; ++o)
            out << " " << layout.observables[o];
        out << "\n";
    }
    if (layout.observables.size() > standard) {
        out << "optional observables:";
        for (std::size_t o = standard; o < layout.observables.size(); ++o) {
            out << " " << layout.observables[o];
            if (layout.width(o) > 1) out << " (x mode " << layout.width(o) << ")";
        }
        out << "\n";
    }
    // One row per point of the axes other than seed; mean and spread over seeds.
    std::size_t seed_axis = e.axes.size();
    for (std::size_t a = 0; a < e.axes.size(); ++a)
        if (e.axes[a].name == "seed") seed_axis = a;
    std::map<std::string, std::vector<std::size_t>> groups;
    std::vector<std::string> order;
    for (std::size_t i = 0; i < e.size(); ++i) {
        const auto at = e.coordinates(i);
        std::string key;
        for (std::size_t a = 0; a < e.axes.size(); ++a)
            if (a != seed_axis)
                key += (key.empty() ? "" : " ") + e.axes[a].name + "=" + e.axes[a].values[at[a]];
        if (key.empty()) key = "all runs";
        if (!groups.count(key)) order.push_back(key);
        groups[key].push_back(i);
    }
    char line[256];
    std::snprintf(line, sizeof line, "%-40s %5s %22s %22s %14s\n", "point", "runs",
                  "final mean_cos", "final min_cos", "clusters");
    out << line;
    for (const auto& key : order) {
        const auto& members = groups[key];
        auto stats = [&](const char* name) {
            if (!last.count(name)) return std::string("not recorded");
            const std::vector<double>& column = last[name];
            double sum = 0, sum2 = 0;
            std::size_t count = 0;
            for (std::size_t i : members)
                if (!std::isnan(column[i])) {
                    sum += column[i];
                    sum2 += column[i] * column[i];
                    ++count;
                }
            const double mean = count ? sum / double(count) : std::nan("");
            const double spread =
                count > 1 ? std::sqrt(std::max(0.0, (sum2 - sum * mean) / double(count - 1))) : 0.0;
            char cell[64];
            std::snprintf(cell, sizeof cell, "%.6g ± %.2g", mean, spread);
            return std::string(cell);
        };
        std::snprintf(line, sizeof line, "%-40s %5zu %22s %22s %14s\n", key.c_str(), members.size(),
                      stats("mean_cos").c_str(), stats("min_cos").c_str(),
                      stats("clusters").c_str());
        out << line;
    }
    return out.str();
}

} // namespace nadyn

namespace nadyn {

sweep_run_history sweep_cluster_history(const std::string& path, const std::string& point) {
    const experiment e = sweep_experiment(path);
    const sweep_layout layout = detail::layout_of(e);
    const std::size_t index = e.find_point(point);
    sweep_run_history out;
    out.label = e.label(index);
    out.levels = clustering_levels(layout.tokens);
    if (std::find(layout.observables.begin(), layout.observables.end(), "clusters") ==
        layout.observables.end())
        throw input_error("'" + path + "' (" + out.label +
                          "): merge events not recorded (add clusters to observables)");
    auto guard = detail::hdf5_lock();
    const auto file = detail::hdf5_file::open_read_only(path);
    if (!file.has("merges") || !file.has("clustering_time"))
        throw input_error("'" + path +
                          "' records no merge events (written by a nadyn without cluster "
                          "histories)");
    const auto at = e.coordinates(index);
    std::vector<hsize_t> start(at.begin(), at.end()), count(at.size(), 1);
    out.clustering_times.resize(out.levels.size());
    file.open_dataset("clustering_time")
        .read_block(detail::concat(start, {0}), detail::concat(count, {out.levels.size()}),
                    H5T_NATIVE_DOUBLE, out.clustering_times.data());
    const detail::hdf5_dataset merges = file.open_dataset("merges");
    const auto shape = merges.shape();
    const hsize_t rows = shape.at(shape.size() - 2), fields = shape.back();
    std::vector<double> table(rows * fields);
    merges.read_block(detail::concat(start, {0, 0}), detail::concat(count, {rows, fields}),
                      H5T_NATIVE_DOUBLE, table.data());
    std::int64_t total = 0;
    file.open_dataset("merge_count").read_block(start, count, H5T_NATIVE_INT64, &total);
    out.merge_count = static_cast<std::size_t>(total);
    for (hsize_t r = 0; r < rows; ++r) {
        const double* row = table.data() + r * fields;
        if (std::isnan(row[0])) break;
        merge_event m;
        m.time = row[0];
        m.frame = std::int64_t(row[1]);
        m.label = std::int64_t(row[2]);
        m.absorbed = std::int64_t(row[3]);
        m.size = std::int64_t(row[4]);
        m.absorbed_size = std::int64_t(row[5]);
        m.clusters_after = std::int64_t(row[6]);
        out.merges.push_back(m);
    }
    return out;
}

} // namespace nadyn
