#include "nadyn/model/precision.hpp"

#include "nadyn/model/error.hpp"

namespace nadyn {

precision parse_precision(std::string_view name) {
    if (name == "double") return precision::double_precision;
    if (name == "float") return precision::single_precision;
    throw input_error("unknown precision '" + std::string(name) +
                      "'; valid choices: " + precision_names());
}

std::string_view to_string(precision p) {
    return p == precision::single_precision ? "float" : "double";
}

std::string precision_names() {
    return "double, float";
}

} // namespace nadyn
