#pragma once
// The list of the library's schemes, in --help order: one struct per file in this folder
// (what one holds: post_ln.hpp). The list generates scheme_table, parse_scheme(), --help, the
// compiled dispatch (scheme_operations.hpp) and nadyn._core.schemes(), which tests, studies
// and scripts iterate. Adding a scheme: its file, and one line here.
#include "nadyn/model/scheme_operations.hpp"
#include "nadyn/model/schemes/mix_ln.hpp"
#include "nadyn/model/schemes/ngpt.hpp"
#include "nadyn/model/schemes/no_norm.hpp"
#include "nadyn/model/schemes/peri_ln.hpp"
#include "nadyn/model/schemes/post_ln.hpp"
#include "nadyn/model/schemes/pre_ln.hpp"
#include "nadyn/model/schemes/sqrt_scaling.hpp"

#include <cstddef>
#include <type_traits>

namespace nadyn {

using all_schemes = scheme_list<schemes::post_ln,      //
                                schemes::pre_ln,       //
                                schemes::mix_ln,       //
                                schemes::peri_ln,      //
                                schemes::ngpt,         //
                                schemes::sqrt_scaling, //
                                schemes::no_norm>;

namespace detail {
template <class S, class List> struct scheme_index;
template <class S, class... Schemes> struct scheme_index<S, scheme_list<Schemes...>> {
    static constexpr std::size_t value = [] {
        constexpr bool same[] = {std::is_same_v<S, Schemes>...};
        for (std::size_t i = 0; i < sizeof...(Schemes); ++i)
            if (same[i]) return i;
        return sizeof...(Schemes);
    }();
    static_assert(value < sizeof...(Schemes), "the scheme is not in the list");
};
} // namespace detail

// The id of a library scheme: its position in all_schemes.
template <class S>
inline constexpr scheme scheme_id{static_cast<int>(detail::scheme_index<S, all_schemes>::value)};

// The named ids (scheme.hpp) are those of the list.
static_assert(scheme_id<schemes::post_ln> == scheme::post_ln);
static_assert(scheme_id<schemes::pre_ln> == scheme::pre_ln);
static_assert(scheme_id<schemes::mix_ln> == scheme::mix_ln);
static_assert(scheme_id<schemes::peri_ln> == scheme::peri_ln);
static_assert(scheme_id<schemes::ngpt> == scheme::ngpt);
static_assert(scheme_id<schemes::sqrt_scaling> == scheme::sqrt_scaling);
static_assert(scheme_id<schemes::no_norm> == scheme::no_norm);

} // namespace nadyn
