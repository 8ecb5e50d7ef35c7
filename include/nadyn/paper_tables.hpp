#pragma once
// The tables of "Normalization in Attention Dynamics" (arXiv 2510.22026), recomputed:
// initial velocity (closed form vs scalar ODE vs particles), terminal velocity (fitted
// decay laws on the scalar ODE and on a particle run from a small cap), and the check
// with random per-layer weights on the discrete transformer.
#include "nadyn/fit.hpp"
#include "nadyn/scheme.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nadyn {

// ---- initial velocity -------------------------------------------------------------------
struct initial_table_settings {
    std::size_t n = 256; // tokens; the particle check uses d = n
    double beta = 5.0, r0 = 1.0, alpha = 1.0;
};
struct initial_row {
    scheme id;
    double closed_form, reduced, particles, rel_error_reduced, rel_error_particles;
};
std::vector<initial_row> initial_velocity_table(const initial_table_settings& s);
// gamma'(0) of the particle system from the symmetric start (n = d tokens).
double particle_initial_velocity(scheme id, std::size_t n, double beta, double r0, double alpha);

struct beta_sweep_point {
    scheme id;
    double beta, closed_form, particles;
};
std::vector<beta_sweep_point> initial_velocity_sweep(const initial_table_settings& s,
                                                     const std::vector<double>& betas);

// ---- terminal velocity ------------------------------------------------------------------
struct terminal_table_settings {
    // The scalar ODE (symmetric start).
    double n_reduced = 256, beta_reduced = 5.0;
    // The particle run from a small cap (local cone start).
    std::size_t n = 32, d = 3;
    double beta = 1.0, cap = 0.5;
    std::uint64_t seed = 1;
    double r0 = 1.0, alpha = 1.0;
    double t_switch = 1.0; // mix-ln: early, so the run is pre-ln in the terminal regime
};
struct terminal_series {
    std::vector<double> t, velocity, gap;
};
struct terminal_row {
    scheme id;
    decay_law law;
    double theory;
    law_fit reduced, particles; // the predicted law fitted on each
    fit_window reduced_window, particles_window;
    decay_law best_reduced, best_particles; // smallest residual of the three laws
};
// The velocity series of the scalar ODE and of the particle run for one scheme.
terminal_series reduced_terminal_series(scheme id, const terminal_table_settings& s);
terminal_series particle_terminal_series(scheme id, const terminal_table_settings& s);
terminal_row terminal_row_for(scheme id, const terminal_table_settings& s);
std::vector<terminal_row> terminal_velocity_table(const terminal_table_settings& s);

// ---- random weights ---------------------------------------------------------------------
struct random_table_settings {
    std::size_t n = 128, d = 512, layers = 200;
    double beta = 0.0; // 0: sqrt(d)
    double h = 1.0;    // layer step (1: a literal transformer)
    double r0 = 1.0, alpha = 1.0;
    std::vector<std::uint64_t> seeds{1, 2, 3};
};
struct random_run_result {
    double early_movement; // mean angle moved per layer over the first 10% of layers
    law_fit collapse;      // best law of the gap over the last half of the layers
    double final_mean_cos;
};
struct random_row {
    scheme id;
    double early_mean, early_spread;       // over seeds (spread: standard deviation)
    double collapse_mean, collapse_spread; // parameter of the majority law
    decay_law collapse_law;                // the law most seeds chose
    std::size_t collapse_votes;
    double final_mean_cos_mean, final_mean_cos_spread;
    std::string ours_early, ours_collapse, paper_early, paper_collapse;
    bool agrees;
};
random_run_result random_weights_run(scheme id, const random_table_settings& s, std::uint64_t seed);
std::vector<random_row> random_weights_table(const random_table_settings& s);

// ---- formatting -------------------------------------------------------------------------
std::string initial_table_markdown(const std::vector<initial_row>& rows,
                                   const initial_table_settings& s);
std::string initial_table_csv(const std::vector<initial_row>& rows);
std::string terminal_table_markdown(const std::vector<terminal_row>& rows,
                                    const terminal_table_settings& s);
std::string terminal_table_csv(const std::vector<terminal_row>& rows);
std::string random_table_markdown(const std::vector<random_row>& rows,
                                  const random_table_settings& s);
std::string random_table_csv(const std::vector<random_row>& rows);
std::string sweep_csv(const std::vector<beta_sweep_point>& points);

} // namespace nadyn
