// nadyn inspect: the parameters of a trajectory file and a table of its observables.
#include "commands.hpp"

#include "nadyn/experiment/observable_table.hpp"
#include "nadyn/experiment/run_config.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/files/child_reader.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/meanfield/density_file.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/plateaus.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

namespace nadyn::cli {

namespace {

struct inspect_options {
    std::string path;
    bool csv = false;
    bool describe = false;
    bool merges = false;
    std::string point;
    bool plateaus = false;
    std::size_t rows = 20;
};

// Every observable's and parameter's meaning, as the file states it.
int describe(const trajectory_reader& file, const std::string& path) {
    std::printf("file        %s\n\nobservables (/observables/<name>: description [unit])\n",
                path.c_str());
    for (const auto& name : file.observable_names()) {
        observable_description about = file.describe_observable(name);
        std::string note;
        if (about.description.empty()) {
            // An older file: say what nadyn means by the name today, marked as such.
            if (const observable* known = find_observable(name)) {
                about.description = std::string(known->description);
                about.unit = std::string(known->unit);
                note = " (not stored in this file: nadyn's current definition)";
            } else {
                about.description = "(no description in this file)";
            }
        }
        std::printf("  %-13s %s%s%s\n", name.c_str(), about.description.c_str(),
                    about.unit.empty() ? "" : (" [" + about.unit + "]").c_str(), note.c_str());
        if (name == "log_energy" || name == "energy")
            std::printf(
                "  %-13s %s\n", "energy",
                name == "energy"
                    ? "(this file's energy is log_energy, as nadyn names it today; nadyn "
                      "inspect shows E itself, c exp(beta log_energy) / (2 beta), as energy)"
                    : "the interaction energy E itself, c exp(beta log_energy) / (2 beta): "
                      "not stored; nadyn inspect and nadyn.open give it wherever it is "
                      "finite (beta != 0, no overflow)");
    }
    const auto parameters = file.parameter_descriptions();
    std::printf("\nparameters (/parameters/descriptions)\n");
    if (parameters.empty()) std::printf("  (this file holds no parameter descriptions)\n");
    for (const auto& [name, description] : parameters)
        std::printf("  %-18s %s\n", name.c_str(), description.c_str());
    return 0;
}

// A density file of nadyn meanfield: its parameters and observables (docs/file-format.md).
int inspect_density(const std::string& path, bool csv, std::size_t wanted_rows) {
    const meanfield::density_file file = meanfield::read_density_file(path, false);
    const std::size_t frames = file.frames;
    if (csv) {
        std::printf("time");
        for (const auto& s : file.observables) {
            if (s.width == 1) std::printf(",%s", s.name.c_str());
            for (std::size_t k = 0; s.width > 1 && k < s.width; ++k)
                std::printf(",%s_%zu", s.name.c_str(), k + 1);
        }
        std::printf("\n");
        for (std::size_t f = 0; f < frames; ++f) {
            std::printf("%.17g", file.time[f]);
            for (const auto& s : file.observables)
                for (std::size_t k = 0; k < s.width; ++k)
                    std::printf(",%.17g", s.values[f * s.width + k]);
            std::printf("\n");
        }
        return 0;
    }
    std::printf("file        %s\nstatus      %s\nframes      %zu\ndensity     %zu points "
                "on S^%zu\n",
                path.c_str(), file.status.c_str(), frames, file.points, file.d - 1);
    if (file.status == "unresolved")
        std::printf("unresolved  at t = %.6g: the grid no longer held the density; the last "
                    "frame is the last resolved state\n",
                    file.unresolved_time);
    std::printf("\nparameters\n");
    for (const auto& [name, value] : file.parameters.entries())
        std::printf("  %-18s %s\n", name.c_str(), to_display_string(value).c_str());
    if (frames == 0) {
        std::printf("\nno frames written\n");
        return 0;
    }
    std::printf("\n%12s", "time");
    for (const auto& s : file.observables)
        if (s.width == 1 && s.name != "step_size") std::printf(" %14s", s.name.c_str());
    std::printf("\n");
    const std::size_t rows = std::min(std::max<std::size_t>(wanted_rows, 2), frames);
    std::size_t previous = frames;
    for (std::size_t row = 0; row < rows; ++row) {
        const std::size_t f = rows == 1 ? 0 : row * (frames - 1) / (rows - 1);
        if (f == previous) continue;
        previous = f;
        std::printf("%12.6g", file.time[f]);
        for (const auto& s : file.observables)
            if (s.width == 1 && s.name != "step_size") std::printf(" %14.8g", s.values[f]);
        std::printf("\n");
    }
    for (const auto& s : file.observables) {
        if (s.width < 2) continue;
        std::printf("\n%s at t = %.6g (k = 1..%zu):", s.name.c_str(), file.time[frames - 1],
                    s.width);
        for (std::size_t k = 0; k < s.width; ++k)
            std::printf(" %.6g", s.values[(frames - 1) * s.width + k]);
        std::printf("\n");
    }
    return 0;
}

// The merge events and t_k of a run (docs/model.md §5.2).
int print_merges(const std::string& title, const std::vector<merge_event>& merges,
                 std::size_t total, const std::vector<std::int64_t>& levels,
                 const std::vector<double>& times) {
    std::printf("%s\nmerge events: %zu\n", title.c_str(), total);
    if (!merges.empty())
        std::printf("%14s %7s %7s %9s %7s %14s %15s\n", "time", "frame", "label", "absorbed",
                    "size", "absorbed_size", "clusters_after");
    for (const merge_event& m : merges)
        std::printf("%14.8g %7lld %7lld %9lld %7lld %14lld %15lld\n", m.time,
                    static_cast<long long>(m.frame), static_cast<long long>(m.label),
                    static_cast<long long>(m.absorbed), static_cast<long long>(m.size),
                    static_cast<long long>(m.absorbed_size),
                    static_cast<long long>(m.clusters_after));
    if (merges.size() < total)
        std::printf("(the file keeps the first %zu of the %zu events)\n", merges.size(), total);
    std::printf("\nclustering times t_k (first time with at most k clusters; nan: never)\n");
    for (std::size_t i = 0; i < levels.size() && i < times.size(); ++i)
        std::printf("  k = %-6lld t_k = %.8g\n", static_cast<long long>(levels[i]), times[i]);
    return 0;
}

// The columns of the summary table, in order, then the optional observables (--observe) the
// file records, one value per frame each (all observables go to --csv).
// The file's plateau table; for a file without one (its run still going or killed, or an
// older nadyn's) the table of its clusters series at its plateau_min (or the default), with
// `computed` set. nullopt: no clusters series.
std::optional<plateau_table> plateaus_of(const trajectory_reader& file, bool& computed) {
    computed = false;
    if (auto stored = file.plateaus()) return stored;
    const auto names = file.observable_names();
    if (std::find(names.begin(), names.end(), "clusters") == names.end()) return std::nullopt;
    computed = true;
    plateau_table table;
    const parameter_list& parameters = file.parameters();
    table.plateau_min = parameters.text("plateau_min").value_or(plateau_threshold{}.to_string());
    const plateau_threshold threshold = plateau_threshold::parse(table.plateau_min);
    double horizon = 0.0;
    if (const parameter_value* T = parameters.find("T"))
        if (const double* value = std::get_if<double>(T)) horizon = *value;
    table.min_length = threshold.time(horizon);
    table.plateaus = find_plateaus(file.times(), file.observable("clusters"), table.min_length);
    return table;
}

std::string plateau_heading(const plateau_table& table, bool computed) {
    char text[256];
    std::snprintf(text, sizeof text, "lasting at least %.6g (plateau_min = %s)%s", table.min_length,
                  table.plateau_min.c_str(),
                  computed ? "; computed from /observables/clusters (the file has no /plateaus)"
                           : "");
    return text;
}

// Every plateau of the file, one line each (--plateaus).
int print_plateaus(const trajectory_reader& file, const std::string& path) {
    bool computed = false;
    const std::optional<plateau_table> table = plateaus_of(file, computed);
    if (!table)
        throw input_error("'" + path +
                          "': plateaus not recorded (no clusters series: add clusters to "
                          "observables)");
    std::printf("plateaus of the cluster count %s\n%12s %12s %12s %9s\n",
                plateau_heading(*table, computed).c_str(), "start", "end", "length", "clusters");
    for (const plateau& p : table->plateaus)
        std::printf("%12.6g %12.6g %12.6g %9lld%s\n", p.start, p.end, p.length(),
                    static_cast<long long>(p.clusters),
                    p.censored ? "  censored (lasts to the last frame)" : "");
    if (table->plateaus.empty()) std::printf("(none)\n");
    return 0;
}

constexpr const char* table_columns[] = {"mean_cos", "gap",    "velocity",    "min_cos",
                                         "clusters", "r_mean", "displacement"};

int inspect(const inspect_options& options);

// The interaction energy E (docs/model.md §5.1) beside the stored log_energy (called energy
// by files before the rename, which this renames to log_energy): E where some frame's is
// finite, so that the table and --csv give E itself.
void add_energy(const trajectory_reader& file, std::vector<std::string>& names,
                std::vector<std::vector<double>>& series, std::vector<std::size_t>& widths) {
    const auto stored = std::find(names.begin(), names.end(), "log_energy") != names.end()
                            ? std::find(names.begin(), names.end(), "log_energy")
                            : std::find(names.begin(), names.end(), "energy");
    if (stored == names.end()) return;
    const auto i = static_cast<std::size_t>(stored - names.begin());
    *stored = "log_energy";
    std::optional<run_config> config;
    try {
        config = run_config::from_parameters(file.parameters());
    } catch (const input_error&) {
        return; // parameters this nadyn cannot read: log_energy alone
    }
    std::vector<double> energy;
    bool finite = false;
    for (const double value : series[i]) {
        energy.push_back(config->energy_from_log_energy(value));
        finite = finite || std::isfinite(energy.back());
    }
    if (!finite) return;
    names.insert(names.begin() + static_cast<std::ptrdiff_t>(i) + 1, "energy");
    series.insert(series.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(energy));
    widths.insert(widths.begin() + static_cast<std::ptrdiff_t>(i) + 1, 1);
}

} // namespace

command add_inspect(CLI::App& app) {
    auto o = std::make_shared<inspect_options>();
    app.add_option("file", o->path, "Trajectory, sweep or density file written by nadyn")
        ->required();
    app.add_flag("--csv", o->csv, "Every frame as CSV on stdout (step, time, every observable)");
    app.add_option("--rows", o->rows, "Rows of the summary table")->capture_default_str();
    app.add_flag("--describe", o->describe,
                 "Print what every observable and parameter of the file means (its description "
                 "and unit attributes)");
    app.add_flag("--merges", o->merges,
                 "Print the cluster history: every merge event (time, labels, sizes, cluster "
                 "count after) and the clustering times t_k; of a sweep file, of the run --point "
                 "names");
    app.add_option("--point", o->point,
                   "With --merges on a sweep file: the run, as axis=value,... (every axis with "
                   "more than one value) or its index; not needed when the sweep has one run");
    app.add_flag("--plateaus", o->plateaus,
                 "Print the metastable plateaus of the cluster count (start, end, length, "
                 "count; the file's /plateaus)");
    app.footer(
        "Examples:\n"
        "  nadyn inspect run.h5               # parameters, status, observables over time\n"
        "  nadyn inspect run.h5 --csv > run.csv\n"
        "  nadyn inspect run.h5 --describe    # what each observable and parameter means\n"
        "  nadyn inspect run.h5 --merges      # merge events and clustering times t_k\n"
        "  nadyn inspect beta.h5 --merges --point beta=4,seed=1\n"
        "  nadyn inspect run.h5 --plateaus    # the metastable plateaus of the cluster count\n"
        "  nadyn inspect beta.h5              # a sweep file: axes and final observables");

    return [o]() {
        try {
            // In a child process: libhdf5 crashes on some damaged metadata, which then ends
            // the child, and the parent says so in one line (child_reader.hpp).
            const child_read inspected = read_in_child(o->path, [o] { return inspect(*o); });
            std::fwrite(inspected.output.data(), 1, inspected.output.size(), stdout);
            return inspected.status;
        } catch (const io_error&) {
            refuse_empty_output(o->path); // a stub left at creation: say so, not "truncated"
            throw;
        }
    };
}

namespace {

int inspect(const inspect_options& options) {
    const inspect_options* o = &options;
    {
        if (!o->point.empty() && !o->merges)
            throw input_error("--point selects the run of --merges in a sweep file; add --merges");
        if (o->merges && is_sweep_file(o->path)) {
            const sweep_run_history run = sweep_cluster_history(o->path, o->point);
            return print_merges(o->path + " (" + run.label + ")", run.merges, run.merge_count,
                                run.levels, run.clustering_times);
        }
        if (o->merges && meanfield::is_density_file(o->path))
            throw input_error("--merges reads particle files; '" + o->path +
                              "' is a density file of nadyn meanfield (it has no tokens)");
        if (o->merges) {
            if (!o->point.empty())
                throw input_error("--point picks a run of a sweep file; '" + o->path +
                                  "' is a single run");
            const trajectory_reader file(o->path);
            const auto merges = file.merge_events();
            return print_merges(o->path, merges, merges.size(), clustering_levels(file.n()),
                                file.clustering_times());
        }
        if (is_sweep_file(o->path)) {
            std::printf("%s", describe_sweep_file(o->path).c_str());
            return 0;
        }
        if (meanfield::is_density_file(o->path)) {
            if (o->merges || o->plateaus || o->describe)
                throw input_error("--merges, --plateaus and --describe read particle files; '" +
                                  o->path + "' is a density file of nadyn meanfield");
            return inspect_density(o->path, o->csv, o->rows);
        }
        trajectory_reader file(o->path);
        if (o->describe) return describe(file, o->path);
        if (o->plateaus) return print_plateaus(file, o->path);
        const auto steps = file.steps();
        const auto times = file.times();
        std::vector<std::string> names = file.observable_names();
        std::vector<std::vector<double>> series;
        std::vector<std::size_t> widths; // values per frame: K for modes, 1 for the others
        for (const auto& name : names) {
            series.push_back(file.observable(name));
            widths.push_back(file.observable_width(name));
        }
        const std::size_t frames = file.frame_count();
        add_energy(file, names, series, widths);

        if (o->csv) {
            std::printf("step,time");
            // A vector observable is one column per entry: modes_1 .. modes_K.
            for (std::size_t i = 0; i < names.size(); ++i) {
                if (widths[i] == 1) std::printf(",%s", names[i].c_str());
                for (std::size_t k = 0; widths[i] > 1 && k < widths[i]; ++k)
                    std::printf(",%s_%zu", names[i].c_str(), k + 1);
            }
            std::printf("\n");
            for (std::size_t f = 0; f < frames; ++f) {
                std::printf("%lld,%.17g", static_cast<long long>(steps[f]), times[f]);
                for (std::size_t i = 0; i < names.size(); ++i)
                    for (std::size_t k = 0; k < widths[i]; ++k)
                        std::printf(",%.17g", series[i][f * widths[i] + k]);
                std::printf("\n");
            }
            return 0;
        }

        std::printf("file        %s\nstatus      %s\nframes      %zu\ntokens      n = %zu, d = "
                    "%zu%s\n",
                    o->path.c_str(), file.status().c_str(), frames, file.n(), file.d(),
                    file.has_positions() ? "" : " (positions not stored)");
        // The plateaus in two lines (--plateaus lists them).
        bool computed = false;
        if (const std::optional<plateau_table> table = plateaus_of(file, computed)) {
            const std::optional<plateau> longest = longest_plateau(table->plateaus);
            std::printf("plateaus    %zu %s\n", table->plateaus.size(),
                        plateau_heading(*table, computed).c_str());
            if (longest)
                std::printf("longest     %.6g at %lld clusters, from t = %.6g%s (--plateaus lists "
                            "them)\n",
                            longest->length(), static_cast<long long>(longest->clusters),
                            longest->start, longest->censored ? ", censored" : "");
        }
        std::printf("\nparameters\n");
        for (const auto& [name, value] : file.parameters().entries())
            std::printf("  %-18s %s\n", name.c_str(), to_display_string(value).c_str());
        if (frames == 0) {
            std::printf("\nno frames written\n");
            return 0;
        }
        std::vector<std::size_t> columns;
        for (const char* wanted : table_columns)
            for (std::size_t i = 0; i < names.size(); ++i)
                if (names[i] == wanted) columns.push_back(i);
        // A run that records none of them (--observables): the standard ones it records.
        if (columns.empty())
            for (std::size_t i = 0; i < names.size(); ++i)
                if (const observable* row = find_observable(names[i]);
                    row && !row->optional && widths[i] == 1)
                    columns.push_back(i);
        for (std::string_view optional : observable_names(true)) {
            for (std::size_t i = 0; i < names.size(); ++i)
                if (names[i] == optional && widths[i] == 1) columns.push_back(i);
            // E itself beside the stored log_energy.
            if (optional == "log_energy")
                for (std::size_t i = 0; i < names.size(); ++i)
                    if (names[i] == "energy") columns.push_back(i);
        }
        std::printf("\n%12s", "time");
        for (std::size_t i : columns)
            std::printf(" %14s", names[i].c_str());
        std::printf("\n");
        const std::size_t rows = std::min(std::max<std::size_t>(o->rows, 2), frames);
        std::size_t previous = frames;
        for (std::size_t row = 0; row < rows; ++row) {
            // Evenly spaced frames, always including the first and the last.
            const std::size_t f = rows == 1 ? 0 : row * (frames - 1) / (rows - 1);
            if (f == previous) continue;
            previous = f;
            std::printf("%12.6g", times[f]);
            for (std::size_t i : columns)
                std::printf(" %14.8g", series[i][f]);
            std::printf("\n");
        }
        // Vector observables (modes) do not fit a column: their last frame, entry by entry.
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (widths[i] < 2) continue;
            std::printf("\n%s at t = %.6g (k = 1..%zu):", names[i].c_str(), times[frames - 1],
                        widths[i]);
            for (std::size_t k = 0; k < widths[i]; ++k)
                std::printf(" %.6g", series[i][(frames - 1) * widths[i] + k]);
            std::printf("\n");
        }
        return 0;
    }
}

} // namespace

} // namespace nadyn::cli
