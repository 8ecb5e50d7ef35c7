// nadyn._core.fits: the terminal-velocity laws and their least-squares fits (src/model/fit.cpp,
// docs/model.md §3.5), the one implementation the terminal study and nadyn.laws use.
#include "common.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/fit.hpp"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>

namespace nadyn::python {

namespace {

decay_law parse_law(const std::string& name) {
    for (decay_law law : decay_laws)
        if (to_string(law) == name) return law;
    throw input_error("unknown law '" + name + "'; valid laws: exponential, polynomial, stretched");
}

py::dict fit_entries(const law_fit& fit) {
    py::dict row;
    row["law"] = std::string(to_string(fit.law));
    row["parameter"] = fit.parameter;
    row["log_prefactor"] = fit.log_prefactor;
    row["rms_residual"] = fit.rms_residual;
    row["samples"] = fit.samples;
    return row;
}

void require_same_length(std::size_t a, std::size_t b, const char* what) {
    if (a != b) throw input_error(std::string(what) + " must have as many samples as t");
}

} // namespace

void bind_fits(py::module_& m) {
    auto fits = m.def_submodule(
        "fits", "Terminal-velocity laws and their least-squares fits (docs/model.md §3.5), "
                "compiled: the library's fit_law, choose_window and rank_laws");
    fits.def(
        "laws",
        [] {
            std::vector<std::string> names;
            for (decay_law law : decay_laws)
                names.emplace_back(to_string(law));
            return names;
        },
        "The laws: exponential (C e^{-a t}), polynomial (C t^{-p}), stretched (C e^{-c s}/s, "
        "s = sqrt(t + 1)).");
    fits.def(
        "formula", [](const std::string& law) { return std::string(formula(parse_law(law))); },
        py::arg("law"), "The law's formula as the tables print it.");
    fits.def(
        "predicted",
        [](const std::string& scheme_name) {
            const scheme id = parse_scheme(scheme_name);
            if (!info(id).has_terminal_law)
                throw input_error("scheme '" + scheme_name +
                                  "' has no terminal law (its gap "
                                  "does not go to zero)");
            return std::pair{std::string(to_string(predicted_law(id))), predicted_parameter(id)};
        },
        py::arg("scheme"),
        "(law, parameter) that docs/model.md §3.5 predicts for the scheme's gamma'(t).");
    fits.def(
        "fit_law",
        [](const std::string& law, const std::vector<double>& t, const std::vector<double>& v,
           double start, double end) {
            require_same_length(v.size(), t.size(), "v");
            return fit_entries(fit_law(parse_law(law), t, v, start, end));
        },
        py::arg("law"), py::arg("t"), py::arg("v"), py::arg("start"), py::arg("end"),
        "Fits `law` to the samples with start <= t <= end and v > 0 (one linear regression in "
        "the law's own variables): a dict of law, parameter, log_prefactor, rms_residual and "
        "samples.");
    fits.def(
        "choose_window",
        [](const std::vector<double>& t, const std::vector<double>& v,
           const std::vector<double>& gap, double v_floor, double gap_floor,
           double near_cluster) -> std::optional<std::pair<double, double>> {
            require_same_length(v.size(), t.size(), "v");
            require_same_length(gap.size(), t.size(), "gap");
            const fit_window w = choose_window(t, v, gap, v_floor, gap_floor, near_cluster);
            if (!w.valid) return std::nullopt;
            return std::pair{w.start, w.end};
        },
        py::arg("t"), py::arg("v"), py::arg("gap"), py::arg("v_floor"), py::arg("gap_floor"),
        py::arg("near_cluster") = 1e-3,
        "The window of the asymptotic regime, (start, end), or None when it holds fewer than "
        "ten samples: it ends at the last sample of the leading run with v > v_floor and "
        "gap > gap_floor, and starts at the first sample with gap < near_cluster past a "
        "twentieth of the end.");
    fits.def(
        "rank_laws",
        [](const std::vector<double>& t, const std::vector<double>& v, double start, double end) {
            require_same_length(v.size(), t.size(), "v");
            py::list ranked;
            for (const law_fit& fit : rank_laws(t, v, fit_window{start, end, true}))
                ranked.append(fit_entries(fit));
            return ranked;
        },
        py::arg("t"), py::arg("v"), py::arg("start"), py::arg("end"),
        "Every law fitted on [start, end], best (smallest rms residual) first.");
}

} // namespace nadyn::python
