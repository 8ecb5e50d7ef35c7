#include "nadyn/model/diagnostics.hpp"

#include "nadyn/model/integrate.hpp"
#include "nadyn/model/scheme.hpp"

#include <cmath>
#include <sstream>

namespace nadyn {

std::vector<std::string> configuration_warnings(scheme id, double T, double dt, double t_switch,
                                                integrator_kind integrator, double beta) {
    std::vector<std::string> warnings;
    if (beta < 0.0) warnings.emplace_back(negative_beta_warning);
    if (id == scheme::mix_ln && t_switch >= T && T > 0.0) {
        std::ostringstream message;
        message << "warning: mix-ln switches at t_switch = " << t_switch << " >= T = " << T
                << ": the switch never happens and the run is pure post-ln";
        warnings.push_back(message.str());
    }
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
