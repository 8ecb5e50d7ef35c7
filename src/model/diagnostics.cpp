#include "nadyn/model/diagnostics.hpp"

#include "nadyn/model/integrate.hpp"
#include "nadyn/model/scheme.hpp"
#include "nadyn/model/scheme_operations.hpp"

#include <cmath>
#include <optional>
#include <sstream>

namespace nadyn {

std::vector<std::string> configuration_warnings(scheme id, double T, double dt, double t_switch,
                                                integrator_kind integrator, double beta) {
    std::vector<std::string> warnings;
    if (beta < 0.0) warnings.emplace_back(negative_beta_warning);
    scheme_parameters parameters{id};
    parameters.t_switch = t_switch;
    if (const auto warn = operations(parameters).configuration_warning)
        if (std::optional<std::string> warning = warn(parameters, T)) warnings.push_back(*warning);
    if (integrator != integrator_kind::dopri5 && dt > 0.0 && T / dt > max_reasonable_steps) {
        std::ostringstream message;
        message.precision(3);
        message << "warning: T / dt = " << T / dt << " steps (more than " << max_reasonable_steps
                << "); check --T and --dt";
        warnings.push_back(message.str());
    }
    return warnings;
}

double suggested_step(double dt, double error, double bound, int order) {
    if (!(error > 0.0)) return dt;
    return dt * std::pow(bound / error, 1.0 / (order + 1));
}

} // namespace nadyn
