#pragma once
// The one switch on the dimension d: code compiled with d as a constant for the dimensions a
// caller specialises, and with the run-time d (D = 0) otherwise. Every place that
// specialises code on d goes through dispatch_dimension(), each with its set of dimensions
// named here, so that the sets are written once:
//
// - small_dimensions (2, 3, 4, 8): the symmetric path's register tiles
// (src/model/kernel/small_d.cpp)
//   and the right-hand side's per-token loops and the projection onto the sphere
//   (src/model/system.cpp): the components' loops unroll and the sums stay in registers.
// - lane_dimensions (8, 16, 32, 64): the small-n loops (src/model/kernel/small_n.cpp), whose rows
//   are whole vectors of eight doubles.
#include <cstddef>
#include <type_traits>

namespace nadyn::kernel {

template <std::size_t D> using dimension_constant = std::integral_constant<std::size_t, D>;

// A set of dimensions compiled as constants.
template <std::size_t... Ds> struct dimension_set {};
using small_dimensions = dimension_set<2, 3, 4, 8>;
using lane_dimensions = dimension_set<8, 16, 32, 64>;

namespace dimension_detail {

template <class Function> decltype(auto) dispatch(std::size_t, Function& f, dimension_set<>) {
    return f(dimension_constant<0>{});
}

template <class Function, std::size_t First, std::size_t... Rest>
decltype(auto) dispatch(std::size_t d, Function& f, dimension_set<First, Rest...>) {
    if (d == First) return f(dimension_constant<First>{});
    return dispatch(d, f, dimension_set<Rest...>{});
}

} // namespace dimension_detail

// f(dimension_constant<D>{}) for D = d when d is in Set, else for D = 0; every call of f
// must return the same type.
template <class Set, class Function>
decltype(auto) dispatch_dimension(std::size_t d, Function&& f) {
    return dimension_detail::dispatch(d, f, Set{});
}

} // namespace nadyn::kernel
