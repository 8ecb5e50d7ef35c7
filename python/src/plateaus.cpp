// nadyn._core: the metastable plateaus of a cluster-count series (src/model/plateaus.cpp,
// docs/model.md §5.3), the one implementation the files, nadyn inspect and nadyn.plateaus use.
#include "common.hpp"

#include "nadyn/model/plateaus.hpp"

#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace nadyn::python {

void bind_plateaus(py::module_& m) {
    m.def(
        "find_plateaus",
        [](const std::vector<double>& times, const std::vector<double>& counts, double min_length) {
            const std::vector<plateau> table = find_plateaus(times, counts, min_length);
            std::vector<double> start, end;
            std::vector<std::int64_t> clusters;
            std::vector<bool> censored;
            for (const plateau& p : table) {
                start.push_back(p.start);
                end.push_back(p.end);
                clusters.push_back(p.clusters);
                censored.push_back(p.censored);
            }
            py::dict out;
            const auto size = static_cast<py::ssize_t>(table.size());
            out["start"] = owning_array(std::move(start), {size});
            out["end"] = owning_array(std::move(end), {size});
            out["clusters"] = owning_array(std::move(clusters), {size});
            out["censored"] = py::array(py::cast(censored)).attr("astype")("bool");
            return out;
        },
        py::arg("times"), py::arg("counts"), py::arg("min_length"),
        "The plateaus of a (times, counts) series lasting at least min_length (the library's "
        "find_plateaus): a dict of arrays start, end, clusters, censored.");
    m.def(
        "plateau_min_time",
        [](const std::string& text, double horizon) {
            return plateau_threshold::parse(text).time(horizon);
        },
        py::arg("plateau_min"), py::arg("horizon"),
        "The threshold of --plateau-min ('2.5': a time; '5%': a percentage of the horizon T) "
        "as a time for a run of horizon T; ValueError for a malformed text.");
}

} // namespace nadyn::python
