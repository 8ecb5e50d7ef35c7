#include "nadyn/model/parameters.hpp"

#include <cstdio>

namespace nadyn {

void parameter_list::set(const std::string& name, parameter_value value) {
    for (auto& entry : m_entries) {
        if (entry.first == name) {
            entry.second = std::move(value);
            return;
        }
    }
    m_entries.emplace_back(name, std::move(value));
}

const parameter_value* parameter_list::find(const std::string& name) const {
    for (const auto& entry : m_entries)
        if (entry.first == name) return &entry.second;
    return nullptr;
}

std::optional<double> parameter_list::number(const std::string& name) const {
    const parameter_value* value = find(name);
    if (!value) return std::nullopt;
    if (const auto* d = std::get_if<double>(value)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(value)) return static_cast<double>(*i);
    return std::nullopt;
}

std::optional<std::int64_t> parameter_list::integer(const std::string& name) const {
    const parameter_value* value = find(name);
    if (!value) return std::nullopt;
    if (const auto* i = std::get_if<std::int64_t>(value)) return *i;
    return std::nullopt;
}

std::optional<std::string> parameter_list::text(const std::string& name) const {
    const parameter_value* value = find(name);
    if (!value) return std::nullopt;
    if (const auto* s = std::get_if<std::string>(value)) return *s;
    return std::nullopt;
}

std::string to_display_string(const parameter_value& value) {
    if (const auto* s = std::get_if<std::string>(&value)) return *s;
    if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", std::get<double>(value));
    return buffer;
}

} // namespace nadyn
