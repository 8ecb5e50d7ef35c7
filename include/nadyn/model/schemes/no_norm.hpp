#pragma once
// no-norm, x <- x + Attn(x) (docs/model.md §9): attention reads the tokens r_k theta_k, and its
// speed and radial rate are pre-ln's (A_k itself differs: it is computed from r_j theta_j).
#include "nadyn/model/attention.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/schemes/pre_ln.hpp"

#include <cmath>
#include <string_view>

namespace nadyn::schemes {

struct no_norm {
    static constexpr scheme_row row{.name = "no-norm",
                                    .layer = "x <- x + Attn(x) (attention reads r_k theta_k)",
                                    .speed = "r_k",
                                    .radial_rate = "<theta_k, A_k>",
                                    .uses_magnitude = true,
                                    .attention_reads_tokens = true};

    static token_rates rates(const scheme_parameters& p, double t, double step_start, double r,
                             double along, double norm) {
        return pre_ln::rates(p, t, step_start, r, along, norm);
    }
    // y = r theta + h A, A = Attn(r theta)
    static layer_step layer(const scheme_parameters& p, double t, double h, double r,
                            double a_norm) {
        return pre_ln::layer(p, t, h, r, a_norm);
    }
    static double initial_velocity(const reduced_parameters& p, const initial_attention& a) {
        if (p.attention == attention_kind::unnormalized) return a.rate;
        // 2 / (e^{beta r0^2} + n - 1): the logits of the tokens r0 e_k are beta r0^2 <e_k, e_j>.
        const double e_tokens = std::exp(-p.beta * p.r0 * p.r0);
        return 2.0 * e_tokens / (1.0 + (p.n - 1.0) * e_tokens);
    }
    static constexpr std::string_view why_no_clock =
        "its attention reads r theta, so the effective beta changes with r";
    // The gap stops closing at a positive value (docs/model.md §9).
    static constexpr std::string_view why_no_terminal_law = "its gap freezes";
};

} // namespace nadyn::schemes
