#pragma once
// The run loop: Odeint steppers on the attention system, or the discrete transformer.
//
//   rk4      classical Runge-Kutta, fixed dt
//   dopri5   adaptive Dormand-Prince (rtol, atol); every step ends exactly on an output
//            time and on the scheme's breakpoint (mix-ln's switch)
//   euler    explicit Euler, fixed dt
//   layers   the transformer itself (docs/model.md §4): the layer formula of each scheme
//            applied literally with step h = dt, T/dt layers, LN(x) = x / ‖x‖ (rms) or
//            LN(x) = Pi x / ‖Pi x‖ (layernorm, docs/model.md §10)
//
// Directions are projected back onto the sphere after every accepted step (docs/model.md
// §6); under layernorm onto S^{d-1} ∩ U, centred first (§10). Time of step i is i*dt (not an
// accumulated sum), the last step ends at T.
//
// The model's domain is a finite state with every magnitude r_k > 0 (the speed of pre-ln,
// mix-ln and peri-ln divides by r_k): an accepted step leaving it is a numerical_fault.
//
// Chosen frame times (frame_times): rk4 and euler shorten the step before a chosen time off
// the grid so that it ends exactly there (the frame holds the integrator's state, as a run
// with T at that time would), then step back onto the grid i dt; a chosen time within 1e-9
// (relative) of a grid point is that grid point. `step` counts accepted steps, the
// shortened ones included. dopri5 ends a step on each chosen time; layers write the frame
// of layer l at a chosen time l h (the run's check refuses other times).
//
// Step doubling (rk4, euler): at the first frame of every max(every, 20) steps (NaN at the
// frames between, so the three extra steps cost at most 15%), from copies of the frame's
// state, one step of
// dt and two of dt/2 estimate the local error of a step as (docs/model.md §6)
//     step_error = max(max |theta_dt - theta_dt/2|, max_k |r_dt - r_dt/2| / r_dt/2) / (2^p - 1)
// (Richardson, order p = 4 for rk4, 1 for euler; both halves keep the phase of the step's
// start, as the step itself does at mix-ln's switch). The trajectory is untouched; the
// estimate is reported to the frame observer, and the first one above step_error_bound is
// reported once through `warn` with a suggested dt.
#include "nadyn/model/diagnostics.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/system.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

enum class integrator_kind { rk4, dopri5, euler, layers };

integrator_kind parse_integrator(std::string_view name); // input_error if unknown
std::string_view to_string(integrator_kind kind);
inline constexpr std::string_view integrator_names = "rk4, dopri5, euler, layers";

struct integration_settings {
    integrator_kind kind = integrator_kind::rk4;
    double T = 20.0;
    double dt = 0.01;       // fixed step, initial step of dopri5, layer step h
    double rtol = 1e-8;     // dopri5
    double atol = 1e-10;    // dopri5
    std::int64_t every = 1; // a frame every `every` steps (dopri5: every `every * dt` in t)
    // Chosen frame times (--frame-times), sorted, without repeats, in [0, T]; when set they
    // replace `every`: frames at 0, at each chosen time and at T (output_times()).
    std::vector<double> frame_times = {};
    warning_sink warn = {}; // receives the step-error warning (empty: discarded)
    // Per-layer weights (and norm noise): the weights of layer l hold on [l tau, (l+1) tau),
    // tau = layer_time; rk4, euler and dopri5 end a step exactly on each redraw, and the
    // layers integrator draws at the first layer starting in each interval. 0 means the
    // default (redraw_period): tau = 1, or one draw per layer (tau = dt) for layers.
    double layer_time = 0.0;
    // What the frames record (--observables): without step_error no step-doubling estimate
    // (three steps every 20) and no warning from it; without the attention observables the
    // kernel does not measure the frame's attention entropy in its evaluation.
    bool estimate_step_error = true;
    bool frame_attention = true;
    // Whether the observer reads a frame's velocity dx/dt (the moments' velocity); without it
    // and without frame_attention the layers integrator's frames evaluate only the attention
    // the layer needs, not the right-hand side, and pass a dx/dt not of this state.
    bool frame_velocity = true;
};

// The tau of layer_time: itself when set, else dt for the layers integrator (a draw per
// layer) and 1 for the others.
double redraw_period(const integration_settings& settings);

// The most steps (or layers) a run may take, and the most layers of per-layer weights: 2^40,
// the random streams' room for layers (random.hpp), and at a microsecond a step already
// twelve days of stepping.
inline constexpr std::int64_t max_steps = std::int64_t{1} << 40;

// Number of fixed steps (or layers) for the horizon: T/dt rounded up, where a last step
// shorter than dt by at most 1e-9 relative counts as a full one. Throws input_error when
// T/dt is not below max_steps (or not a number), so that no caller meets a count that does
// not fit.
std::int64_t step_count(double T, double dt);

// The times of the frames an uninterrupted run writes: every `every` steps and T, or (with
// frame_times) 0, the chosen times and T. A chosen time within 1e-9 (relative) of T is T's
// frame.
std::vector<double> output_times(const integration_settings& settings);

// Where time t lies on the step grid i dt: the index i of the grid point within 1e-9
// (relative) of t, or the index of the grid point below it with `between` set.
struct grid_position {
    std::int64_t index = 0;
    bool between = false;
};
grid_position locate_on_grid(double t, double dt);

struct solver_statistics {
    std::uint64_t rhs_evaluations = 0;
    std::uint64_t accepted_steps = 0;
    std::uint64_t rejected_steps = 0;
    // The step the integrator will try next (dopri5's controller state; dt otherwise), valid
    // during an observer call: what a resumed run needs to continue bit for bit.
    double next_step = 0.0;
    // The step-doubling estimate of the local error at the current frame (rk4, euler), valid
    // during an observer call; NaN for dopri5 (controlled by rtol/atol) and layers (the
    // discrete model has no discretisation error).
    double step_error = std::numeric_limits<double>::quiet_NaN();
    // Right-hand side evaluations spent on the estimate (not in rhs_evaluations).
    std::uint64_t diagnostic_evaluations = 0;
};

// Where a resumed integration starts: a frame written by an earlier run. The frame itself
// is not written again.
struct resume_point {
    std::int64_t step = 0; // fixed steps / layers: the step index; dopri5: accepted steps
    double t = 0.0;
    double next_step = 0.0; // dopri5: the controller's step at that frame
    bool frame_kept = true; // the file still holds this frame (else it is written again
                            // if an uninterrupted run would write it)
};

// Called at every output time with the state, the right-hand side at that state, the
// time, and the step index (accepted steps so far).
using frame_observer =
    std::function<void(const state_type& x, const state_type& dxdt, double t, std::int64_t step)>;
// The weights of layer l: of the discrete model's layer l, or of the ODE on
// [l tau, (l+1) tau) (empty function: fixed weights).
using layer_weights_source = std::function<attention_weights(std::int64_t layer)>;

enum class integration_outcome { complete, interrupted };

// Integrates x from t = 0 (or from `resume`) to T. `stop` (may be null) is polled before
// every step: when set, the current state is written as a frame and the outcome is
// `interrupted`. A state outside the model's domain (non-finite, or a magnitude <= 0) throws
// numerical_fault after writing the last good state as a frame.
integration_outcome integrate(attention_system& system, state_type& x,
                              const integration_settings& settings, const frame_observer& observer,
                              solver_statistics& statistics,
                              const std::atomic<bool>* stop = nullptr,
                              const layer_weights_source& layer_weights = {},
                              const resume_point* resume = nullptr);

// One layer of the discrete model for every token: theta, r updated in place from the
// attention output A of the layer's input, at layer time t with step h, on `threads` OpenMP
// threads (0: omp_get_max_threads()). A is what the scheme's attention reads
// (attention_system::attend_state): Attn(theta), or Attn(r theta) for no-norm, whose layer
// is then x <- x + h Attn(x). With norm = layernorm the layer's LN is the centre-then-scale
// map LN(y) = Pi y / ‖Pi y‖ (docs/model.md §10), A being the centred attention Pi A (so
// ‖A‖ in peri-ln and ngpt is ‖Pi A‖) and r = ‖Pi y‖ where the layer keeps the magnitude.
void apply_layer(const scheme_parameters& p, double t, double h, const double* attention,
                 double* theta, double* r, std::size_t n, std::size_t d, int threads = 0,
                 norm_kind norm = norm_kind::rms);

} // namespace nadyn
