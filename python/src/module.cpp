// nadyn._core: the compiled half of `import nadyn` (the pure-Python package wraps it in
// nadyn.simulate, nadyn.sweep, nadyn.reduced, nadyn.table).
#include "common.hpp"

#include "nadyn/experiment/observable_table.hpp"
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/growth_rates.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/scheme.hpp"
#include "nadyn/model/version.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace nadyn::python {

py::object run_watching_signals(const std::function<void(const std::atomic<bool>* stop)>& work,
                                const std::function<void()>& on_wake) {
    std::atomic<bool> stop{false};
    std::exception_ptr failure;
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    py::object pending = py::none();
    {
        py::gil_scoped_release release;
        std::thread worker([&] {
            try {
                work(&stop);
            } catch (...) {
                failure = std::current_exception();
            }
            const std::lock_guard lock(mutex);
            done = true;
            finished.notify_all();
        });
        for (;;) {
            std::unique_lock lock(mutex);
            if (finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) break;
            lock.unlock();
            if (stop.load()) continue;
            const py::gil_scoped_acquire acquire;
            if (PyErr_CheckSignals() != 0) {
                stop.store(true);
                PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
                PyErr_Fetch(&type, &value, &traceback);
                PyErr_NormalizeException(&type, &value, &traceback);
                if (traceback) PyException_SetTraceback(value, traceback);
                pending = py::reinterpret_steal<py::object>(value);
                Py_XDECREF(type);
                Py_XDECREF(traceback);
                continue;
            }
            if (!on_wake) continue;
            try {
                on_wake();
            } catch (py::error_already_set& error) {
                stop.store(true);
                error.restore();
                PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
                PyErr_Fetch(&type, &value, &traceback);
                PyErr_NormalizeException(&type, &value, &traceback);
                if (traceback) PyException_SetTraceback(value, traceback);
                pending = py::reinterpret_steal<py::object>(value);
                Py_XDECREF(type);
                Py_XDECREF(traceback);
            }
        }
        worker.join();
    }
    if (failure) std::rethrow_exception(failure);
    return pending;
}

namespace {

std::string_view type_name(value_type type) {
    switch (type) {
    case value_type::integer:
        return "integer";
    case value_type::number:
        return "number";
    case value_type::name:
        return "name";
    case value_type::switch_:
        return "switch";
    }
    return "name";
}

py::list registry_rows() {
    py::list rows;
    for (const parameter_spec& spec : parameter_registry()) {
        py::dict row;
        row["name"] = std::string(spec.name);
        row["flag"] = std::string(spec.flag);
        row["type"] = std::string(type_name(spec.type));
        row["default"] = default_text(spec);
        row["help"] = std::string(spec.help);
        row["description"] = std::string(spec.description);
        row["unit"] = std::string(spec.unit);
        row["switch_sets"] = std::string(spec.switch_sets);
        row["resumable"] = spec.resumable;
        row["sweepable"] = spec.sweepable;
        rows.append(row);
    }
    return rows;
}

reduced_parameters reduced_settings(const std::string& scheme_name, double n, double beta,
                                    double r0, double alpha, double t_switch) {
    reduced_parameters p;
    p.scheme.id = parse_scheme(scheme_name);
    p.scheme.alpha = alpha;
    p.scheme.t_switch = t_switch;
    p.n = n;
    p.beta = beta;
    p.r0 = r0;
    return p;
}

void require(bool ok, const std::string& message) {
    if (!ok) throw input_error(message);
}

// The scalar ODE at the given times (what `nadyn reduced` samples), as arrays.
py::dict reduced(const std::string& scheme_name, double n, double beta, double r0, double alpha,
                 double t_switch, std::vector<double> times, double rtol) {
    // The checks and messages of `nadyn reduced`.
    require(std::isfinite(n) && n > 1.0, "n must be a finite number > 1");
    require(std::isfinite(beta), "beta must be a finite number");
    require(std::isfinite(r0) && r0 > 0.0, "r0 must be a finite number > 0");
    require(std::isfinite(alpha) && alpha > 0.0, "alpha must be a finite number > 0");
    require(std::isfinite(rtol) && rtol >= 1e-15 && rtol < 1.0, "rtol must be in [1e-15, 1)");
    require(std::isfinite(t_switch) && t_switch >= 0.0, "t-switch must be a finite number >= 0");
    require(!times.empty(), "times must not be empty");
    for (std::size_t i = 0; i < times.size(); ++i)
        require(std::isfinite(times[i]) && times[i] >= 0.0 && (i == 0 || times[i] >= times[i - 1]),
                "times must be finite, >= 0 and sorted");
    const reduced_parameters p = reduced_settings(scheme_name, n, beta, r0, alpha, t_switch);
    std::vector<reduced_sample> samples;
    {
        const py::gil_scoped_release release;
        samples = integrate_reduced(p, times, rtol, 0.0);
    }
    const auto count = static_cast<py::ssize_t>(samples.size());
    std::vector<double> t, gamma, gap, velocity, r;
    for (const auto& s : samples) {
        t.push_back(s.t);
        gamma.push_back(1.0 - s.u);
        gap.push_back(s.u);
        velocity.push_back(s.velocity);
        r.push_back(s.r);
    }
    py::dict out;
    out["t"] = owning_array(std::move(t), {count});
    out["gamma"] = owning_array(std::move(gamma), {count});
    out["gap"] = owning_array(std::move(gap), {count});
    out["velocity"] = owning_array(std::move(velocity), {count});
    out["r"] = owning_array(std::move(r), {count});
    return out;
}

} // namespace

} // namespace nadyn::python

PYBIND11_MODULE(_core, m) {
    using namespace nadyn;
    using namespace nadyn::python;
    m.doc() = "nadyn's library (C++) for Python; use it through the nadyn package.";
    // The package re-exports its own wrappers; nothing here is exported by name.
    m.attr("__all__") = py::list();

    static py::exception<numerical_fault> fault(m, "NumericalFault", PyExc_RuntimeError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const input_error& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const io_error& e) {
            PyErr_SetString(PyExc_OSError, e.what());
        } catch (const out_of_memory& e) {
            PyErr_SetString(PyExc_MemoryError, e.what());
        } catch (const numerical_fault& e) {
            fault(e.what());
        }
    });

    m.def(
        "verify_readable",
        [](const std::string& path) {
            py::gil_scoped_release release;
            verify_readable(path);
        },
        "Reads every object header, attribute and the first and last value of every dataset "
        "of the file, with bounded SWMR retries; OSError (or ValueError) at the first damage.");
    m.def(
        "clear_dead_writer_mark",
        [](const std::string& path) {
            py::gil_scoped_release release;
            return clear_dead_writer_mark(path);
        },
        "Clears the 'open for writing' mark a killed writer left in the file (h5clear -s) when "
        "no writer holds it any more; whether it did.");
    m.def("parameters", &registry_rows,
          "The parameter registry: one dict per input of a run (name, flag, type, default, "
          "help, description, unit, switch_sets, resumable, sweepable), in --help order.");
    m.def(
        "observable_names",
        [] {
            std::vector<std::string> names;
            for (auto name : observable_names(false))
                names.emplace_back(name);
            return names;
        },
        "Names of the observables of every frame, in file order.");
    m.def(
        "scheme_names",
        [] {
            std::vector<std::string> names;
            for (const auto& row : scheme_table)
                names.emplace_back(row.name);
            return names;
        },
        "The normalisation schemes, in --help order.");
    m.def(
        "schemes",
        [] {
            py::list rows;
            for (const scheme_info& row : scheme_table) {
                py::dict d;
                d["name"] = std::string(row.name);
                d["layer"] = std::string(row.layer);
                d["speed"] = std::string(row.speed);
                d["radial_rate"] = std::string(row.radial_rate);
                d["uses_magnitude"] = row.uses_magnitude;
                d["uses_attention_norm"] = row.uses_attention_norm;
                d["attention_reads_tokens"] = row.attention_reads_tokens;
                d["in_paper_tables"] = row.in_paper_tables;
                d["has_breakpoint"] = row.has_breakpoint;
                d["has_initial_velocity"] = row.has_initial_velocity;
                d["has_clock"] = row.has_clock;
                d["has_terminal_law"] = row.has_terminal_law;
                rows.append(d);
            }
            return rows;
        },
        "The normalisation schemes, in --help order, one dict each: name, layer, speed and "
        "radial_rate (formulas), uses_magnitude, uses_attention_norm, attention_reads_tokens, "
        "in_paper_tables, and which optional parts it has (has_breakpoint, has_initial_velocity, "
        "has_clock, has_terminal_law). Generated from the library's list of schemes "
        "(include/nadyn/model/schemes/list.hpp): what tests, studies and scripts iterate.");
    m.def(
        "version", [] { return std::string(version()); }, "nadyn's version");
    m.def(
        "git_commit", [] { return std::string(git_commit()); }, "The commit nadyn was built from");

    auto closed = m.def_submodule(
        "closed_forms",
        "Closed forms, compiled: gamma'(0) of the symmetric orthogonal start (docs/model.md §3) "
        "and the growth rates of the uniform measure (§13)");
    closed.def(
        "initial_velocity",
        [](const std::string& scheme_name, double n, double beta, double r0, double alpha,
           double t_switch) {
            return initial_velocity_closed_form(
                reduced_settings(scheme_name, n, beta, r0, alpha, t_switch));
        },
        py::arg("scheme"), py::arg("n"), py::arg("beta"), py::kw_only(), py::arg("r0") = 1.0,
        py::arg("alpha") = 1.0, py::arg("t_switch") = 1.0,
        "gamma'(0) of `scheme` for n tokens at the orthogonal start (the library's "
        "initial_velocity_closed_form).");

    // Mean-field growth rates of the uniform measure (docs/model.md §13).
    closed.def(
        "growth_rate",
        [](std::size_t k, double beta, std::size_t d, const std::string& attention) {
            return growth_rate(k, beta, d, parse_attention_kind(attention));
        },
        py::arg("k"), py::arg("beta"), py::arg("d") = 2, py::arg("attention") = "softmax",
        "lambda_k(beta): the rate exp(lambda_k t) of the degree-k mode around the uniform "
        "measure on S^{d-1}, post-ln, identity weights (the library's growth_rate).");
    closed.def(
        "own_weight_factor",
        [](std::size_t n, double beta, std::size_t d, const std::string& attention) {
            return own_weight_factor(n, beta, d, parse_attention_kind(attention));
        },
        py::arg("n"), py::arg("beta"), py::arg("d") = 2, py::arg("attention") = "softmax",
        "The factor n independent uniform tokens see on every lambda_k: (n-1) w_0 / ((n-1) w_0 "
        "+ e^beta) for softmax, (n-1)/n unnormalised (the library's own_weight_factor).");
    closed.def(
        "fastest_mode", [](double beta, std::size_t d) { return fastest_mode(beta, d); },
        py::arg("beta"), py::arg("d") = 2, "k_max(beta) = argmax_k lambda_k(beta).");
    closed.def(
        "uniform_clock",
        [](const std::string& scheme_name, double t, double beta, std::size_t d,
           const std::string& attention, double r0, double alpha, double t_switch) {
            scheme_parameters scheme{parse_scheme(scheme_name), alpha, t_switch};
            return uniform_clock(scheme, t, beta, d, parse_attention_kind(attention), r0);
        },
        py::arg("scheme"), py::arg("t"), py::arg("beta"), py::arg("d") = 2,
        py::arg("attention") = "softmax", py::kw_only(), py::arg("r0") = 1.0,
        py::arg("alpha") = 1.0, py::arg("t_switch") = 0.0,
        "tau(t), the scheme's clock at the uniform state: amplitudes grow like "
        "exp(lambda_k tau(t)) (the library's uniform_clock).");

    m.def("_reduced", &reduced, py::arg("scheme"), py::arg("n"), py::arg("beta"), py::arg("r0"),
          py::arg("alpha"), py::arg("t_switch"), py::arg("times"), py::arg("rtol"));

    bind_simulate(m);
    bind_sweep(m);
    bind_fits(m);
    bind_unselectable(m);
    bind_plateaus(m);
    bind_meanfield(m);
}
