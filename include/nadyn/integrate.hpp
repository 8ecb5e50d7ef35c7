#pragma once
// The run loop: Odeint steppers on the attention system, or the discrete transformer.
//
//   rk4      classical Runge-Kutta, fixed dt
//   dopri5   adaptive Dormand-Prince (rtol, atol); every step ends exactly on an output
//            time and on the scheme's breakpoint (mix-ln's switch)
//   euler    explicit Euler, fixed dt
//   layers   the transformer itself (MODEL.md section 4): the layer formula of each scheme
//            applied literally with step h = dt, T/dt layers, LN(x) = x / ‖x‖
//
// Directions are projected back onto the sphere after every accepted step (MODEL.md
// section 6). Time of step i is i*dt (not an accumulated sum), the last step ends at T.
#include "nadyn/system.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

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
};

// Number of fixed steps (or layers) for the horizon: T/dt rounded up, where a last step
// shorter than dt by at most 1e-9 relative counts as a full one.
std::int64_t step_count(double T, double dt);

struct solver_statistics {
    std::uint64_t rhs_evaluations = 0;
    std::uint64_t accepted_steps = 0;
    std::uint64_t rejected_steps = 0;
    // The step the integrator will try next (dopri5's controller state; dt otherwise), valid
    // during an observer call: what a resumed run needs to continue bit for bit.
    double next_step = 0.0;
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
// The weights of layer l for the discrete model (empty function: fixed weights).
using layer_weights_source = std::function<attention_weights(std::int64_t layer)>;

enum class integration_outcome { complete, interrupted };

// A NaN or Inf in the state, or an adaptive step below its floor: the message names the
// time (and the token); the last good frame has been written.
struct numerical_fault : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Integrates x from t = 0 (or from `resume`) to T. `stop` (may be null) is polled before
// every step: when set, the current state is written as a frame and the outcome is
// `interrupted`. A non-finite state throws numerical_fault after writing the last good
// state as a frame.
integration_outcome integrate(attention_system& system, state_type& x,
                              const integration_settings& settings, const frame_observer& observer,
                              solver_statistics& statistics,
                              const std::atomic<bool>* stop = nullptr,
                              const layer_weights_source& layer_weights = {},
                              const resume_point* resume = nullptr);

// One layer of the discrete model for every token: theta, r updated in place from the
// attention output A of the layer's input, at layer time t with step h, on `threads` OpenMP
// threads (0: omp_get_max_threads()).
void apply_layer(const scheme_parameters& p, double t, double h, const double* attention,
                 double* theta, double* r, std::size_t n, std::size_t d, int threads = 0);

} // namespace nadyn
