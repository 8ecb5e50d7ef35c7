#include "nadyn/meanfield/sphere_factory.hpp"

#include "nadyn/error.hpp"

namespace nadyn::meanfield {

std::unique_ptr<density_geometry> make_sphere_geometry(std::size_t, const field_parameters&) {
    throw input_error("--geometry sphere is not built yet; take --geometry zonal for zonal "
                      "densities on S^2");
}

} // namespace nadyn::meanfield
