#include "nadyn/model/scheme.hpp"

#include "nadyn/model/error.hpp"

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
