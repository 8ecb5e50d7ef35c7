#include "nadyn/meanfield/sphere_factory.hpp"

#include "nadyn/meanfield/sphere.hpp"

namespace nadyn::meanfield {

std::unique_ptr<density_geometry> make_sphere_geometry(std::size_t degree,
                                                       const field_parameters& field) {
    return std::make_unique<sphere_geometry>(degree, field);
}

} // namespace nadyn::meanfield
