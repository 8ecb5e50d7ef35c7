#include "nadyn/model/reduced.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/scheme_operations.hpp"

#include <boost/numeric/odeint.hpp>

#include <array>
#include <cmath>
#include <string>

namespace nadyn {

reduced_attention reduced_attention_at(double n, double beta, double u) {
    const double gamma = 1.0 - u;
    const double e = std::exp(-beta * u); // e^{beta (gamma - 1)}
    const double others = n - 1.0;
    const double z = 1.0 + others * e; // Z / e^beta
    reduced_attention out;
    out.rate = 2.0 * e * u * (1.0 + others * gamma) / z;
    out.along = (1.0 + others * gamma * e) / z;
    const double norm2 =
        (1.0 + 2.0 * others * gamma * e + others * (1.0 + (n - 2.0) * gamma) * e * e) / (z * z);
    out.norm = std::sqrt(norm2);
    return out;
}

reduced_rates reduced_rhs(const reduced_parameters& p, double t, double u, double r,
                          double step_start) {
    // no-norm: the tokens r theta are attention's input, so A = r A_beta r^2 (header).
    const bool tokens = info(p.scheme).attention_reads_tokens;
    const double scale = tokens ? r : 1.0;
    const double logit_scale = tokens ? p.beta * r * r : p.beta;
    reduced_attention a = reduced_attention_at(p.n, logit_scale, u);
    if (p.attention == attention_kind::unnormalized) {
        // Z / n = (e^beta + (n - 1) e^{beta gamma}) / n: the softmax A times it (header).
        const double factor =
            (std::exp(logit_scale) + (p.n - 1.0) * std::exp(logit_scale * (1.0 - u))) / p.n;
        a.rate *= factor;
        a.along *= factor;
        a.norm *= factor;
    }
    const token_rates rate = rates(p.scheme, t, step_start, r, scale * a.along, scale * a.norm);
    return {-scale * a.rate * rate.inverse_speed, rate.radial_rate};
}

double initial_velocity_closed_form(const reduced_parameters& p) {
    const scheme_operations& scheme = operations(p.scheme);
    if (!scheme.initial_velocity)
        throw input_error("scheme '" + std::string(scheme.row->name) +
                          "' has no closed form of gamma'(0)");
    // e^{-beta} forms of 2 / (e^beta + n - 1) and 2 / sqrt(e^{2 beta} + n - 1): finite for
    // any beta.
    const double eb = std::exp(-p.beta);
    const double linear = 2.0 * eb / (1.0 + (p.n - 1.0) * eb);
    const double root = 2.0 * eb / std::sqrt(1.0 + (p.n - 1.0) * eb * eb);
    // Unnormalised: Z / n times the softmax rate 2 / Z (docs/model.md §8); ‖A‖ cancels it in
    // the rate over ‖A‖.
    const double rate = p.attention == attention_kind::unnormalized ? 2.0 / p.n : linear;
    return scheme.initial_velocity(p, {rate, root});
}

std::vector<reduced_sample> integrate_reduced(const reduced_parameters& p,
                                              const std::vector<double>& times, double rtol,
                                              double atol) {
    using namespace boost::numeric::odeint;
    using pair_state = std::array<double, 2>; // (u, r)
    double step_start = 0.0;
    auto system = [&p, &step_start](const pair_state& x, pair_state& dxdt, double t) {
        const reduced_rates rates = reduced_rhs(p, t, x[0], x[1], step_start);
        dxdt[0] = rates.du_dt;
        dxdt[1] = rates.dr_dt;
    };
    auto stepper = make_controlled(atol, rtol, runge_kutta_dopri5<pair_state>());
    pair_state x{1.0, p.r0}; // gamma(0) = 0: orthogonal directions
    double t = 0.0, dt = 1e-4;
    const std::optional<double> switch_time = breakpoint(p.scheme);
    std::vector<reduced_sample> samples;
    samples.reserve(times.size());
    auto record = [&](double at) {
        const reduced_rates rates = reduced_rhs(p, at, x[0], x[1], at);
        samples.push_back({at, x[0], x[1], -rates.du_dt});
    };
    for (double target : times) {
        if (!(target >= t)) throw input_error("reduced ODE sample times must be sorted and >= 0");
        while (t < target) {
            double stop = target;
            if (switch_time && *switch_time > t && *switch_time < stop) stop = *switch_time;
            const double start = t;
            step_start = t;
            const bool clamped = dt >= stop - t;
            double step = clamped ? stop - t : dt;
            const double suggested = dt;
            double attempted = step;
            int failures = 0;
            for (;;) {
                attempted = step;
                if (stepper.try_step(system, x, t, step) == success) break;
                if (++failures > 500 || step < 1e-300)
                    throw std::runtime_error("reduced ODE: step size underflow at t = " +
                                             std::to_string(t));
            }
            // A step that was cut short to land on a boundary lands exactly there; the next
            // one resumes with the larger of the new suggestion and the previous step.
            if (clamped && attempted == stop - start) {
                t = stop;
                dt = std::max(step, suggested);
            } else {
                dt = step;
            }
        }
        record(target);
    }
    return samples;
}

} // namespace nadyn
