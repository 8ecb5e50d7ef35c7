#pragma once
// An ordered list of named values: how a run records its inputs (HDF5 attributes of
// /parameters) and how a file's inputs are read back.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace nadyn {

using parameter_value = std::variant<std::int64_t, double, std::string>;

class parameter_list {
  public:
    void set(const std::string& name, parameter_value value);
    [[nodiscard]] const parameter_value* find(const std::string& name) const;
    [[nodiscard]] std::optional<double> number(const std::string& name) const;
    [[nodiscard]] std::optional<std::int64_t> integer(const std::string& name) const;
    [[nodiscard]] std::optional<std::string> text(const std::string& name) const;
    [[nodiscard]] const std::vector<std::pair<std::string, parameter_value>>& entries() const {
        return m_entries;
    }

  private:
    std::vector<std::pair<std::string, parameter_value>> m_entries;
};

// A value as a user reads it: integers plainly, doubles with 17 significant digits.
std::string to_display_string(const parameter_value& value);

} // namespace nadyn
