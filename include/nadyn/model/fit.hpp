#pragma once
// Terminal-velocity laws of docs/model.md §3.5 and their least-squares fits.
//
//   exponential  v = C e^{-a t}                  log v           = log C - a t
//   polynomial   v = C t^{-p}                    log v           = log C - p log t
//   stretched    v = C e^{-c s} / s, s = sqrt(t+1)   log(v s)    = log C - c s
//
// Each is a straight line in its own variables, so a fit is one linear regression; the
// fitted parameter is a (2 for post-ln, ngpt), p (3 for pre-ln, peri-ln, mix-ln) or
// c (4 for sqrt-scaling).
#include "nadyn/model/scheme.hpp"

#include <array>
#include <string_view>
#include <vector>

namespace nadyn {

enum class decay_law { exponential, polynomial, stretched };
inline constexpr std::array<decay_law, 3> decay_laws{decay_law::exponential, decay_law::polynomial,
                                                     decay_law::stretched};

std::string_view to_string(decay_law law);
// "C e^{-2t}" and the like.
std::string_view formula(decay_law law);
// The law docs/model.md §3.5 predicts for a scheme (ngpt with alpha = 1) and its parameter.
// The scheme's terminal_law (schemes/<name>.hpp); a scheme without one (no-norm, whose gap
// freezes at a positive value) throws std::invalid_argument.
decay_law predicted_law(scheme s);
double predicted_parameter(scheme s);

struct law_fit {
    decay_law law = decay_law::exponential;
    double parameter = 0.0; // a, p or c
    double log_prefactor = 0.0;
    double rms_residual = 0.0; // in log v
    std::size_t samples = 0;
};

// Fits one law to the samples with t in [t_start, t_end] (v > 0).
law_fit fit_law(decay_law law, const std::vector<double>& t, const std::vector<double>& v,
                double t_start, double t_end);

struct fit_window {
    double start = 0.0, end = 0.0;
    bool valid = false;
};

// The window where the velocity is well above round-off (v > v_floor and gap > gap_floor)
// and the asymptotic regime has started (gap < near_cluster, and t past a twentieth of
// the window's end, so that offsets such as r = t + r0 have faded).
fit_window choose_window(const std::vector<double>& t, const std::vector<double>& v,
                         const std::vector<double>& gap, double v_floor, double gap_floor,
                         double near_cluster = 1e-3);

// Fits every law on the window and returns them, best (smallest residual) first.
std::vector<law_fit> rank_laws(const std::vector<double>& t, const std::vector<double>& v,
                               const fit_window& window);

} // namespace nadyn
