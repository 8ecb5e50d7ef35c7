#include "nadyn/integrate.hpp"

#include "nadyn/detail/parallel.hpp"
#include "nadyn/error.hpp"

#include <boost/numeric/odeint.hpp>

#include <cmath>
#include <limits>
#include <sstream>

namespace nadyn {

namespace odeint = boost::numeric::odeint;

integrator_kind parse_integrator(std::string_view name) {
    if (name == "rk4") return integrator_kind::rk4;
    if (name == "dopri5") return integrator_kind::dopri5;
    if (name == "euler") return integrator_kind::euler;
    if (name == "layers") return integrator_kind::layers;
    throw input_error("unknown integrator '" + std::string(name) +
                      "'; valid integrators: " + std::string(integrator_names));
}

std::string_view to_string(integrator_kind kind) {
    switch (kind) {
    case integrator_kind::rk4:
        return "rk4";
    case integrator_kind::dopri5:
        return "dopri5";
    case integrator_kind::euler:
        return "euler";
    case integrator_kind::layers:
        return "layers";
    }
    return "rk4";
}

std::int64_t step_count(double T, double dt) {
    if (T <= 0.0) return 0;
    const double ratio = T / dt;
    const double nearest = std::round(ratio);
    if (std::abs(ratio - nearest) <= 1e-9 * std::max(1.0, nearest))
        return static_cast<std::int64_t>(nearest);
    return static_cast<std::int64_t>(std::ceil(ratio));
}

namespace {

// The first token whose direction or magnitude is not finite, or -1.
std::int64_t first_bad_token(const state_type& x, std::size_t n, std::size_t d) {
    const double* r = magnitudes(x, n, d);
    for (std::size_t k = 0; k < n; ++k) {
        if (!std::isfinite(r[k])) return static_cast<std::int64_t>(k);
        for (std::size_t c = 0; c < d; ++c)
            if (!std::isfinite(x[k * d + c])) return static_cast<std::int64_t>(k);
    }
    return -1;
}

// Whether every value is finite: a branch-free pass that vectorises (an OR of compares),
// run after every step; the token is looked up only when it fails.
bool all_finite(const state_type& x) {
    constexpr double largest = std::numeric_limits<double>::max();
    bool bad = false;
    for (const double v : x)
        bad |= !(std::abs(v) <= largest); // false for NaN and +-Inf
    return !bad;
}

void check_finite(const state_type& x, std::size_t n, std::size_t d, double t) {
    if (all_finite(x)) return;
    const std::int64_t bad = first_bad_token(x, n, d);
    if (bad >= 0) {
        std::ostringstream message;
        message.precision(17);
        message << "the state became non-finite (NaN or Inf) at t = " << t << " in token " << bad
                << "; reduce --dt (or the tolerances)";
        throw numerical_fault(message.str());
    }
}

// The last good state as a frame, then the fault: a run that blows up keeps its history.
[[noreturn]] void fail_with_frame(const numerical_fault& fault, state_type& x,
                                  const state_type& good, const state_type& dxdt, double t,
                                  std::int64_t step, bool written, const frame_observer& observer) {
    x = good;
    if (!written) observer(x, dxdt, t, step);
    throw fault;
}

template <class Stepper>
integration_outcome integrate_fixed(Stepper stepper, attention_system& system, state_type& x,
                                    const integration_settings& settings,
                                    const frame_observer& observer, solver_statistics& statistics,
                                    const std::atomic<bool>* stop, const resume_point* resume) {
    const std::size_t n = system.model().n, d = system.model().d;
    const std::int64_t steps = step_count(settings.T, settings.dt);
    state_type dxdt(x.size()), good(x.size());
    statistics.next_step = settings.dt;
    const std::int64_t first = resume ? resume->step : 0;
    for (std::int64_t i = first;; ++i) {
        const double t = i == steps ? settings.T : static_cast<double>(i) * settings.dt;
        system.begin_step(t);
        system(x, dxdt, t); // the first stage of the step, and the frame's velocity
        const bool stopping = stop && stop->load(std::memory_order_relaxed);
        const bool frame = (i % settings.every == 0 || i == steps || stopping) &&
                           !(resume && i == first && resume->frame_kept);
        if (frame) observer(x, dxdt, t, i);
        if (stopping) return integration_outcome::interrupted;
        if (i == steps) return integration_outcome::complete;
        const double next = i + 1 == steps ? settings.T : static_cast<double>(i + 1) * settings.dt;
        good = x;
        stepper.do_step(std::ref(system), x, dxdt, t, next - t);
        project_to_sphere(directions(x), n, d, system.model().threads);
        try {
            check_finite(x, n, d, next);
        } catch (const numerical_fault& fault) {
            fail_with_frame(fault, x, good, dxdt, t, i, frame, observer);
        }
        ++statistics.accepted_steps;
    }
}

integration_outcome integrate_adaptive(attention_system& system, state_type& x,
                                       const integration_settings& settings,
                                       const frame_observer& observer,
                                       solver_statistics& statistics, const std::atomic<bool>* stop,
                                       const resume_point* resume) {
    const std::size_t n = system.model().n, d = system.model().d;
    auto stepper = odeint::make_controlled(settings.atol, settings.rtol,
                                           odeint::runge_kutta_dopri5<state_type>());
    const double interval = static_cast<double>(settings.every) * settings.dt;
    const std::optional<double> switch_time = breakpoint(system.model().scheme);
    state_type dxdt(x.size()), good(x.size());
    double t = 0.0, dt = settings.dt;
    std::int64_t output = 0; // index of the next output time
    auto output_time = [&](std::int64_t j) {
        return std::min(settings.T, static_cast<double>(j) * interval);
    };
    bool skip_frame = false;
    if (resume) {
        t = resume->t;
        dt = resume->next_step;
        statistics.accepted_steps = static_cast<std::uint64_t>(resume->step);
        while (output_time(output) <= t && output_time(output) < settings.T)
            ++output;
        skip_frame = resume->frame_kept; // the resume frame is in the file already
    }
    system.begin_step(t);
    system(x, dxdt, t);
    for (;;) {
        const bool stopping = stop && stop->load(std::memory_order_relaxed);
        statistics.next_step = dt;
        bool written = false;
        if ((t >= output_time(output) || stopping) && !skip_frame) {
            observer(x, dxdt, t, static_cast<std::int64_t>(statistics.accepted_steps));
            written = true;
        }
        if (t >= output_time(output)) ++output;
        skip_frame = false;
        if (stopping) return integration_outcome::interrupted;
        if (t >= settings.T) return integration_outcome::complete;

        double stop_at = output_time(output);
        if (switch_time && *switch_time > t && *switch_time < stop_at) stop_at = *switch_time;
        const bool clamped = dt >= stop_at - t;
        const double start = t, suggested = dt;
        double step = clamped ? stop_at - t : dt;
        double attempted = step;
        good = x;
        for (;;) {
            attempted = step;
            if (stepper.try_step(std::ref(system), x, dxdt, t, step) == odeint::success) break;
            ++statistics.rejected_steps;
            if (step < 1e-12 * std::max(1.0, std::abs(t))) {
                std::ostringstream message;
                message.precision(17);
                message << "the adaptive step fell below its floor (" << step << ") at t = " << t
                        << "; loosen --rtol/--atol or check the parameters";
                fail_with_frame(numerical_fault(message.str()), x, good, dxdt, start,
                                statistics.accepted_steps, written, observer);
            }
        }
        if (clamped && attempted == stop_at - start) {
            t = stop_at; // land exactly on the output time or the switch
            dt = std::max(step, suggested);
        } else {
            dt = step;
        }
        project_to_sphere(directions(x), n, d, system.model().threads);
        try {
            check_finite(x, n, d, t);
        } catch (const numerical_fault& fault) {
            fail_with_frame(fault, x, good, dxdt, start, statistics.accepted_steps, written,
                            observer);
        }
        ++statistics.accepted_steps;
        system.begin_step(t);
        system(x, dxdt, t);
    }
}

integration_outcome integrate_layers(attention_system& system, state_type& x,
                                     const integration_settings& settings,
                                     const frame_observer& observer, solver_statistics& statistics,
                                     const std::atomic<bool>* stop,
                                     const layer_weights_source& layer_weights,
                                     const resume_point* resume) {
    const std::size_t n = system.model().n, d = system.model().d;
    const std::int64_t layers = step_count(settings.T, settings.dt);
    const double h = settings.dt;
    state_type dxdt(x.size()), good(x.size());
    std::vector<double> attention(n * d);
    statistics.next_step = h;
    const std::int64_t first = resume ? resume->step : 0;
    for (std::int64_t l = first;; ++l) {
        const double t = static_cast<double>(l) * h;
        if (layer_weights && l < layers) system.set_weights(layer_weights(l));
        const bool stopping = stop && stop->load(std::memory_order_relaxed);
        const bool frame = (l % settings.every == 0 || l == layers || stopping) &&
                           !(resume && l == first && resume->frame_kept);
        if (frame) {
            system.begin_step(t);
            system(x, dxdt, t); // the ODE velocity of this state, for the observables
            observer(x, dxdt, t, l);
        }
        if (stopping) return integration_outcome::interrupted;
        if (l == layers) return integration_outcome::complete;
        system.attend(directions(x), attention.data());
        ++statistics.rhs_evaluations;
        good = x;
        apply_layer(system.model().scheme, t, h, attention.data(), directions(x),
                    magnitudes(x, n, d), n, d, system.model().threads);
        try {
            check_finite(x, n, d, t + h);
        } catch (const numerical_fault& fault) {
            if (!frame) {
                system.begin_step(t);
                system(good, dxdt, t);
            }
            fail_with_frame(fault, x, good, dxdt, t, l, frame, observer);
        }
        ++statistics.accepted_steps;
    }
}

} // namespace

void apply_layer(const scheme_parameters& p, double t, double h, const double* attention,
                 double* theta, double* r, std::size_t n, std::size_t d, int threads) {
    threads = detail::token_threads(n, d, detail::resolve_threads(threads));
    detail::for_each_static(n, threads, [&](std::size_t k) {
        const double* a = attention + k * d;
        double* th = theta + k * d;
        double a_norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c)
            a_norm2 += a[c] * a[c];
        const double a_norm = std::sqrt(a_norm2);
        // y = base * theta + weight * A, then theta = y / ‖y‖; `keeps_magnitude` when the
        // layer ends with LN (r stays r0, as in the ODE), otherwise r = ‖y‖.
        double base = 1.0, weight = h;
        bool keeps_magnitude = true;
        scheme id = p.id;
        if (id == scheme::mix_ln) id = t < p.t_switch ? scheme::post_ln : scheme::pre_ln;
        switch (id) {
        case scheme::post_ln:
            break; // y = theta + h A
        case scheme::pre_ln:
            base = r[k]; // y = r theta + h A
            keeps_magnitude = false;
            break;
        case scheme::peri_ln:
            base = r[k]; // y = r theta + h A / ‖A‖
            weight = h / a_norm;
            keeps_magnitude = false;
            break;
        case scheme::ngpt:
            base = 1.0 - h * p.alpha; // y = theta + h alpha (A / ‖A‖ - theta)
            weight = h * p.alpha / a_norm;
            break;
        case scheme::sqrt_scaling:
            weight = h / std::sqrt(t + 1.0);
            break;
        case scheme::mix_ln:
            break; // resolved above
        }
        double y_norm2 = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
            th[c] = base * th[c] + weight * a[c];
            y_norm2 += th[c] * th[c];
        }
        const double y_norm = std::sqrt(y_norm2);
        for (std::size_t c = 0; c < d; ++c)
            th[c] /= y_norm;
        if (!keeps_magnitude) r[k] = y_norm;
    });
}

integration_outcome integrate(attention_system& system, state_type& x,
                              const integration_settings& settings, const frame_observer& observer,
                              solver_statistics& statistics, const std::atomic<bool>* stop,
                              const layer_weights_source& layer_weights,
                              const resume_point* resume) {
    const std::uint64_t evaluations_before = system.evaluations();
    integration_outcome outcome = integration_outcome::complete;
    switch (settings.kind) {
    case integrator_kind::rk4:
        outcome = integrate_fixed(odeint::runge_kutta4<state_type>(), system, x, settings, observer,
                                  statistics, stop, resume);
        break;
    case integrator_kind::euler:
        outcome = integrate_fixed(odeint::euler<state_type>(), system, x, settings, observer,
                                  statistics, stop, resume);
        break;
    case integrator_kind::dopri5:
        outcome = integrate_adaptive(system, x, settings, observer, statistics, stop, resume);
        break;
    case integrator_kind::layers:
        outcome = integrate_layers(system, x, settings, observer, statistics, stop, layer_weights,
                                   resume);
        break;
    }
    statistics.rhs_evaluations += system.evaluations() - evaluations_before;
    return outcome;
}

} // namespace nadyn
