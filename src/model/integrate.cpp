#include "nadyn/model/integrate.hpp"

#include "nadyn/model/diagnostics.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/scheme_operations.hpp"

#include <boost/numeric/odeint.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
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

namespace {

std::string shown_ratio(double ratio) {
    std::ostringstream out;
    out.precision(6);
    out << ratio;
    return out.str();
}

} // namespace

std::int64_t step_count(double T, double dt) {
    if (T <= 0.0) return 0;
    const double ratio = T / dt;
    // Refused in double, before any cast: converting a double at or past 2^63 (or NaN, or
    // infinity: T = 1e300, dt = 5e-324) to int64 is undefined behaviour, and x86 yields
    // INT64_MIN, which every "< limit" check then accepted as a run of no steps.
    if (!(ratio < static_cast<double>(max_steps)))
        throw input_error("T / dt is too large (" + shown_ratio(ratio) +
                          " steps; a run takes fewer than 2^40)");
    const double nearest = std::round(ratio);
    if (std::abs(ratio - nearest) <= 1e-9 * std::max(1.0, nearest))
        return static_cast<std::int64_t>(nearest);
    return static_cast<std::int64_t>(std::ceil(ratio));
}

grid_position locate_on_grid(double t, double dt) {
    const double ratio = t / dt, nearest = std::round(ratio);
    if (std::abs(ratio - nearest) <= 1e-9 * std::max(1.0, nearest))
        return {static_cast<std::int64_t>(nearest), false};
    return {static_cast<std::int64_t>(std::floor(ratio)), true};
}

namespace {

// Where a fixed-step run stops for time t, in the order of its stops: grid point i is 2 i,
// a time between grid points i and i + 1 is 2 i + 1, and T is the last grid point (step_count).
std::int64_t stop_key(double t, const integration_settings& s, std::int64_t steps) {
    if (t >= s.T) return 2 * steps;
    const grid_position p = locate_on_grid(t, s.dt);
    return std::min(2 * p.index + (p.between ? 1 : 0), 2 * steps);
}

bool fixed_grid(integrator_kind kind) {
    return kind != integrator_kind::dopri5;
}

} // namespace

std::vector<double> output_times(const integration_settings& s) {
    std::vector<double> times;
    if (s.frame_times.empty()) {
        if (s.kind == integrator_kind::dopri5) {
            const double interval = static_cast<double>(s.every) * s.dt;
            for (std::int64_t j = 0;; ++j) {
                const double t = std::min(s.T, static_cast<double>(j) * interval);
                times.push_back(t);
                if (t >= s.T) break;
            }
            return times;
        }
        const std::int64_t steps = step_count(s.T, s.dt);
        for (std::int64_t i = 0; i <= steps; ++i)
            if (i % s.every == 0 || i == steps)
                times.push_back(i == steps ? s.T : static_cast<double>(i) * s.dt);
        return times;
    }
    // 0, the chosen times, T; a chosen time at the stop of the one before it (the same grid
    // point, or within 1e-9 of T) adds no frame.
    const std::int64_t steps = step_count(s.T, s.dt);
    const double end = s.T - 1e-9 * std::max(s.dt, s.T);
    times.push_back(0.0);
    std::int64_t last_key = 0;
    for (const double t : s.frame_times) {
        if (t <= times.back() || t >= end) continue;
        if (fixed_grid(s.kind)) {
            const std::int64_t key = stop_key(t, s, steps);
            if (key <= last_key || key >= 2 * steps) continue;
            last_key = key;
        }
        times.push_back(t);
    }
    if (s.T > 0.0) times.push_back(s.T);
    return times;
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
    // On the bits: a value is NaN or +-Inf when its exponent field is all ones. The largest
    // exponent field is an integer max, which GCC vectorises (a compare of doubles folded
    // into a bool stayed one scalar compare per value).
    constexpr std::uint64_t exponent = 0x7ff0000000000000ULL;
    std::uint64_t largest = 0;
    for (const double v : x)
        largest = std::max(largest, std::bit_cast<std::uint64_t>(v) & exponent);
    return largest != exponent;
}

// The model's domain: every value finite and every magnitude positive. A magnitude that
// crosses zero (e.g. pre-ln with a V that points tokens away from their attention output) is
// no longer a normalised token: the run stops like on a NaN.
void check_domain(const state_type& x, std::size_t n, std::size_t d, double t) {
    const double* r = magnitudes(x, n, d);
    bool positive = true;
    for (std::size_t k = 0; k < n; ++k)
        positive &= r[k] > 0.0; // false for NaN too
    if (positive && all_finite(x)) return;
    std::ostringstream message;
    message.precision(17);
    const std::int64_t bad = first_bad_token(x, n, d);
    if (bad >= 0) {
        message << "the state became non-finite (NaN or Inf) at t = " << t << " in token " << bad
                << "; reduce --dt (or the tolerances)";
        throw numerical_fault(message.str());
    }
    for (std::size_t k = 0; k < n; ++k) {
        if (r[k] > 0.0) continue;
        message << "the magnitude of token " << k << " left the model's domain (r > 0) at t = " << t
                << ": r = " << r[k]
                << "; the radial rate drove it through zero (check V and r0; docs/model.md §2) "
                   "or the step is too large";
        throw numerical_fault(message.str());
    }
}

// The step-doubling estimate of the local error of one step of `dt` from (x, dxdt) at t, on
// copies: the trajectory and dxdt are not touched. See integrate.hpp.
template <class Stepper>
double step_doubling_error(Stepper& probe, attention_system& system, const state_type& x,
                           const state_type& dxdt, double t, double dt, int order, state_type& full,
                           state_type& half, state_type& half_dxdt) {
    const std::size_t n = system.model().n, d = system.model().d;
    full = x;
    half = x;
    system.restart_step(t);
    probe.do_step(std::ref(system), full, dxdt, t, dt);
    project_directions(directions(full), system.model());
    probe.do_step(std::ref(system), half, dxdt, t, dt / 2);
    project_directions(directions(half), system.model());
    // The second half keeps the phase of the step's start (begin_step(t)), as the integrator's
    // own step does: a step across mix-ln's switch is not a difference of two models.
    const double middle = t + dt / 2;
    system(half, half_dxdt, middle);
    probe.do_step(std::ref(system), half, half_dxdt, middle, dt / 2);
    project_directions(directions(half), system.model());
    system.restart_step(t);
    double difference = 0.0;
    for (std::size_t i = 0; i < n * d; ++i)
        difference = std::max(difference, std::abs(full[i] - half[i]));
    const double* r_full = magnitudes(full, n, d);
    const double* r_half = magnitudes(half, n, d);
    for (std::size_t k = 0; k < n; ++k)
        difference = std::max(difference, std::abs(r_full[k] - r_half[k]) / std::abs(r_half[k]));
    return difference / (std::ldexp(1.0, order) - 1.0);
}

// The last good state as a frame, then the fault: a run that blows up keeps its history.
[[noreturn]] void fail_with_frame(const numerical_fault& fault, state_type& x,
                                  const state_type& good, const state_type& dxdt, double t,
                                  std::int64_t step, bool written, const frame_observer& observer) {
    x = good;
    if (!written) observer(x, dxdt, t, step);
    throw fault;
}

// Per-layer weights in continuous time (docs/model.md §7): the weights of layer l hold on
// [l tau, (l+1) tau). A time within 1e-9 (relative) of a boundary counts as on it, as
// step_count() counts a last step that short as a full one.
class layer_schedule {
  public:
    layer_schedule(layer_weights_source source, double tau)
        : m_source(std::move(source)), m_tau(tau) {}

    [[nodiscard]] bool active() const { return static_cast<bool>(m_source); }

    [[nodiscard]] std::int64_t layer_at(double t) const {
        const double ratio = t / m_tau, nearest = std::round(ratio);
        if (std::abs(ratio - nearest) <= 1e-9 * std::max(1.0, nearest))
            return static_cast<std::int64_t>(nearest);
        return static_cast<std::int64_t>(std::floor(ratio));
    }

    // The first redraw after t (infinity without per-layer weights).
    [[nodiscard]] double next_boundary(double t) const {
        if (!active()) return std::numeric_limits<double>::infinity();
        return static_cast<double>(layer_at(t) + 1) * m_tau;
    }

    // Whether the boundary b lies before `end` by more than the boundary tolerance.
    [[nodiscard]] bool splits(double b, double end) const {
        const double ratio = b / m_tau;
        return b < end && end / m_tau - ratio > 1e-9 * std::max(1.0, ratio);
    }

    // Gives the system the weights of the layer holding t (drawn only when it changes).
    void use(attention_system& system, double t) {
        if (!active()) return;
        const std::int64_t layer = layer_at(t);
        if (layer == m_layer) return;
        system.set_weights(m_source(layer));
        m_layer = layer;
    }

  private:
    layer_weights_source m_source;
    double m_tau;
    std::int64_t m_layer = -1;
};

// A fixed step from t to `end` crossing redraws of per-layer weights: the pieces up to
// each redraw, each with its layer's weights and ending exactly on the boundary (so the
// stepper never integrates across a discontinuity and keeps its order). Returns where the
// last piece starts, with the weights and dxdt of that point set; nothing when a stop was
// requested between two pieces (a step may hold billions of redraws: --layer-time 1e-9
// with --dt 0.01), with x and dxdt partway.
template <class Stepper>
std::optional<double> step_across_redraws(Stepper& stepper, attention_system& system, state_type& x,
                                          state_type& dxdt, double t, double end,
                                          layer_schedule& layers, const std::atomic<bool>* stop) {
    for (double b = layers.next_boundary(t); layers.splits(b, end); b = layers.next_boundary(t)) {
        if (stop && stop->load(std::memory_order_relaxed)) return std::nullopt;
        stepper.do_step(std::ref(system), x, dxdt, t, b - t);
        project_directions(directions(x), system.model());
        t = b;
        layers.use(system, t);
        system.begin_step(t);
        system(x, dxdt, t);
    }
    return t;
}

template <class Stepper>
integration_outcome integrate_fixed(Stepper stepper, int order, attention_system& system,
                                    state_type& x, const integration_settings& settings,
                                    const frame_observer& observer, solver_statistics& statistics,
                                    const std::atomic<bool>* stop, const resume_point* resume,
                                    layer_schedule& layers) {
    const std::size_t n = system.model().n, d = system.model().d;
    const std::int64_t steps = step_count(settings.T, settings.dt);
    state_type dxdt(x.size()), good(x.size());
    state_type probe_full(x.size()), probe_half(x.size()), probe_dxdt(x.size());
    Stepper probe; // its own workspace: the estimate shares nothing with the trajectory
    bool warned = false;
    statistics.next_step = settings.dt;
    // The run stops at every grid point i dt (the last at T) and, with chosen frame times, at
    // each of them off the grid: stop keys (stop_key) order them, 2 i on the grid.
    const bool chosen = !settings.frame_times.empty();
    const std::vector<double> outputs = chosen ? output_times(settings) : std::vector<double>{};
    std::vector<std::int64_t> output_keys;
    for (const double t : outputs)
        output_keys.push_back(stop_key(t, settings, steps));
    auto grid_time = [&](std::int64_t i) {
        return i >= steps ? settings.T : static_cast<double>(i) * settings.dt;
    };
    const std::int64_t spacing = std::max<std::int64_t>(chosen ? 1 : settings.every, 20);
    std::int64_t key = 0;   // where the run is
    std::int64_t j = 0;     // accepted steps: the frames' step index
    std::size_t output = 0; // the next chosen output
    if (resume) {
        j = resume->step;
        key = chosen ? stop_key(resume->t, settings, steps) : 2 * resume->step;
    }
    while (output < outputs.size() && output_keys[output] < key)
        ++output;
    const std::int64_t first = j;
    double t_previous = 0.0;     // the start of the last step
    bool previous_frame = false; // whether `good`, the last step's start, has its frame
    for (;; ++j) {
        const std::int64_t i = key / 2; // the grid point at or below the run's time
        const bool between = key % 2 == 1;
        const bool due = chosen ? output < outputs.size() && output_keys[output] == key
                                : i % settings.every == 0 || i == steps;
        const double t = between ? outputs[output] : grid_time(i);
        // A chosen frame records the chosen time (the grid point it lies on, to round-off).
        const double frame_time = chosen && due ? outputs[output] : t;
        const bool kept = resume && j == first && resume->frame_kept;
        layers.use(system, t);
        system.begin_step(t);
        // A frame's attention observables from this evaluation (the frame's state), where
        // the kernel can take them: the observer then skips their own pass.
        if (settings.frame_attention && due && !kept) system.observe_next_evaluation();
        try {
            system(x, dxdt, t); // the first stage of the step, and the frame's velocity
        } catch (const numerical_fault& fault) {
            // An accepted state whose attention overflows (unnormalised attention) is outside
            // the domain: the last good state is the previous step's start (none at the first).
            if (j == first) throw;
            layers.use(system, t_previous);
            system.begin_step(t_previous);
            system(good, dxdt, t_previous);
            fail_with_frame(fault, x, good, dxdt, t_previous, j - 1, previous_frame, observer);
        }
        const bool stopping = stop && stop->load(std::memory_order_relaxed);
        const bool frame = (due || stopping) && !kept;
        // The estimate costs three steps: it is made at the first frame of every `spacing`
        // steps (a rule of the grid alone, so a resumed run estimates where an uninterrupted
        // one does) and is NaN at the frames between, so dense frames add at most 15% to a run.
        // Chosen frames: at the first chosen frame of each stretch of `spacing` steps.
        const bool estimate =
            chosen ? due && (output == 0 || output_keys[output - 1] / 2 / spacing != i / spacing)
                   : i % spacing < settings.every;
        statistics.step_error = std::numeric_limits<double>::quiet_NaN();
        if (settings.estimate_step_error && frame && estimate) {
            const std::uint64_t before = system.evaluations();
            try {
                statistics.step_error =
                    step_doubling_error(probe, system, x, dxdt, t, settings.dt, order, probe_full,
                                        probe_half, probe_dxdt);
            } catch (const numerical_fault&) {
                // The probe overflowed where the step will: the step reports it.
                statistics.step_error = std::numeric_limits<double>::quiet_NaN();
                system.begin_step(t);
            }
            statistics.diagnostic_evaluations += system.evaluations() - before;
            if (!warned && settings.warn && statistics.step_error > step_error_bound) {
                warned = true;
                std::ostringstream message;
                message.precision(3);
                message << "warning: the estimated local error of one " << to_string(settings.kind)
                        << " step is " << statistics.step_error << " at t = " << t << " (bound "
                        << step_error_bound << ", step doubling); use --dt "
                        << suggested_step(settings.dt, statistics.step_error, step_error_bound,
                                          order)
                        << " or --integrator dopri5";
                settings.warn(message.str());
            }
        }
        if (frame) observer(x, dxdt, frame_time, j);
        if (due && chosen) ++output;
        if (stopping) return integration_outcome::interrupted;
        if (key >= 2 * steps) return integration_outcome::complete;
        // The next stop: the next grid point, or a chosen time before it.
        std::int64_t next_key = 2 * (i + 1);
        double next = grid_time(i + 1);
        if (output < outputs.size() && output_keys[output] < next_key) {
            next_key = output_keys[output];
            next = outputs[output];
        }
        good = x;
        try {
            const std::optional<double> from =
                step_across_redraws(stepper, system, x, dxdt, t, next, layers, stop);
            if (!from) {
                // Stopped inside the step: its start, a frame time of the grid, is the last
                // state (a resume continues from it as from any stop), with its own weights
                // and velocity.
                x = good;
                if (!frame && !kept) {
                    layers.use(system, t);
                    system.begin_step(t);
                    system(x, dxdt, t);
                    observer(x, dxdt, t, j);
                }
                return integration_outcome::interrupted;
            }
            stepper.do_step(std::ref(system), x, dxdt, *from, next - *from);
            project_directions(directions(x), system.model());
            check_domain(x, n, d, next);
        } catch (const numerical_fault& fault) {
            if (!frame && settings.estimate_step_error) {
                // the last good frame gets its own estimate, not the previous frame's
                try {
                    statistics.step_error =
                        step_doubling_error(probe, system, good, dxdt, t, settings.dt, order,
                                            probe_full, probe_half, probe_dxdt);
                } catch (const numerical_fault&) {
                    statistics.step_error = std::numeric_limits<double>::quiet_NaN();
                }
            }
            fail_with_frame(fault, x, good, dxdt, t, j, frame, observer);
        }
        t_previous = t;
        key = next_key;
        previous_frame = frame;
        ++statistics.accepted_steps;
    }
}

integration_outcome integrate_adaptive(attention_system& system, state_type& x,
                                       const integration_settings& settings,
                                       const frame_observer& observer,
                                       solver_statistics& statistics, const std::atomic<bool>* stop,
                                       const resume_point* resume, layer_schedule& layers) {
    const std::size_t n = system.model().n, d = system.model().d;
    auto stepper = odeint::make_controlled(settings.atol, settings.rtol,
                                           odeint::runge_kutta_dopri5<state_type>());
    const double interval = static_cast<double>(settings.every) * settings.dt;
    const std::optional<double> switch_time = breakpoint(system.model().scheme);
    state_type dxdt(x.size()), good(x.size());
    double t = 0.0, dt = settings.dt;
    std::int64_t output = 0; // index of the next output time
    // Chosen frame times: the outputs listed (the last is T).
    const std::vector<double> outputs =
        settings.frame_times.empty() ? std::vector<double>{} : output_times(settings);
    auto output_time = [&](std::int64_t j) {
        if (!outputs.empty())
            return outputs[std::min(static_cast<std::size_t>(j), outputs.size() - 1)];
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
    layers.use(system, t);
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
        // Never across a redraw of per-layer weights.
        if (const double b = layers.next_boundary(t); b < stop_at) stop_at = b;
        const bool clamped = dt >= stop_at - t;
        const double start = t, suggested = dt;
        double step = clamped ? stop_at - t : dt;
        double attempted = step;
        good = x;
        for (;;) {
            attempted = step;
            try {
                if (stepper.try_step(std::ref(system), x, dxdt, t, step) == odeint::success) break;
            } catch (const numerical_fault& fault) { // a stage's attention overflowed
                fail_with_frame(fault, x, good, dxdt, start, statistics.accepted_steps, written,
                                observer);
            }
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
        project_directions(directions(x), system.model());
        try {
            check_domain(x, n, d, t);
        } catch (const numerical_fault& fault) {
            fail_with_frame(fault, x, good, dxdt, start, statistics.accepted_steps, written,
                            observer);
        }
        ++statistics.accepted_steps;
        layers.use(system, t);
        system.begin_step(t);
        try {
            system(x, dxdt, t);
        } catch (const numerical_fault& fault) {
            // The accepted state's attention overflows: the step's start is the last good one.
            --statistics.accepted_steps;
            layers.use(system, start);
            system.begin_step(start);
            system(good, dxdt, start);
            fail_with_frame(fault, x, good, dxdt, start, statistics.accepted_steps, written,
                            observer);
        }
    }
}

integration_outcome integrate_layers(attention_system& system, state_type& x,
                                     const integration_settings& settings,
                                     const frame_observer& observer, solver_statistics& statistics,
                                     const std::atomic<bool>* stop, layer_schedule& redraws,
                                     const resume_point* resume) {
    const std::size_t n = system.model().n, d = system.model().d;
    const std::int64_t layers = step_count(settings.T, settings.dt);
    const double h = settings.dt;
    state_type dxdt(x.size()), good(x.size());
    std::vector<double> attention(n * d);
    statistics.next_step = h;
    const std::int64_t first = resume ? resume->step : 0;
    // Chosen frame times: each is a whole number of layers (run_config's check).
    const std::vector<double> outputs =
        settings.frame_times.empty() ? std::vector<double>{} : output_times(settings);
    std::size_t output = 0;
    auto output_layer = [&](std::size_t o) {
        return o + 1 == outputs.size() ? layers : locate_on_grid(outputs[o], h).index;
    };
    while (output < outputs.size() && output_layer(output) < first)
        ++output;
    bool previous_frame = false; // whether `good`, the last layer's input, has its frame
    for (std::int64_t l = first;; ++l) {
        const double t = static_cast<double>(l) * h;
        if (l < layers) redraws.use(system, t);
        const bool stopping = stop && stop->load(std::memory_order_relaxed);
        const bool due = outputs.empty() ? l % settings.every == 0 || l == layers
                                         : output < outputs.size() && output_layer(output) == l;
        const double frame_time = outputs.empty() || !due ? t : outputs[output];
        if (due && !outputs.empty()) ++output;
        const bool frame = (due || stopping) && !(resume && l == first && resume->frame_kept);
        try {
            if (frame) {
                system.begin_step(t);
                if (settings.frame_velocity || settings.frame_attention) {
                    system(x, dxdt, t); // the ODE velocity of this state, for the observables
                    // The layer reads the same attention (the same state, weights and time):
                    // kept from this evaluation, before the observer's own passes, instead of
                    // a second kernel call, which made a frame cost a whole layer.
                    std::copy(system.attention().begin(), system.attention().end(),
                              attention.begin());
                } else {
                    system.attend_state(x, attention.data()); // nothing reads dx/dt
                }
                observer(x, dxdt, frame_time, l);
            }
            if (stopping) return integration_outcome::interrupted;
            if (l == layers) return integration_outcome::complete;
            if (!frame) {
                system.begin_step(t); // the time a fault of the attention names
                system.attend_state(x, attention.data());
            }
        } catch (const numerical_fault& fault) {
            // The layer's input has an overflowing attention (unnormalised attention): the
            // previous layer's input is the last good state (none at the first).
            if (l == first) throw;
            const double t_good = static_cast<double>(l - 1) * h;
            redraws.use(system, t_good);
            system.begin_step(t_good);
            system(good, dxdt, t_good);
            fail_with_frame(fault, x, good, dxdt, t_good, l - 1, previous_frame, observer);
        }
        ++statistics.rhs_evaluations;
        good = x;
        apply_layer(system.model().scheme, t, h, attention.data(), directions(x),
                    magnitudes(x, n, d), n, d, system.model().threads, system.model().norm);
        try {
            check_domain(x, n, d, t + h);
        } catch (const numerical_fault& fault) {
            if (!frame) {
                system.begin_step(t);
                system(good, dxdt, t);
            }
            fail_with_frame(fault, x, good, dxdt, t, l, frame, observer);
        }
        previous_frame = frame;
        ++statistics.accepted_steps;
    }
}

} // namespace

void apply_layer(const scheme_parameters& p, double t, double h, const double* attention,
                 double* theta, double* r, std::size_t n, std::size_t d, int threads,
                 norm_kind norm) {
    operations(p).apply_layer(p, t, h, attention, theta, r, n, d, threads, norm);
}

double redraw_period(const integration_settings& settings) {
    if (settings.layer_time > 0.0) return settings.layer_time;
    return settings.kind == integrator_kind::layers ? settings.dt : 1.0;
}

integration_outcome integrate(attention_system& system, state_type& x,
                              const integration_settings& settings, const frame_observer& observer,
                              solver_statistics& statistics, const std::atomic<bool>* stop,
                              const layer_weights_source& layer_weights,
                              const resume_point* resume) {
    const std::uint64_t evaluations_before = system.evaluations();
    const std::uint64_t diagnostics_before = statistics.diagnostic_evaluations;
    statistics.step_error = std::numeric_limits<double>::quiet_NaN();
    integration_outcome outcome = integration_outcome::complete;
    // Per-layer weights hold for a layer time each: the ODE integrators end steps on the
    // redraws, the layers integrator redraws at the first layer of each interval.
    layer_schedule redraws(layer_weights, redraw_period(settings));
    switch (settings.kind) {
    case integrator_kind::rk4:
        outcome = integrate_fixed(odeint::runge_kutta4<state_type>(), 4, system, x, settings,
                                  observer, statistics, stop, resume, redraws);
        break;
    case integrator_kind::euler:
        outcome = integrate_fixed(odeint::euler<state_type>(), 1, system, x, settings, observer,
                                  statistics, stop, resume, redraws);
        break;
    case integrator_kind::dopri5:
        outcome =
            integrate_adaptive(system, x, settings, observer, statistics, stop, resume, redraws);
        break;
    case integrator_kind::layers:
        outcome =
            integrate_layers(system, x, settings, observer, statistics, stop, redraws, resume);
        break;
    }
    statistics.rhs_evaluations += system.evaluations() - evaluations_before -
                                  (statistics.diagnostic_evaluations - diagnostics_before);
    return outcome;
}

} // namespace nadyn
