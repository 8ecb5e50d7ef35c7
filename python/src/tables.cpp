// nadyn._core._table: the paper's tables (paper_tables.hpp) as lists of rows.
#include "common.hpp"

#include "nadyn/error.hpp"
#include "nadyn/paper_tables.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <map>

namespace nadyn::python {

namespace {

// A table takes seconds to minutes: other Python threads go on meanwhile.
template <class Compute> auto without_gil(Compute&& compute) {
    const py::gil_scoped_release release;
    return compute();
}

// A table's settings by keyword: each setter converts and assigns one field; the defaults
// are the settings structs' own (the same as `nadyn table`'s).
template <class Settings>
using setters = std::map<std::string, std::function<void(Settings&, py::handle)>>;

template <class Settings>
Settings settings_from(const std::string& table, const py::kwargs& given,
                       const setters<Settings>& fields) {
    Settings s;
    for (const auto& [key, value] : given) {
        const auto name = py::cast<std::string>(key);
        const auto field = fields.find(name);
        if (field == fields.end()) {
            std::string valid;
            for (const auto& [known, setter] : fields)
                valid += (valid.empty() ? "" : ", ") + known;
            throw py::type_error("table('" + table + "') got an unexpected keyword argument '" +
                                 name + "'; valid keywords: " + valid);
        }
        field->second(s, value);
    }
    return s;
}

template <class Settings, class T>
std::pair<const std::string, std::function<void(Settings&, py::handle)>>
field(const char* name, T Settings::*member) {
    return {name, [member](Settings& s, py::handle value) { s.*member = value.cast<T>(); }};
}

std::string name_of(scheme id) {
    return std::string(info(id).name);
}

py::list table(const std::string& name, const py::kwargs& given) {
    py::list rows;
    if (name == "random") {
        using S = random_table_settings;
        const setters<S> fields{field("n", &S::n),           field("d", &S::d),
                                field("layers", &S::layers), field("beta", &S::beta),
                                field("h", &S::h),           field("r0", &S::r0),
                                field("alpha", &S::alpha),   field("seeds", &S::seeds)};
        const auto s = settings_from(name, given, fields);
        validate(s); // the checks and messages of `nadyn table`
        const auto table = without_gil([&] { return random_weights_table(s); });
        const auto windows = random_speed_windows(s.layers);
        for (const auto& r : table) {
            py::dict row;
            row["scheme"] = name_of(r.id);
            // One entry per window (layer 1, layers 1-5, first 10%), keyed by its name.
            for (std::size_t w = 0; w < windows.size() && w < r.gain.size(); ++w) {
                const std::string& window = windows[w].name;
                row[py::str("gain " + window)] = r.gain[w].mean;
                row[py::str("gain spread " + window)] = r.gain[w].spread;
                row[py::str("pair change " + window)] = r.pair_change[w].mean;
                row[py::str("angle " + window)] = r.angle[w].mean;
            }
            row["collapse_law"] = std::string(to_string(r.collapse_law));
            row["collapse_mean"] = r.collapse_mean;
            row["collapse_spread"] = r.collapse_spread;
            row["collapse_votes"] = r.collapse_votes;
            row["final_mean_cos_mean"] = r.final_mean_cos.mean;
            row["final_mean_cos_spread"] = r.final_mean_cos.spread;
            row["ours_early"] = r.ours_early;
            row["ours_angle"] = r.ours_angle;
            row["ours_collapse"] = r.ours_collapse;
            row["paper_early"] = r.paper_early;
            row["paper_collapse"] = r.paper_collapse;
            row["verdict"] = r.verdict;
            rows.append(row);
        }
        return rows;
    }
    throw input_error("unknown table '" + name +
                      "'; valid tables: initial, initial-beta, terminal, random");
}

} // namespace

void bind_tables(py::module_& m) {
    m.def("_table", &table, py::arg("name"),
          "The paper's table computed in C++ as rows (use nadyn.table): 'random'.");
}

} // namespace nadyn::python
