#pragma once
// The S^2 geometry (spherical harmonics by libsharp) behind a factory, so that the solver does
// not include libsharp's headers.
#include "nadyn/meanfield/geometry.hpp"

#include <memory>

namespace nadyn::meanfield {

// Gauss-Legendre rings for spherical harmonics up to degree `degree`, identity weights.
std::unique_ptr<density_geometry> make_sphere_geometry(std::size_t degree,
                                                       const field_parameters& field);

} // namespace nadyn::meanfield
