#include "nadyn/scheme.hpp"

#include "nadyn/error.hpp"

namespace nadyn {

const scheme_info& info(scheme s) {
    for (const auto& row : scheme_table)
        if (row.id == s) return row;
    throw std::logic_error("scheme missing from scheme_table");
}

std::string scheme_names() {
    std::string names;
    for (const auto& row : scheme_table) {
        if (!names.empty()) names += ", ";
        names += row.name;
    }
    return names;
}

scheme parse_scheme(std::string_view name) {
    for (const auto& row : scheme_table)
        if (row.name == name) return row.id;
    throw input_error("unknown scheme '" + std::string(name) +
                      "'; valid schemes: " + scheme_names());
}

std::optional<double> breakpoint(const scheme_parameters& p) {
    switch (p.id) {
    case scheme::mix_ln:
        return p.t_switch;
    case scheme::post_ln:
    case scheme::pre_ln:
    case scheme::peri_ln:
    case scheme::ngpt:
    case scheme::sqrt_scaling:
    case scheme::no_norm:
        return std::nullopt;
    }
    return std::nullopt;
}

} // namespace nadyn
