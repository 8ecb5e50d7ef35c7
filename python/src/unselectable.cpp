// nadyn._core.unselectable: Brody et al.'s unselectable keys (docs/model.md §12, src/
// unselectable.cpp), the one implementation that runs' `--observe unselectable` and the study
// studies/unselectable use.
#include "common.hpp"

#include "nadyn/experiment/unselectable.hpp"
#include "nadyn/model/error.hpp"

#include <cstdint>
#include <vector>

namespace nadyn::python {

void bind_unselectable(py::module_& m) {
    auto keys = m.def_submodule(
        "unselectable", "Unselectable keys (docs/model.md §12): keys in the convex hull of the "
                        "others, which no query gives the highest score");
    keys.def(
        "fraction",
        [](const py::array_t<double, py::array::c_style | py::array::forcecast>& keys) {
            if (keys.ndim() != 2 || keys.shape(0) < 1 || keys.shape(1) < 1)
                throw input_error("keys must be an n x d array with n, d >= 1");
            const auto n = static_cast<std::size_t>(keys.shape(0));
            const auto d = static_cast<std::size_t>(keys.shape(1));
            const std::vector<double> values(keys.data(), keys.data() + n * d);
            const py::gil_scoped_release release; // n linear programs
            return unselectable_fraction(values.data(), n, d);
        },
        py::arg("keys"),
        "The fraction of the n keys (rows of an n x d array) that are unselectable, decided "
        "by one linear program each and a rigorous bound on the rounding of the scores.");
    keys.def(
        "gaussian_keys",
        [](std::uint64_t seed, std::size_t n, std::size_t d) {
            if (n < 1 || d < 1) throw input_error("gaussian_keys needs n, d >= 1");
            return owning_array(gaussian_keys(seed, n, d),
                                {static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(d)});
        },
        py::arg("seed"), py::arg("n"), py::arg("d"),
        "n x d standard normal keys of (seed, n, d), from their own random stream (the keys of "
        "the unselectable study).");
}

} // namespace nadyn::python
