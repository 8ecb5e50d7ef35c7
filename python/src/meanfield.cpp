// nadyn._core._meanfield: one run of the density solver (`nadyn meanfield`) into a file.
#include "common.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/meanfield/density_file.hpp"
#include "nadyn/meanfield/density_run.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/scheme.hpp"
#include "nadyn/model/weights.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <map>
#include <string>

namespace nadyn::python {

namespace {

using meanfield::meanfield_config;

// The keywords of nadyn.meanfield, in the order of `nadyn meanfield --help`: the flag's name
// with '_' for '-' (mode_count is --mode-count, head_combine --head-combine).
enum class keyword_type { text, count, integer, seed, number, optional_number };

struct keyword {
    const char* name;
    keyword_type type;
};

constexpr keyword keywords[] = {
    {"geometry", keyword_type::text},
    {"d", keyword_type::count},
    {"points", keyword_type::count},
    {"degree", keyword_type::count},
    {"beta", keyword_type::number},
    {"scheme", keyword_type::text},
    {"r0", keyword_type::number},
    {"alpha", keyword_type::number},
    {"t_switch", keyword_type::optional_number},
    {"T", keyword_type::number},
    {"dt", keyword_type::number},
    {"every", keyword_type::integer},
    {"rtol", keyword_type::number},
    {"atol", keyword_type::number},
    {"init", keyword_type::text},
    {"weights", keyword_type::text},
    {"heads", keyword_type::count},
    {"value", keyword_type::text},
    {"head_combine", keyword_type::text},
    {"seed", keyword_type::seed},
    {"mode_count", keyword_type::count},
    {"resolution_tol", keyword_type::number},
    {"peak_floor", keyword_type::number},
    {"threads", keyword_type::integer},
};

std::string flag_of(const std::string& name) {
    std::string flag = "--" + name;
    for (char& c : flag)
        if (c == '_') c = '-';
    return flag;
}

// The defaults of a run, from a default meanfield_config (not restated here), as the
// Python values the keywords take.
py::dict defaults() {
    const meanfield_config c;
    py::dict d;
    d["geometry"] = meanfield::to_string(c.geometry);
    d["d"] = c.d;
    d["points"] = c.points;
    d["degree"] = c.degree;
    d["beta"] = c.beta;
    d["r0"] = c.r0;
    d["scheme"] = std::string(info(c.scheme.id).name);
    d["alpha"] = c.scheme.alpha;
    d["t_switch"] = c.t_switch ? py::object(py::float_(*c.t_switch)) : py::object(py::none());
    d["T"] = c.T;
    d["dt"] = c.dt;
    d["every"] = c.every;
    d["rtol"] = c.rtol;
    d["atol"] = c.atol;
    d["init"] = c.init.to_string();
    d["weights"] = c.weights.to_string();
    d["heads"] = c.weights.heads;
    d["value"] = std::string(nadyn::to_string(c.weights.value));
    d["head_combine"] = std::string(nadyn::to_string(c.combine));
    d["seed"] = c.seed;
    d["mode_count"] = c.modes;
    d["resolution_tol"] = c.resolution_tol;
    d["peak_floor"] = c.peak_floor;
    d["threads"] = c.threads;
    return d;
}

// A keyword's value of the wrong Python type is a TypeError; a value of the right type that
// the flag would refuse is a ValueError (input_error) with the flag's name, as the command
// line reports it.
std::string text_of(const std::string& name, const py::handle& value) {
    if (!py::isinstance<py::str>(value))
        throw py::type_error("meanfield(): " + name + " must be a str, got " +
                             std::string(py::str(value.get_type().attr("__name__"))));
    return value.cast<std::string>();
}

long long integer_of(const std::string& name, const py::handle& value) {
    if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value))
        throw py::type_error("meanfield(): " + name + " must be an int, got " +
                             std::string(py::str(value.get_type().attr("__name__"))));
    try {
        return value.cast<long long>();
    } catch (const py::cast_error&) {
        throw input_error(flag_of(name) + " '" + std::string(py::str(value)) + "': out of range");
    }
}

double number_of(const std::string& name, const py::handle& value) {
    if (py::isinstance<py::bool_>(value) ||
        !(py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value)))
        throw py::type_error("meanfield(): " + name + " must be a float or int, got " +
                             std::string(py::str(value.get_type().attr("__name__"))));
    return value.cast<double>();
}

std::size_t count_of(const std::string& name, const py::handle& value) {
    const long long v = integer_of(name, value);
    if (v < 0) throw input_error(flag_of(name) + " '" + std::to_string(v) + "': must be >= 0");
    return static_cast<std::size_t>(v);
}

// The config of the keywords given (the others keep meanfield_config's defaults), built as
// apps/meanfield_command.cpp builds it from the flags.
meanfield_config config_of(const py::dict& values, const std::string& command_line) {
    std::map<std::string, py::handle> given;
    for (const auto& [key, value] : values) {
        const std::string name = py::str(key);
        bool known = false;
        for (const keyword& k : keywords)
            known = known || name == k.name;
        if (!known) {
            std::string valid;
            for (const keyword& k : keywords)
                valid += std::string(valid.empty() ? "" : ", ") + k.name;
            throw py::type_error("meanfield() got an unexpected keyword argument '" + name +
                                 "'; valid keywords: " + valid + ", out, force");
        }
        if (!value.is_none()) given[name] = value;
    }
    auto has = [&](const char* name) { return given.count(name) > 0; };
    meanfield_config c;
    if (has("geometry"))
        c.geometry = meanfield::parse_geometry(text_of("geometry", given["geometry"]));
    if (has("d")) c.d = count_of("d", given["d"]);
    if (has("points")) c.points = count_of("points", given["points"]);
    if (has("degree")) c.degree = count_of("degree", given["degree"]);
    if (has("beta")) c.beta = number_of("beta", given["beta"]);
    if (has("r0")) c.r0 = number_of("r0", given["r0"]);
    if (has("scheme")) c.scheme.id = parse_scheme(text_of("scheme", given["scheme"]));
    if (has("alpha")) c.scheme.alpha = number_of("alpha", given["alpha"]);
    if (has("t_switch")) c.t_switch = number_of("t_switch", given["t_switch"]);
    if (has("T")) c.T = number_of("T", given["T"]);
    if (has("dt")) c.dt = number_of("dt", given["dt"]);
    if (has("every")) c.every = integer_of("every", given["every"]);
    if (has("rtol")) c.rtol = number_of("rtol", given["rtol"]);
    if (has("atol")) c.atol = number_of("atol", given["atol"]);
    if (has("init")) c.init = meanfield::density_init::parse(text_of("init", given["init"]));
    // --weights resets heads and value (weights_spec::parse); they are applied after it.
    if (has("weights")) c.weights = weights_spec::parse(text_of("weights", given["weights"]));
    if (has("heads")) c.weights.heads = count_of("heads", given["heads"]);
    if (has("value")) c.weights.value = parse_value_family(text_of("value", given["value"]));
    if (has("head_combine"))
        c.combine = parse_head_combine(text_of("head_combine", given["head_combine"]));
    if (has("seed")) {
        const py::handle seed = given["seed"];
        if (!py::isinstance<py::int_>(seed) || py::isinstance<py::bool_>(seed))
            throw py::type_error("meanfield(): seed must be an int");
        if (seed.cast<py::int_>() < py::int_(0))
            throw input_error("--seed '" + std::string(py::str(seed)) + "': must be >= 0");
        try {
            c.seed = seed.cast<std::uint64_t>();
        } catch (const py::cast_error&) {
            throw input_error("--seed '" + std::string(py::str(seed)) + "': out of range");
        }
    }
    if (has("mode_count")) c.modes = count_of("mode_count", given["mode_count"]);
    if (has("resolution_tol"))
        c.resolution_tol = number_of("resolution_tol", given["resolution_tol"]);
    if (has("peak_floor")) c.peak_floor = number_of("peak_floor", given["peak_floor"]);
    if (has("threads")) {
        const long long threads = integer_of("threads", given["threads"]);
        if (threads < 0 || threads > 1 << 20) throw input_error("--threads must be >= 0");
        c.threads = static_cast<int>(threads);
    }
    c.command_line = command_line;
    return c;
}

// Runs into `out` (the file `nadyn meanfield --out` writes, bit for bit in its datasets) and
// returns the summary; 'signal' holds the exception a signal handler raised (Ctrl-C: the run
// stopped at its next step, status interrupted), 'fault' a numerical fault's message (the
// file: status failed).
py::dict run(const py::dict& values, const std::string& out, bool force,
             const std::string& command_line) {
    const meanfield_config config = config_of(values, command_line);
    meanfield::density_summary summary;
    std::string fault;
    py::object pending = run_watching_signals([&](const std::atomic<bool>* stop) {
        // Validates (input_error, rethrown here as ValueError) and builds the grid.
        meanfield::density_solver solver(config);
        check_output_path(out, force);
        try {
            summary = meanfield::run_to_file(solver, out, force, stop);
        } catch (const numerical_fault& e) {
            fault = e.what();
        }
    });
    py::dict answer;
    answer["status"] =
        fault.empty() ? std::string(meanfield::to_string(summary.outcome)) : std::string("failed");
    answer["frames"] = summary.frames;
    answer["last_time"] = summary.last_time;
    answer["steps"] = summary.steps;
    answer["rejected"] = summary.rejected;
    answer["evaluations"] = summary.evaluations;
    answer["unresolved_time"] = summary.unresolved_time;
    answer["unresolved_tail"] = summary.unresolved_tail;
    answer["wall_seconds"] = summary.wall_seconds;
    answer["fault"] = fault;
    answer["signal"] = pending;
    return answer;
}

} // namespace

void bind_meanfield(py::module_& m) {
    m.def("_meanfield_defaults", &defaults,
          "The keywords of nadyn.meanfield and their defaults (those of `nadyn meanfield`).");
    m.def("_meanfield", &run, py::arg("values"), py::arg("out"), py::arg("force"),
          py::arg("command_line"),
          "Runs the density solver into the file `out` (use nadyn.meanfield). Returns the "
          "summary; 'signal' holds the exception a signal handler raised (None if none), "
          "'fault' the message of a numerical fault.");
}

} // namespace nadyn::python
