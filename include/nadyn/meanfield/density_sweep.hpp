#pragma once
// Experiments of the density solver: `nadyn sweep` on a file whose [run] says
// model = "meanfield" (docs/cli.md, docs/file-format.md "Density sweep files"). The keys are
// nadyn meanfield's (its /parameters names), the axes' syntax is the particles' experiments'
// (experiment.hpp), and the runs go one after the other, each with all the cores its
// transforms use, into one sweep file whose observables are arrays over the axes and time,
// labelled with dimension scales as the particles' sweep files are (nadyn.open reads both).
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/meanfield/density_run.hpp"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace nadyn::meanfield {

// What the sweep file keeps of the densities: nothing, each run's last frame, or every frame.
enum class sweep_density { none, final, all };

struct density_experiment {
    std::string source, text;
    std::vector<std::string> overrides;
    meanfield_config base;
    std::vector<sweep_axis> axes;
    sweep_density density = sweep_density::final;

    // input_error naming the file, the line and the key, as experiment::parse.
    static density_experiment parse(const std::string& text, const std::string& source,
                                    const std::vector<std::string>& overrides = {});
    // The experiment a density sweep file records (for --resume).
    static density_experiment from_file(const std::string& path);
    [[nodiscard]] std::size_t size() const;
    [[nodiscard]] meanfield_config point(std::size_t index) const;
    [[nodiscard]] std::string label(std::size_t index) const;
};

// The keys a meanfield experiment takes, for messages.
std::string density_experiment_keys();

struct density_sweep_summary {
    std::size_t runs = 0, complete = 0, unresolved = 0, interrupted = 0, failed = 0;
    bool stopped = false; // the stop token ended it
    double wall_seconds = 0.0;
};

// Runs every run not yet finished into the sweep file at `path` (created, or with `resume`
// reopened: a run marked complete or unresolved is kept). `progress(done, total, label)`
// after each run. input_error on bad input or a file that is not this experiment's.
density_sweep_summary run_density_sweep(
    const density_experiment& e, const std::string& path, bool overwrite, bool resume,
    const std::atomic<bool>* stop,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress = {});

// Whether the file at `path` is a sweep file of the density solver.
bool is_density_sweep_file(const std::string& path);

} // namespace nadyn::meanfield
