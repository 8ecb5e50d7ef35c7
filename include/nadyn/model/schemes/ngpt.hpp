#pragma once
// ngpt, x <- LN(x + alpha (LN(Attn(LN(x))) - x)) (docs/model.md §2): s_k = ‖A_k‖ / alpha,
// r_k constant. Its discrete layer is nGPT's (interpolate) or its peers' (add): ngpt_layer
// in scheme.hpp.
#include "nadyn/model/fit.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/scheme.hpp"

namespace nadyn::schemes {

struct ngpt {
    static constexpr scheme_row row{.name = "ngpt",
                                    .layer = "x <- LN(x + alpha (LN(Attn(LN(x))) - x))",
                                    .speed = "‖A_k‖ / alpha",
                                    .radial_rate = "0",
                                    .uses_attention_norm = true,
                                    .in_paper_tables = true};

    static token_rates rates(const scheme_parameters& p, double, double, double, double,
                             double norm) {
        return {p.alpha / norm, 0.0};
    }
    // interpolate: y = theta + h alpha (A / ‖A‖ - theta); add: y = theta + h alpha A / ‖A‖
    static layer_step layer(const scheme_parameters& p, double, double h, double, double a_norm) {
        return {p.ngpt_step == ngpt_layer::interpolate ? 1.0 - h * p.alpha : 1.0,
                h * p.alpha / a_norm, true};
    }
    // 2 alpha / sqrt(e^{2 beta} + n - 1); ‖A‖ cancels the unnormalised factor Z / n
    static double initial_velocity(const reduced_parameters& p, const initial_attention& a) {
        return p.scheme.alpha * a.rate_over_norm;
    }
    static double clock(const scheme_parameters& p, double t, double a, double) {
        return p.alpha * t / a;
    }
    static constexpr decay_law terminal_law = decay_law::exponential; // alpha = 1
};

} // namespace nadyn::schemes
