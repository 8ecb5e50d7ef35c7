#pragma once
// pre-ln, x <- x + Attn(LN(x)) (docs/model.md §2): s_k = r_k, dr_k/dt = <theta_k, A_k>.
#include "nadyn/model/fit.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/scheme.hpp"

#include <cmath>

namespace nadyn::schemes {

struct pre_ln {
    static constexpr scheme_row row{.name = "pre-ln",
                                    .layer = "x <- x + Attn(LN(x))",
                                    .speed = "r_k",
                                    .radial_rate = "<theta_k, A_k>",
                                    .uses_magnitude = true,
                                    .in_paper_tables = true};

    static token_rates rates(const scheme_parameters&, double, double, double r, double along,
                             double) {
        return {1.0 / r, along};
    }
    // y = r theta + h A; r = ‖y‖
    static layer_step layer(const scheme_parameters&, double, double h, double r, double) {
        return {r, h, false};
    }
    static double initial_velocity(const reduced_parameters& p, const initial_attention& a) {
        return a.rate / p.r0;
    }
    // ln(1 + a t / r0) / a: r grows like r0 + a t
    static double clock(const scheme_parameters&, double t, double a, double r0) {
        return std::log1p(a * t / r0) / a;
    }
    static constexpr decay_law terminal_law = decay_law::polynomial; // C / t^3
};

} // namespace nadyn::schemes
