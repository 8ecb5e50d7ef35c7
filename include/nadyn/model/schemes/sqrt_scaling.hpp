#pragma once
// sqrt-scaling (docs/model.md §2): post-ln with the update scaled by 1/sqrt(t+1), s = sqrt(t+1).
#include "nadyn/model/fit.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/scheme.hpp"

#include <cmath>

namespace nadyn::schemes {

struct sqrt_scaling {
    static constexpr scheme_row row{.name = "sqrt-scaling",
                                    .layer = "post-ln with the update scaled by 1/sqrt(t+1)",
                                    .speed = "sqrt(t + 1)",
                                    .radial_rate = "0",
                                    .in_paper_tables = true};

    static token_rates rates(const scheme_parameters&, double t, double, double, double, double) {
        return {1.0 / std::sqrt(t + 1.0), 0.0};
    }
    // y = theta + h A / sqrt(t + 1)
    static layer_step layer(const scheme_parameters&, double t, double h, double, double) {
        return {1.0, h / std::sqrt(t + 1.0), true};
    }
    static double initial_velocity(const reduced_parameters&, const initial_attention& a) {
        return a.rate;
    }
    static double clock(const scheme_parameters&, double t, double, double) {
        return 2.0 * (std::sqrt(t + 1.0) - 1.0);
    }
    static constexpr decay_law terminal_law = decay_law::stretched; // C e^{-4 sqrt t} / sqrt t
};

} // namespace nadyn::schemes
