#include "nadyn/experiment/sweep.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/experiment/run_scheduler.hpp"
#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/version.hpp"
#include "sweep_engine.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
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

// The frame times a run writes when it is not stopped (the contract of integrate()).
std::vector<double> frame_times(const run_config& c) {
    return output_times(c.resolved_integration());
}

// What a run's work and memory depend on (run_config::memory_bytes and the flops below):
// the plan visits each combination of these axes once, whatever the other axes.
bool costs(std::string_view axis) {
    static constexpr std::string_view names[] = {
        "n",          "d",      "heads",      "weights",     "value", "integrator",
        "T",          "dt",     "precision",  "attention",   "norm",  "qkv_norm",
        "norm_noise", "causal", "layer_time", "head_combine"};
    return std::find(std::begin(names), std::end(names), axis) != std::end(names);
}

// What the frame times and the padded shapes depend on.
bool shapes(std::string_view axis) {
    return axis == "integrator" || axis == "T" || axis == "dt" || axis == "n" || axis == "d";
}

// A count (the observable row's `integer`: clusters) is int64 in a sweep file, as in a
// single-run file.
bool is_count(std::string_view observable) {
    const nadyn::observable* row = find_observable(observable);
    return row && !row->optional && row->integer;
}

// What a sweep file says an observable is.
std::string sweep_observable_description(std::string_view observable) {
    if (const nadyn::observable* optional = find_observable(observable);
        optional && optional->optional)
        return "optional observable " + std::string(observable) + " (observe = \"" +
               std::string(observable) +
               "\") of each run at each frame: " + std::string(optional->description) +
               "; NaN: no such frame, or a run that did not observe it";
    if (is_count(observable))
        return "observable " + std::string(observable) +
               " of each run at each frame, an integer count (see nadyn inspect --describe on "
               "a single-run file; -1, the _FillValue: no such frame)";
    return "observable " + std::string(observable) +
           " of each run at each frame (see nadyn inspect --describe on a single-run file; NaN: "
           "no such frame)";
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

// Fills layout.recorded: run i records what the runs of its combination of `selected` axes
// record (`records`, by the combination's first run, as experiment::for_each_combination
// visits it; `table` the observable table those entries follow).
void set_recorded(const experiment& e, const std::function<bool(std::string_view)>& selected,
                  const std::vector<const observable*>& table,
                  const std::map<std::size_t, std::vector<bool>>& records, sweep_layout& layout) {
    std::vector<std::size_t> stride(e.axes.size(), 1), columns;
    for (std::size_t a = e.axes.size(); a-- > 1;)
        stride[a - 1] = stride[a] * e.axes[a].values.size();
    for (const std::string& name : layout.observables)
        for (std::size_t o = 0; o < table.size(); ++o)
            if (table[o]->name == name) columns.push_back(o);
    const std::size_t runs = e.size(), count = layout.observables.size();
    layout.recorded.assign(runs * count, true);
    for (std::size_t i = 0; i < runs; ++i) {
        const std::vector<std::size_t> at = e.coordinates(i);
        std::size_t first = 0;
        for (std::size_t a = 0; a < e.axes.size(); ++a)
            if (selected(e.axes[a].name)) first += at[a] * stride[a];
        const std::vector<bool>& own = records.at(first);
        for (std::size_t o = 0; o < count; ++o)
            layout.recorded[i * count + o] = own[columns[o]];
    }
}

} // namespace

namespace detail {

sweep_layout layout_of(const experiment& e) {
    sweep_layout layout;
    for (const auto& axis : e.axes) {
        // The coordinate holds the values in the parameter's type.
        const parameter_spec& spec = parameter(axis.name);
        layout.axes.push_back(
            file_axis(axis, spec.type, "sweep axis: " + std::string(spec.description)));
    }
    layout.positions = e.positions;
    bool first = true;
    const std::vector<const observable*> table = observable_table();
    std::vector<bool> recorded(table.size(), false); // by any run
    // Every combination of the axes the layout depends on: the shapes, and which observables
    // the runs record.
    const auto layout_axes = [](std::string_view axis) {
        return shapes(axis) || axis == "observe" || axis == "observables" || axis == "mode_count";
    };
    std::size_t modes = 0; // the largest K of the runs that record modes
    // What each combination's runs record, keyed by its first run's index.
    std::map<std::size_t, std::vector<bool>> records;
    e.for_each_combination(layout_axes, [&](const run_config& c, std::size_t index, std::size_t) {
        std::vector<bool>& own = records[index];
        for (const observable* row : table)
            own.push_back(row->optional ? c.observes(row->name) : c.records(row->name));
        const auto times = frame_times(c);
        if (first) {
            layout.times = times;
            first = false;
        } else if (times != layout.times) {
            layout.shared_times = false;
            if (times.size() > layout.times.size()) layout.times = times;
        }
        for (std::size_t o = 0; o < table.size(); ++o)
            recorded[o] = recorded[o] || own[o];
        if (c.observes("modes")) modes = std::max(modes, c.modes);
        layout.tokens = std::max(layout.tokens, c.n);
        layout.dims = std::max(layout.dims, c.d);
    });
    layout.frames = layout.times.size();
    for (std::size_t o = 0; o < table.size(); ++o)
        if (recorded[o]) {
            layout.observables.emplace_back(table[o]->name);
            layout.widths.push_back(table[o]->values_per_frame(modes));
        }
    for (const std::string& name : layout.observables) {
        layout.counts.push_back(is_count(name));
        layout.descriptions.push_back(sweep_observable_description(name));
    }
    // Unrecorded is not zero: when some run does not record an observable another records
    // (an observables or observe axis), the file says which entries are fill values.
    const bool uniform = std::all_of(records.begin(), records.end(), [&](const auto& entry) {
        for (std::size_t o = 0; o < table.size(); ++o)
            if (recorded[o] && !entry.second[o]) return false;
        return true;
    });
    if (!uniform) set_recorded(e, layout_axes, table, records, layout);
    return layout;
}

sweep_provenance provenance_of(const experiment& e) {
    sweep_provenance out;
    out.experiment = e.text;
    out.source = e.source;
    out.overrides = e.overrides;
    out.digest = e.digest();
    // The content of every input file the runs read, so that a resume can refuse inputs
    // that changed in between (check_recorded_experiment).
    const auto inputs = e.input_file_hashes();
    if (!inputs.empty()) {
        out.input_files.emplace();
        out.input_sha256.emplace();
        for (const auto& [input, hash] : inputs) {
            out.input_files->push_back(input);
            out.input_sha256->push_back(hash);
        }
    }
    return out;
}

} // namespace detail

namespace {

// A run's parameter record as the sweep file keeps it: "name=value; ...", numbers in their
// shortest exact text (0.1, not 0.10000000000000001), and positions what the sweep file keeps
// of them (the run's own record says all: it hands every frame to the sweep).
std::string parameters_text(const simulation& run, sweep_positions positions) {
    std::string out;
    const parameter_list record = run.parameters();
    for (const auto& [name, value] : record.entries()) {
        if (name == "started" || name == "command_line") continue;
        std::string text = to_display_string(value);
        if (const double* number = std::get_if<double>(&value)) {
            char buffer[32];
            text.assign(buffer, std::to_chars(buffer, buffer + sizeof buffer, *number).ptr);
        }
        if (name == "positions") text = to_string(positions);
        out += (out.empty() ? "" : "; ") + name + "=" + text;
    }
    return out;
}

} // namespace

namespace detail {

namespace {

// The longest plateau of the run's clusters series over its `frames` frames on the grid.
void set_longest_plateau(sweep_record& record, const sweep_layout& layout, const run_config& c,
                         std::size_t frames) {
    const auto clusters =
        std::find(layout.observables.begin(), layout.observables.end(), std::string("clusters"));
    // A run that does not record clusters has no plateau: its entries stay the fill values.
    if (frames == 0 || clusters == layout.observables.end() || !c.records("clusters")) return;
    const std::vector<double>& counts =
        record.observables[static_cast<std::size_t>(clusters - layout.observables.begin())];
    const std::vector<plateau> table =
        find_plateaus(std::span(record.times).first(frames), std::span(counts).first(frames),
                      c.plateau_min.time(c.integration.T));
    const std::optional<plateau> longest = longest_plateau(table);
    record.plateau_length = longest ? longest->length() : 0.0;
    record.plateau_clusters = longest ? longest->clusters : sweep_record::missing_count;
}

} // namespace

// Runs one point; never throws for the run's own failures (they are its record).
sweep_record run_point(const experiment& e, const sweep_layout& layout, std::size_t index,
                       int threads, const std::atomic<bool>* stop) {
    sweep_record record;
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
        run.emplace(c); // reads the input files (init, weights) under the HDF5 lock
    } catch (const std::exception& error) {
        record.status = sweep_run_status::failed;
        record.failure = e.label(index) + ": " + error.what();
        return record;
    }
    record.parameters = parameters_text(*run, e.positions);
    const auto times = frame_times(c);
    std::size_t slot = 0;
    // Where each of the layout's observables starts in the run's frame values (npos: the run
    // does not record it, and its row stays NaN), and how many values it has there.
    std::vector<std::size_t> starts(layout.observables.size(), std::string::npos);
    std::vector<std::size_t> counts(layout.observables.size(), 0);
    {
        std::size_t start = 0;
        for (const observable* row : c.recorded_rows()) {
            const auto found =
                std::find(layout.observables.begin(), layout.observables.end(), row->name);
            const std::size_t width = row->values_per_frame(c.modes);
            if (found != layout.observables.end()) {
                const auto v = static_cast<std::size_t>(found - layout.observables.begin());
                starts[v] = start;
                counts[v] = width;
            }
            start += width;
        }
    }
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
                for (std::size_t v = 0; v < record.observables.size(); ++v) {
                    if (starts[v] == std::string::npos) continue;
                    // The run's values (K of them for modes) at the start of its row of the
                    // layout's width.
                    const auto first = o.values.begin() + static_cast<std::ptrdiff_t>(starts[v]);
                    std::copy(first, first + static_cast<std::ptrdiff_t>(counts[v]),
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
        record.status = summary.outcome == integration_outcome::complete
                            ? sweep_run_status::complete
                            : sweep_run_status::interrupted;
        record.rhs = static_cast<std::int64_t>(summary.statistics.rhs_evaluations);
        record.accepted = static_cast<std::int64_t>(summary.statistics.accepted_steps);
        record.wall = summary.wall_seconds;
    } catch (const std::bad_alloc&) {
        record.status = sweep_run_status::failed;
        record.failure = e.label(index) + ": " + c.out_of_memory_message();
    } catch (const std::exception& error) {
        record.status = sweep_run_status::failed;
        record.failure = e.label(index) + ": " + error.what();
    }
    record.frames = static_cast<std::int64_t>(slot);
    set_longest_plateau(record, layout, c, slot);
    return record;
}

void warn_configuration(const experiment& e, const sweep_options& options) {
    if (options.warn)
        for (const std::string& warning : e.warnings())
            options.warn(warning);
}

void report_progress(const sweep_options& options, std::size_t done, std::size_t total,
                     std::chrono::steady_clock::time_point started) {
    if (!options.progress) return;
    sweep_progress p;
    p.done = done;
    p.total = total;
    p.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    options.progress(p);
}

int choose_jobs(const experiment& e, int jobs) {
    const run_config c = e.point(0);
    return nadyn::choose_jobs(e.size(), c.n, c.d, jobs);
}

} // namespace detail

void sweep_summary::count(const sweep_record& record) {
    switch (record.status) {
    case sweep_run_status::complete:
        ++complete;
        break;
    case sweep_run_status::interrupted:
        ++interrupted;
        break;
    default:
        ++failed;
        if (first_failure.empty()) first_failure = record.failure;
    }
}

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
        sweep_record record = run_point(e, layout, todo[i], threads, options.stop);
        std::lock_guard<std::mutex> lock(progress_lock);
        file.write(record); // a file that cannot be written stops the sweep (rethrown)
        summary.count(record);
        report_progress(options, ++finished, todo.size(), started);
    };
    try {
        schedule_runs(todo.size(), jobs, one, options.stop);
    } catch (const std::exception& error) {
        // A write that failed (a full disk) stops the sweep: the file says so, and why.
        summary.wall_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        file.finish_failed(error.what(), summary.failed);
        throw;
    }
    const bool stopped_early = options.stop && options.stop->load();
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const bool incomplete = stopped_early || summary.interrupted > 0 ||
                            summary.complete + summary.skipped + summary.failed < summary.runs;
    try {
        file.finish(incomplete       ? "interrupted"
                    : summary.failed ? "failed"
                                     : "complete",
                    summary.failed);
    } catch (const std::exception& error) {
        file.finish_failed(error.what(), summary.failed); // in the room the last run's write kept
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
        // The algorithm the kernel runs for the run's weights (the benchmarks' count).
        plan.flops += double(runs) * simulation(c).attention_flops() *
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
    warn_configuration(e, options);
    const double available = double(sysconf(_SC_AVPHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    if (available > 0 && plan.bytes_in_use > available)
        throw input_error("the sweep needs about " + std::to_string(plan.bytes_in_use / 1e9) +
                          " GB with " + std::to_string(plan.jobs) +
                          " runs side by side, more than the memory available; pass --jobs 1");
    const sweep_layout layout = layout_of(e);
    // A path that cannot be used is an input_error (the claim's checks); a disk that cannot
    // take the header is an io_error.
    sweep_file file = sweep_file::create(path, provenance_of(e), layout, options.overwrite);
    std::vector<std::size_t> todo(e.size());
    std::iota(todo.begin(), todo.end(), 0);
    return execute(e, file, layout, todo, options, 0);
}

namespace detail {

void check_recorded_experiment(const std::string& path, const experiment& e) {
    const sweep_provenance provenance = read_sweep_provenance(path);
    const std::optional<std::string>& recorded = provenance.digest;
    const auto& input_paths = provenance.input_files;
    const auto& input_hashes = provenance.input_sha256;
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
    const sweep_provenance recorded = read_sweep_provenance(path);
    return experiment::parse(recorded.experiment, recorded.source, recorded.overrides);
}

sweep_summary resume_sweep(const std::string& path, const sweep_options& options) {
    const experiment e = sweep_experiment(path);
    check_recorded_experiment(path, e);
    (void)choose_jobs(e, options.jobs); // refuses a bad count before the file is opened
    e.check_input_files();
    const sweep_layout layout = layout_of(e);
    sweep_file file = sweep_file::open(path, layout);
    std::size_t distrusted = 0;
    const std::vector<bool> trusted = file.trusted_runs(distrusted);
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
    // Each run's status and final value of each observable of the table; an observable the
    // runs did not record has no column (the table says "not recorded").
    sweep_file_overview overview =
        read_sweep_overview(path, layout, {"mean_cos", "min_cos", "clusters", "r_mean"});
    std::map<std::string, std::vector<double>>& last = overview.last;
    std::string sweep_status = overview.status;
    // Why a sweep stopped with status failed (sweep_file::finish_failed).
    if (!overview.failure.empty()) sweep_status += " (" + overview.failure + ")";
    std::size_t complete = 0;
    for (sweep_run_status s : overview.runs)
        complete += s == sweep_run_status::complete;
    out << path << ": nadyn sweep, " << sweep_status << ", " << complete << " of " << e.size()
        << " runs complete; positions: " << to_string(e.positions) << "\naxes:";
    for (const auto& axis : e.axes)
        out << " " << axis.name << " (" << axis.values.size() << ")";
    out << (layout.shared_times ? ", time (" : ", frame (") << layout.frames << ")\n";
    // The optional observables the runs record (modes with its `mode` dimension).
    std::size_t standard = 0;
    while (standard < layout.observables.size() && find_observable(layout.observables[standard]) &&
           !find_observable(layout.observables[standard])->optional)
        ++standard;
    if (standard < observable_names(false).size()) {
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
            // Not in the sweep, or in none of this point's runs (an observables axis).
            const std::size_t o = layout.find(name);
            const bool recorded = std::any_of(members.begin(), members.end(),
                                              [&](std::size_t i) { return layout.records(i, o); });
            if (!last.count(name) || !recorded) return std::string("not recorded");
            const std::vector<double>& column = last[name];
            double sum = 0, sum2 = 0;
            std::size_t count = 0;
            for (std::size_t i : members)
                if (layout.records(i, o) && !std::isnan(column[i])) {
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
    const std::string label = e.label(index);
    // Not in the sweep, or not in this run (an observables axis): not "no merge events".
    const std::size_t clusters = layout.find("clusters");
    if (clusters == layout.observables.size() || !layout.records(index, clusters))
        throw input_error("'" + path + "' (" + label +
                          "): merge events not recorded (add clusters to observables)");
    sweep_run_history out = read_sweep_history(path, layout, index);
    out.label = label;
    return out;
}

} // namespace nadyn
