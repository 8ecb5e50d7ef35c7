// nadyn._core._simulate: one run from the registry's parameters, in memory or to a file.
#include "common.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"

#include <pybind11/stl.h>

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>

namespace nadyn::python {

namespace {

// What a run produced, gathered on the worker thread (no Python objects there).
struct run_result {
    std::vector<double> times;
    std::vector<std::int64_t> steps;
    std::vector<double> positions;  // frames * n * d, empty without positions
    std::vector<double> magnitudes; // frames * n
    std::vector<std::pair<std::string, std::vector<double>>> matrices; // theta0, r_initial, Q..
    std::vector<std::array<std::size_t, 2>> matrix_shapes;
    parameter_list parameters;
    std::string status = "complete";
    std::string fault; // numerical_fault's message when status is "failed"
    std::size_t n = 0, d = 0;
    bool has_positions = false;
    // The observables the run records (run_config::recorded_observables: --observables, then
    // --observe), by name, in their order; observable_width values per frame.
    std::vector<std::pair<std::string, std::vector<double>>> observables;
    std::size_t modes = 0; // K, the values per frame of the observable `modes`
    std::vector<std::string> warnings; // the run's warnings (diagnostics.hpp), in order
};

py::object to_python(const parameter_value& value) {
    return std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
}

// The /parameters record of an in-memory run: the inputs and provenance a file records,
// then the file's statistics.
void record_statistics(parameter_list& p, const run_summary& s) {
    p.set("rhs_evaluations", static_cast<std::int64_t>(s.statistics.rhs_evaluations));
    p.set("accepted_steps", static_cast<std::int64_t>(s.statistics.accepted_steps));
    p.set("rejected_steps", static_cast<std::int64_t>(s.statistics.rejected_steps));
    p.set("wall_time_seconds", s.wall_seconds);
    p.set("frames", static_cast<std::int64_t>(s.frames));
}

void read_back(const std::string& path, run_result& result) {
    const trajectory_reader file(path);
    result.status = file.status();
    result.parameters = file.parameters();
    result.has_positions = file.has_positions();
    const std::size_t frames = file.frame_count();
    result.times = file.times();
    result.steps = file.steps();
    result.times.resize(frames);
    result.steps.resize(frames);
    for (auto& [name, values] : result.observables) {
        values = file.observable(name); // modes: K values per frame, row by row
        values.resize(frames * find_observable(name)->values_per_frame(result.modes));
    }
    result.magnitudes.reserve(frames * result.n);
    if (result.has_positions) result.positions.reserve(frames * result.n * result.d);
    for (std::size_t f = 0; f < frames; ++f) {
        const auto r = file.magnitudes(f);
        result.magnitudes.insert(result.magnitudes.end(), r.begin(), r.end());
        if (result.has_positions) {
            const auto theta = file.positions(f);
            result.positions.insert(result.positions.end(), theta.begin(), theta.end());
        }
    }
    for (const char* name : {"theta0", "r_initial", "Q", "K", "V"}) {
        std::size_t rows = 0, cols = 0;
        if (auto m = file.parameter_matrix(name, &rows, &cols)) {
            result.matrices.emplace_back(name, std::move(*m));
            result.matrix_shapes.push_back({rows, cols});
        }
    }
}

// The initial state and the weights as the file records them (simulation::write_header).
void record_matrices(const simulation& run, run_result& result) {
    const run_config& c = run.config();
    const state_type& start = run.state();
    const auto nd = static_cast<std::ptrdiff_t>(c.n * c.d);
    result.matrices.emplace_back("theta0", std::vector<double>(start.begin(), start.begin() + nd));
    result.matrix_shapes.push_back({c.n, c.d});
    result.matrices.emplace_back("r_initial", std::vector<double>(start.begin() + nd, start.end()));
    result.matrix_shapes.push_back({c.n, 1});
    if (!c.weights.per_layer) {
        // As simulation::write_header records them.
        const std::size_t heads = run.weights().heads.size();
        for (stacked_matrix& m : stacked_weight_matrices(run.weights(), c.d)) {
            result.matrices.emplace_back(m.name, std::move(m.values));
            result.matrix_shapes.push_back({heads * c.d, c.d});
        }
    }
}

// values: registry name -> text (what the command line would have given). Applied in
// registry order, with the command line's message prefix ("--n 'x': ..."), so a bad value
// reads exactly as `nadyn simulate` reports it.
py::dict simulate(const std::map<std::string, std::string>& values, std::optional<std::string> out,
                  bool force, const std::string& command_line, const py::object& progress) {
    for (const auto& [name, text] : values)
        if (!find_parameter(name))
            throw py::type_error("simulate() got an unexpected keyword argument '" + name +
                                 "'; valid keywords: " + parameter_names() + ", out, force");
    run_config config;
    for (const parameter_spec& spec : parameter_registry()) {
        const auto given = values.find(std::string(spec.name));
        if (given == values.end()) continue;
        try {
            spec.assign(config, given->second);
        } catch (const input_error& e) {
            throw input_error(std::string(spec.flag) + " '" + given->second + "': " + e.what());
        }
    }
    config.ignore_memory_estimate = force;
    config.command_line = command_line;
    if (out && out->empty())
        throw input_error("out needs a file name (or None for a run kept in memory)");

    run_result result;
    result.n = config.n;
    result.d = config.d;
    result.modes = config.modes;
    for (const std::string& name : config.recorded_observables())
        result.observables.emplace_back(name, std::vector<double>{});
    const std::vector<std::size_t> widths = observable_widths(config.recorded_rows(), config.modes);
    // The run's progress (t / T), left by the worker for the watching thread, which calls
    // `progress` with it (with the GIL) when it has moved.
    std::mutex warnings_mutex;
    std::atomic<double> fraction{0.0};
    double shown = -1.0;
    const progress_callback report = [&](double f) { fraction.store(f); };
    const std::function<void()> on_wake = [&] {
        const double f = fraction.load();
        if (f == shown) return;
        shown = f;
        progress(f);
    };
    const auto work = [&](const std::atomic<bool>* stop) {
        // Built here, on the thread that runs it: the constructor sets the OpenMP thread
        // count (`threads`) for the calling thread.
        simulation run(config);
        // Said after the run, on the calling thread (nadyn.simulate warns with each).
        run.set_warning_sink([&](const std::string& warning) {
            const std::lock_guard lock(warnings_mutex);
            result.warnings.push_back(warning);
        });
        if (out) {
            check_output_path(*out, force);
            try {
                run.run_to_file(*out, true, stop, report);
            } catch (const numerical_fault& e) {
                result.fault = e.what();
            }
            read_back(*out, result);
            return;
        }
        const std::size_t n = config.n, d = config.d;
        result.has_positions = config.positions;
        run_summary summary;
        try {
            summary = run.run(
                [&](const state_type& x, double t, std::int64_t step, const frame_observables& o) {
                    result.times.push_back(t);
                    result.steps.push_back(step);
                    if (result.has_positions)
                        result.positions.insert(result.positions.end(), x.begin(),
                                                x.begin() + static_cast<std::ptrdiff_t>(n * d));
                    const double* r = magnitudes(x, n, d);
                    result.magnitudes.insert(result.magnitudes.end(), r, r + n);
                    // One column per observable (modes: m_1 .. m_K, a row per frame).
                    auto column = o.values.begin();
                    for (std::size_t i = 0; i < result.observables.size(); ++i) {
                        const auto width = static_cast<std::ptrdiff_t>(widths[i]);
                        auto& values = result.observables[i].second;
                        values.insert(values.end(), column, column + width);
                        column += width;
                    }
                },
                stop, report);
            result.status =
                summary.outcome == integration_outcome::complete ? "complete" : "interrupted";
        } catch (const numerical_fault& e) {
            result.fault = e.what();
            result.status = "failed";
            summary.frames = result.times.size();
        }
        result.parameters = run.parameters();
        record_statistics(result.parameters, summary);
        record_matrices(run, result);
    };
    py::object pending =
        run_watching_signals(work, progress.is_none() ? std::function<void()>{} : on_wake);

    const auto frames = static_cast<py::ssize_t>(result.times.size());
    const auto n = static_cast<py::ssize_t>(result.n), d = static_cast<py::ssize_t>(result.d);
    py::dict answer;
    answer["ts"] = owning_array(std::move(result.times), {frames});
    answer["steps"] = owning_array(std::move(result.steps), {frames});
    answer["ys"] = result.has_positions
                       ? py::object(owning_array(std::move(result.positions), {frames, n, d}))
                       : py::object(py::none());
    answer["r"] = owning_array(std::move(result.magnitudes), {frames, n});
    py::dict observables;
    for (auto& [name, values] : result.observables) {
        // A vector observable (modes) is (frames, K) even for K = 1.
        const observable* row = find_observable(name);
        const bool vector = row->width == observable_width::modes;
        const auto width = static_cast<py::ssize_t>(row->values_per_frame(result.modes));
        observables[py::str(name)] = vector ? owning_array(std::move(values), {frames, width})
                                            : owning_array(std::move(values), {frames});
    }
    answer["observables"] = observables;
    py::dict matrices;
    for (std::size_t i = 0; i < result.matrices.size(); ++i) {
        const auto [rows, cols] = result.matrix_shapes[i];
        matrices[py::str(result.matrices[i].first)] =
            owning_array(std::move(result.matrices[i].second),
                         {static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(cols)});
    }
    answer["matrices"] = matrices;
    py::dict parameters;
    for (const auto& [name, value] : result.parameters.entries())
        parameters[py::str(name)] = to_python(value);
    answer["parameters"] = parameters;
    answer["status"] = result.status;
    answer["fault"] = result.fault;
    answer["path"] = out ? py::object(py::str(*out)) : py::object(py::none());
    answer["signal"] = pending;
    answer["warnings"] = result.warnings;
    return answer;
}

} // namespace

void bind_simulate(py::module_& m) {
    m.def("_simulate", &simulate, py::arg("values"), py::arg("out"), py::arg("force"),
          py::arg("command_line"), py::arg("progress") = py::none(),
          "Runs one simulation (use nadyn.simulate); `progress(fraction)` (optional) is called "
          "with t / T a few times a second, with the GIL, while the run computes without it. "
          "Returns a dict of arrays and the record; "
          "'signal' holds the exception a signal handler raised during the run (None if "
          "none), 'fault' the message of a numerical fault.");
}

} // namespace nadyn::python
