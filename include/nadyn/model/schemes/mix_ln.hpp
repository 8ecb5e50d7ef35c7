#pragma once
// mix-ln (docs/model.md §2): post-ln for t < t_switch, then pre-ln.
#include "nadyn/model/schemes/post_ln.hpp"
#include "nadyn/model/schemes/pre_ln.hpp"

#include <cmath>
#include <optional>
#include <sstream>
#include <string>

namespace nadyn::schemes {

struct mix_ln {
    static constexpr scheme_row row{.name = "mix-ln",
                                    .layer = "post-ln for t < t_switch, then pre-ln",
                                    .speed = "1, then r_k",
                                    .radial_rate = "0, then <theta_k, A_k>",
                                    .uses_magnitude = true,
                                    .in_paper_tables = true};

    // The phase of the step's start (rates() in scheme.hpp).
    static token_rates rates(const scheme_parameters& p, double t, double step_start, double r,
                             double along, double norm) {
        if (step_start < p.t_switch) return post_ln::rates(p, t, step_start, r, along, norm);
        return pre_ln::rates(p, t, step_start, r, along, norm);
    }
    static layer_step layer(const scheme_parameters& p, double t, double h, double r,
                            double a_norm) {
        if (t < p.t_switch) return post_ln::layer(p, t, h, r, a_norm);
        return pre_ln::layer(p, t, h, r, a_norm);
    }
    static std::optional<double> breakpoint(const scheme_parameters& p) { return p.t_switch; }
    static double initial_velocity(const reduced_parameters& p, const initial_attention& a) {
        return p.scheme.t_switch > 0.0 ? a.rate : a.rate / p.r0;
    }
    // post-ln's up to t_switch, then pre-ln's from r0
    static double clock(const scheme_parameters& p, double t, double a, double r0) {
        if (t <= p.t_switch) return t;
        return p.t_switch + std::log1p(a * (t - p.t_switch) / r0) / a;
    }
    static constexpr decay_law terminal_law = decay_law::polynomial;
    static std::optional<std::string> configuration_warning(const scheme_parameters& p, double T) {
        if (!(p.t_switch >= T && T > 0.0)) return std::nullopt;
        std::ostringstream message;
        message << "warning: mix-ln switches at t_switch = " << p.t_switch << " >= T = " << T
                << ": the switch never happens and the run is pure post-ln";
        return message.str();
    }
};

} // namespace nadyn::schemes
