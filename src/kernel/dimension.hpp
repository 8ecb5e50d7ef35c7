#pragma once
// The one switch on the dimension d: loops over the components compiled with d as a
// constant for the common small dimensions, and with the run-time d (D = 0) otherwise. Every
// place that specialises code on d (the small-d tiles, src/kernel/small_d.cpp) goes through
// it, so that the set of specialised dimensions is written once.
#include <cstddef>
#include <type_traits>

namespace nadyn::kernel {

template <std::size_t D> using dimension_constant = std::integral_constant<std::size_t, D>;

// f(dimension_constant<D>{}) for D = d when d is one of 2, 3, 4, 8, else for D = 0; every
// call of f must return the same type.
template <class Function> decltype(auto) dispatch_dimension(std::size_t d, Function&& f) {
    switch (d) {
    case 2:
        return f(dimension_constant<2>{});
    case 3:
        return f(dimension_constant<3>{});
    case 4:
        return f(dimension_constant<4>{});
    case 8:
        return f(dimension_constant<8>{});
    default:
        return f(dimension_constant<0>{});
    }
}

} // namespace nadyn::kernel
