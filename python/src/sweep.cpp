// nadyn._core._sweep: an experiment run through the library's sweep engine.
#include "common.hpp"

#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/sweep.hpp"

#include <pybind11/stl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>

namespace nadyn::python {

namespace {

// `text` (TOML) labelled `source`, or the file at `path` when text is None: experiment
// files name their input files relative to themselves, which experiment::load handles.
py::dict summary_of(const sweep_summary& summary, py::object pending) {
    py::dict answer;
    answer["runs"] = summary.runs;
    answer["complete"] = summary.complete;
    answer["interrupted"] = summary.interrupted;
    answer["failed"] = summary.failed;
    answer["jobs"] = summary.jobs;
    answer["wall_seconds"] = summary.wall_seconds;
    answer["first_failure"] = summary.first_failure;
    answer["signal"] = pending;
    return answer;
}

// The runs done of the runs to do, left by the sweep's threads for the watching thread, which
// calls `progress(done, total)` with them (with the GIL) when they have moved.
struct sweep_counts {
    std::atomic<std::size_t> done{0}, total{0};
    std::size_t shown = SIZE_MAX;

    std::function<void(const sweep_progress&)> report() {
        return [this](const sweep_progress& p) {
            total.store(p.total);
            done.store(p.done);
        };
    }
    std::function<void()> on_wake(const py::object& progress) {
        if (progress.is_none()) return {};
        return [this, progress] {
            const std::size_t now = done.load();
            if (now == shown || total.load() == 0) return;
            shown = now;
            progress(now, total.load());
        };
    }
};

py::dict sweep(std::optional<std::string> text, const std::string& source,
               const std::vector<std::string>& overrides, const std::string& out, int jobs,
               bool force, const py::object& progress) {
    const experiment e =
        text ? experiment::parse(*text, source, overrides) : experiment::load(source, overrides);
    sweep_summary summary;
    sweep_counts counts;
    std::vector<std::string> warnings; // said before the first run, on the worker thread
    py::object pending = run_watching_signals(
        [&](const std::atomic<bool>* stop) {
            sweep_options options;
            options.jobs = jobs;
            options.stop = stop;
            options.overwrite = force;
            options.progress = counts.report();
            options.warn = [&](const std::string& warning) { warnings.push_back(warning); };
            summary = run_sweep(e, out, options);
        },
        counts.on_wake(progress));
    py::dict answer = summary_of(summary, pending);
    answer["warnings"] = warnings;
    return answer;
}

// `nadyn sweep --resume`: runs what is missing of the sweep file at `path`.
py::dict resume(const std::string& path, int jobs, const py::object& progress) {
    sweep_summary summary;
    sweep_counts counts;
    py::object pending = run_watching_signals(
        [&](const std::atomic<bool>* stop) {
            sweep_options options;
            options.jobs = jobs;
            options.stop = stop;
            options.progress = counts.report();
            summary = resume_sweep(path, options);
        },
        counts.on_wake(progress));
    py::dict answer = summary_of(summary, pending);
    answer["skipped"] = summary.skipped;
    answer["distrusted"] = summary.distrusted;
    return answer;
}

// `nadyn sweep --dry-run` on the experiment file at `path`: its model, and for a particle
// experiment the plan (every run checked). A bad key or value is a ValueError with the
// command line's message; a density experiment ("meanfield") is only named, for the caller
// to run through the command line, whose density sweep has no binding.
py::dict plan(const std::string& path, const std::vector<std::string>& overrides, int jobs) {
    py::dict answer;
    const std::string model = experiment_model(read_experiment_text(path), path, overrides);
    answer["model"] = model;
    if (model == "particles") {
        const experiment e = experiment::load(path, overrides);
        answer["plan"] = describe_plan(e, plan_sweep(e, jobs));
    }
    return answer;
}

// The run of the sweep file at `path` that `point` names (experiment::find_point, as
// --point of nadyn rerun and nadyn inspect): its index, its label, and per axis the value's
// index and the axis's length.
py::tuple sweep_point(const std::string& path, const std::string& point) {
    const experiment e = sweep_experiment(path);
    const std::size_t index = e.find_point(point);
    py::dict at;
    const auto coordinates = e.coordinates(index);
    for (std::size_t a = 0; a < e.axes.size(); ++a)
        at[py::str(e.axes[a].name)] = py::make_tuple(coordinates[a], e.axes[a].values.size());
    return py::make_tuple(index, e.label(index), at);
}

} // namespace

void bind_sweep(py::module_& m) {
    m.def("_sweep_point", &sweep_point, py::arg("path"), py::arg("point"),
          "The run of the sweep file `path` that `point` names ('axis=value,...', an index, or "
          "'' for a one-run sweep; nadyn.io.sweep_run): (index, label, {axis: (value index, "
          "axis length)}). "
          "ValueError with the command line's message for anything else.");
    m.def("_sweep", &sweep, py::arg("text"), py::arg("source"), py::arg("overrides"),
          py::arg("out"), py::arg("jobs"), py::arg("force"), py::arg("progress") = py::none(),
          "Runs an experiment into the sweep file `out` (use nadyn.sweep); `progress(done, "
          "total)` (optional) is called with the runs finished as they finish, with the GIL. "
          "Returns the summary; 'signal' holds the exception a signal handler raised (None if "
          "none).");
    m.def("_resume_sweep", &resume, py::arg("path"), py::arg("jobs"),
          py::arg("progress") = py::none(),
          "Runs what is missing of the sweep file `path` (use nadyn.resume_sweep). Returns the "
          "summary, as _sweep's plus 'skipped' (runs already complete).");
    m.def("_plan_sweep", &plan, py::arg("path"), py::arg("overrides"), py::arg("jobs"),
          "Checks the experiment file `path` with `overrides` as `nadyn sweep --dry-run` does "
          "(nadyn.study): {'model': 'particles' | 'meanfield', 'plan': text (particles only)}.");
}

} // namespace nadyn::python
