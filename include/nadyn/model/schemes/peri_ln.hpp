#pragma once
// peri-ln, x <- x + LN(Attn(LN(x))) (docs/model.md §2): s_k = r_k ‖A_k‖,
// dr_k/dt = <theta_k, A_k> / ‖A_k‖.
#include "nadyn/model/fit.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/scheme.hpp"

#include <cmath>

namespace nadyn::schemes {

struct peri_ln {
    static constexpr scheme_row row{.name = "peri-ln",
                                    .layer = "x <- x + LN(Attn(LN(x)))",
                                    .speed = "r_k ‖A_k‖",
                                    .radial_rate = "<theta_k, A_k> / ‖A_k‖",
                                    .uses_magnitude = true,
                                    .uses_attention_norm = true,
                                    .in_paper_tables = true};

    static token_rates rates(const scheme_parameters&, double, double, double r, double along,
                             double norm) {
        return {1.0 / (r * norm), along / norm};
    }
    // y = r theta + h A / ‖A‖; r = ‖y‖
    static layer_step layer(const scheme_parameters&, double, double h, double r, double a_norm) {
        return {r, h / a_norm, false};
    }
    // 2 / (r0 sqrt(e^{2 beta} + n - 1)); ‖A‖ cancels the unnormalised factor Z / n
    static double initial_velocity(const reduced_parameters& p, const initial_attention& a) {
        return a.rate_over_norm / p.r0;
    }
    // ln(1 + t / r0) / a: r grows like r0 + t, s = r a
    static double clock(const scheme_parameters&, double t, double a, double r0) {
        return std::log1p(t / r0) / a;
    }
    static constexpr decay_law terminal_law = decay_law::polynomial;
};

} // namespace nadyn::schemes
