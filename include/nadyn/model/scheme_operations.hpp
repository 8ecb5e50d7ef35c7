#pragma once
// The compiled operations of a scheme: what the right-hand side, the integrators and the
// closed forms call, generated from a scheme struct (schemes/post_ln.hpp lists the members
// one has) by operations_of<S>. Each pointer is a function compiled for that scheme alone,
// so the per-token loops (chunk_rates, apply_layer) inline the scheme's rates and layer and
// vectorise: the dispatch is one indirect call per chunk of tokens (or per layer), never a
// test per token.
//
// The library's schemes are listed in schemes/list.hpp, which generates scheme_table and
// their operations. A scheme outside that list (a test's, or a user's) runs through the same
// right-hand side and integrators by its operations alone: custom_scheme<S>() gives the
// scheme_parameters that carry them (it has no id, and parse_scheme() and the file record
// know only the list's names).
#include "nadyn/model/detail/parallel.hpp"
#include "nadyn/model/fit.hpp"
#include "nadyn/model/norm.hpp"
#include "nadyn/model/reduced.hpp"
#include "nadyn/model/scheme.hpp"

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace nadyn {

struct scheme_operations {
    const scheme_info* row;
    token_rates (*rates)(const scheme_parameters& p, double t, double step_start, double r,
                         double along, double norm);
    // rates() for `count` tokens: inverse_speed[k], radial[k] from r[k], along[k], norm[k].
    void (*chunk_rates)(const scheme_parameters& p, double t, double step_start, const double* r,
                        const double* along, const double* norm, double* inverse_speed,
                        double* radial, std::size_t count);
    // integrate.hpp's apply_layer() with this scheme's layer_step.
    void (*apply_layer)(const scheme_parameters& p, double t, double h, const double* attention,
                        double* theta, double* r, std::size_t n, std::size_t d, int threads,
                        norm_kind norm);
    std::optional<double> (*breakpoint)(const scheme_parameters& p);
    // The optional parts: nullptr (or nullopt) when the scheme has none.
    double (*initial_velocity)(const reduced_parameters& p, const initial_attention& a);
    double (*clock)(const scheme_parameters& p, double t, double a, double r0);
    std::optional<decay_law> terminal_law;
    // Why the scheme has no clock or no terminal law (for the messages that refuse them).
    std::string_view why_no_clock;
    std::string_view why_no_terminal_law;
    // A warning about a configuration of the scheme that runs but is not what it seems
    // (mix-ln switching at or after T); nullptr: none.
    std::optional<std::string> (*configuration_warning)(const scheme_parameters& p, double T);
};

// The operations of the scheme the parameters name: the library's scheme `p.id`, or p.custom.
const scheme_operations& operations(const scheme_parameters& p);

// A list of scheme structs (schemes/list.hpp holds the library's).
template <class... Schemes> struct scheme_list {
    static constexpr std::size_t size = sizeof...(Schemes);
};

namespace detail {

template <class S>
void chunk_rates_of(const scheme_parameters& p, double t, double step_start, const double* r,
                    const double* along, const double* norm, double* inverse_speed, double* radial,
                    std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
        const token_rates rate = S::rates(p, t, step_start, r[k], along[k], norm[k]);
        inverse_speed[k] = rate.inverse_speed;
        radial[k] = rate.radial_rate;
    }
}

// One token's layer_step, out of line and out of sight of interprocedural analysis: its
// base and weight stay values the loop reads, not constants it folds. With base = 1 folded
// (post-ln, sqrt-scaling) GCC contracts theta + weight A into another FMA than
// base theta + weight A, and the layers' bits would change with the way a scheme spells
// its step (and from those of the files written before the schemes had a file each).
template <class S>
#if defined(__GNUC__) && !defined(__clang__)
[[gnu::noipa]]
#else
[[gnu::noinline]]
#endif
layer_step
layer_of(const scheme_parameters& p, double t, double h, double r, double a_norm) {
    return S::layer(p, t, h, r, a_norm);
}

template <class S>
void apply_layer_of(const scheme_parameters& p, double t, double h, const double* attention,
                    double* theta, double* r, std::size_t n, std::size_t d, int threads,
                    norm_kind norm) {
    threads = token_threads(n, d, resolve_threads(threads));
    const bool centre = norm == norm_kind::layernorm;
    const double inverse_d = 1.0 / static_cast<double>(d);
    for_each_static(n, threads, [&](std::size_t k) {
        const double* a = attention + k * d;
        double* th = theta + k * d;
        // Under layernorm the layer sees Pi A (LN cannot see the component along 1): A's
        // mean is subtracted wherever A enters (a - 0.0 is a exactly, so rms is unchanged).
        double a_mean = 0.0;
        if (centre) {
            for (std::size_t c = 0; c < d; ++c)
                a_mean += a[c];
            a_mean *= inverse_d;
        }
        double a_norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c)
            a_norm2 += (a[c] - a_mean) * (a[c] - a_mean);
        const double a_norm = std::sqrt(a_norm2);
        const layer_step step = layer_of<S>(p, t, h, r[k], a_norm);
        const double base = step.base, weight = step.weight;
        double y_norm2 = 0.0;
        if (centre) {
            // LayerNorm literally: y, then Pi y = y - mean(y) 1, then Pi y / ‖Pi y‖
            // (docs/model.md §10); theta and Pi A lie in U, so Pi only removes round-off.
            double sum = 0.0;
            for (std::size_t c = 0; c < d; ++c) {
                th[c] = base * th[c] + weight * (a[c] - a_mean);
                sum += th[c];
            }
            const double mean = sum * inverse_d;
            for (std::size_t c = 0; c < d; ++c) {
                th[c] -= mean;
                y_norm2 += th[c] * th[c];
            }
        } else {
            for (std::size_t c = 0; c < d; ++c) {
                th[c] = base * th[c] + weight * a[c];
                y_norm2 += th[c] * th[c];
            }
        }
        const double y_norm = std::sqrt(y_norm2);
        for (std::size_t c = 0; c < d; ++c)
            th[c] /= y_norm;
        if (!step.keeps_magnitude) r[k] = y_norm;
    });
}

template <class S> std::optional<double> breakpoint_of(const scheme_parameters& p) {
    if constexpr (requires { S::breakpoint(p); })
        return S::breakpoint(p);
    else
        return std::nullopt;
}

template <class S> constexpr scheme_info info_of(scheme id) {
    scheme_info row{S::row};
    row.id = id;
    row.has_breakpoint = requires(const scheme_parameters& p) {
        S::breakpoint(p);
    };
    row.has_initial_velocity = requires(const reduced_parameters& p, const initial_attention& a) {
        S::initial_velocity(p, a);
    };
    row.has_clock = requires(const scheme_parameters& p) {
        S::clock(p, 0.0, 0.0, 0.0);
    };
    row.has_terminal_law = requires {
        S::terminal_law;
    };
    return row;
}

} // namespace detail

// The operations of scheme struct S, whose row is `row`.
template <class S> constexpr scheme_operations operations_of(const scheme_info* row) {
    scheme_operations ops{};
    ops.row = row;
    ops.rates = &S::rates;
    ops.chunk_rates = &detail::chunk_rates_of<S>;
    ops.apply_layer = &detail::apply_layer_of<S>;
    ops.breakpoint = &detail::breakpoint_of<S>;
    if constexpr (requires(const reduced_parameters& p, const initial_attention& a) {
                      S::initial_velocity(p, a);
                  })
        ops.initial_velocity = &S::initial_velocity;
    if constexpr (requires(const scheme_parameters& p) { S::clock(p, 0.0, 0.0, 0.0); })
        ops.clock = &S::clock;
    if constexpr (requires { S::terminal_law; }) ops.terminal_law = S::terminal_law;
    if constexpr (requires { S::why_no_clock; }) ops.why_no_clock = S::why_no_clock;
    if constexpr (requires { S::why_no_terminal_law; })
        ops.why_no_terminal_law = S::why_no_terminal_law;
    if constexpr (requires(const scheme_parameters& p) { S::configuration_warning(p, 0.0); })
        ops.configuration_warning = &S::configuration_warning;
    return ops;
}

// A scheme struct outside the library's list, as it runs: its row (with the id of the first
// library scheme, which it does not use) and its operations.
template <class S> inline constexpr scheme_info custom_scheme_row = detail::info_of<S>(scheme{});
template <class S>
inline constexpr scheme_operations
    custom_scheme_operations = operations_of<S>(&custom_scheme_row<S>);

// The parameters of a run of scheme struct S (alpha, t_switch and ngpt_step as for the
// library's schemes): model_parameters::scheme, reduced_parameters::scheme.
template <class S> scheme_parameters custom_scheme() {
    scheme_parameters p;
    p.custom = &custom_scheme_operations<S>;
    return p;
}

} // namespace nadyn
