#include "nadyn/model/scheme.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/scheme_operations.hpp"
#include "nadyn/model/schemes/list.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>
#include <utility>

namespace nadyn {

namespace {

// scheme_table and the operations of each scheme, generated from all_schemes.
template <class... Schemes, std::size_t... I>
constexpr auto make_rows(scheme_list<Schemes...>, std::index_sequence<I...>) {
    return std::array<scheme_info, sizeof...(Schemes)>{
        detail::info_of<Schemes>(static_cast<scheme>(I))...};
}
constexpr auto rows = make_rows(all_schemes{}, std::make_index_sequence<all_schemes::size>{});

template <class... Schemes, std::size_t... I>
constexpr auto make_operations(scheme_list<Schemes...>, std::index_sequence<I...>) {
    return std::array<scheme_operations, sizeof...(Schemes)>{operations_of<Schemes>(&rows[I])...};
}
constexpr auto library_operations =
    make_operations(all_schemes{}, std::make_index_sequence<all_schemes::size>{});

} // namespace

constinit const std::span<const scheme_info> scheme_table{rows};

const scheme_info& info(scheme s) {
    const auto i = static_cast<std::size_t>(s);
    if (i >= rows.size()) throw std::logic_error("scheme missing from scheme_table");
    return rows[i];
}

const scheme_operations& operations(const scheme_parameters& p) {
    if (p.custom) return *p.custom;
    const auto i = static_cast<std::size_t>(p.id);
    if (i >= library_operations.size()) throw std::logic_error("scheme missing from scheme_table");
    return library_operations[i];
}

const scheme_info& info(const scheme_parameters& p) {
    return *operations(p).row;
}

std::string scheme_names() {
    std::string names;
    for (const auto& row : rows) {
        if (!names.empty()) names += ", ";
        names += row.name;
    }
    return names;
}

scheme parse_scheme(std::string_view name) {
    for (const auto& row : rows)
        if (row.name == name) return row.id;
    throw input_error("unknown scheme '" + std::string(name) +
                      "'; valid schemes: " + scheme_names());
}

std::string_view to_string(ngpt_layer layer) {
    return layer == ngpt_layer::add ? "add" : "interpolate";
}

ngpt_layer parse_ngpt_layer(std::string_view name) {
    if (name == "interpolate") return ngpt_layer::interpolate;
    if (name == "add") return ngpt_layer::add;
    throw input_error("unknown ngpt layer '" + std::string(name) +
                      "'; valid: interpolate (nGPT's theta + h alpha (A/|A| - theta)), add "
                      "(theta + h alpha A/|A|)");
}

token_rates rates(const scheme_parameters& p, double t, double step_start, double r, double along,
                  double norm) {
    return operations(p).rates(p, t, step_start, r, along, norm);
}

std::optional<double> breakpoint(const scheme_parameters& p) {
    return operations(p).breakpoint(p);
}

} // namespace nadyn
