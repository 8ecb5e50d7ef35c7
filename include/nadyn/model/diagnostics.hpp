#pragma once
// Warnings about a run: things that are not errors (the run is well defined) but make its
// numbers doubtful or its cost surprising. The library never prints them; it hands each one
// to a warning_sink that the caller connects (the command line: one line on stderr).
//
//   - pre-run (configuration_warnings): mix-ln's switch at or beyond T (the run is pure
//     post-ln), more than max_reasonable_steps fixed steps or layers, a negative beta.
//   - during the run (integrate): the step-doubling estimate of a fixed-step integrator's
//     local error exceeds step_error_bound (docs/model.md §6).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nadyn {

enum class scheme;
enum class integrator_kind;

// Receives one warning (a single line without the trailing newline). An empty sink
// discards warnings.
using warning_sink = std::function<void(const std::string& message)>;

// Bound on the estimated local error of one fixed step (rk4, euler): the largest change of a
// direction component, or of a magnitude relative to itself, that the step-doubling
// estimate attributes to the step. Above it, the run warns once and suggests a step.
inline constexpr double step_error_bound = 1e-6;

// Above this many fixed steps (or layers) a run is almost certainly a typo in --T or --dt.
inline constexpr double max_reasonable_steps = 1e8;

// What a negative beta means (docs/model.md §1, "Negative beta"), the warning's text: the
// same for every such run, so that a sweep says it once.
inline constexpr const char* negative_beta_warning =
    "warning: beta < 0: each token attends most to the keys least aligned with its query "
    "(logits -|beta| <q_k, key_j>), the opposite of the selection beta > 0 models; the "
    "paper's results assume beta >= 0 (docs/model.md section 1, Negative beta)";

// The warnings a configuration deserves before it runs (empty: none). Plain values, so any
// front end (command line, sweep, binding) can ask without building a run.
std::vector<std::string> configuration_warnings(scheme id, double T, double dt, double t_switch,
                                                integrator_kind integrator, double beta = 0.0);

// The step a fixed-step method of order p would need for a local error of `bound`, given the
// error `error` estimated at step dt: the local error scales as dt^(p+1).
double suggested_step(double dt, double error, double bound, int order);

} // namespace nadyn
