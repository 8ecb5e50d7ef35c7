#pragma once
// post-ln, x <- LN(x + Attn(x)) (docs/model.md §2): s_k = 1, r_k constant. The self-attention
// model of Geshkovski, Letrouit, Polyanskiy and Rigollet.
//
// What a scheme struct holds (schemes/list.hpp lists them; scheme_operations.hpp compiles them):
//   row               scheme_row: name, layer, speed and radial rate as formulas, flags
//   rates()           1/s_k and dr_k/dt of one token (scheme.hpp)
//   layer()           one token's discrete layer, y = base theta + weight A (layer_step)
// and, optionally:
//   breakpoint()      a time where the right-hand side jumps (adaptive steps end there)
//   initial_velocity() gamma'(0) from the symmetric start (reduced.hpp)
//   clock()           tau(t) at the uniform state (growth_rates.hpp); why_no_clock otherwise
//   terminal_law      the decay law of gamma'(t) (fit.hpp); why_no_terminal_law otherwise
//   configuration_warning() a configuration that runs but is not what it seems
#include "nadyn/model/fit.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/scheme.hpp"

namespace nadyn::schemes {

struct post_ln {
    static constexpr scheme_row row{.name = "post-ln",
                                    .layer = "x <- LN(x + Attn(x))",
                                    .speed = "1",
                                    .radial_rate = "0",
                                    .in_paper_tables = true};

    static token_rates rates(const scheme_parameters&, double, double, double, double, double) {
        return {1.0, 0.0};
    }
    // y = theta + h A
    static layer_step layer(const scheme_parameters&, double, double h, double, double) {
        return {1.0, h, true};
    }
    // 2 / (e^beta + n - 1) (docs/model.md §3.4), 2 / n unnormalised (§8)
    static double initial_velocity(const reduced_parameters&, const initial_attention& a) {
        return a.rate;
    }
    static double clock(const scheme_parameters&, double t, double, double) { return t; }
    static constexpr decay_law terminal_law = decay_law::exponential; // C e^{-2t}
};

} // namespace nadyn::schemes
