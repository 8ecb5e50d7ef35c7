// The model layer's observables, one row each (observables.hpp): name, meaning, unit, cost,
// width, the pass it needs and its computation. The experiment layer adds its own rows
// (src/experiment/observable_table.cpp); the order here is the order in the files.
#include "nadyn/model/observables.hpp"

#include <algorithm>

namespace nadyn {

namespace {

// A value the shared passes measured.
template <double frame_observables::*member>
void measured(const frame_context& frame, std::vector<double>&, double* out) {
    *out = frame.passes->*member;
}

constexpr observable model_rows[] = {
    {.name = "mean_cos",
     .description = "mean cosine <theta_k, theta_l> over all pairs k != l of token directions, "
                    "(|S|^2 - n) / (n (n-1)) with S = sum_k theta_k; 1 when all tokens coincide, "
                    "0 for orthogonal ones (1 for n = 1)",
     .unit = "1",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::mean_cos>},
    {.name = "gap",
     .description = "1 - mean_cos = mean of 1 - <theta_k, theta_l> over k != l, computed as "
                    "n/(n-1) * variance so that it keeps its relative accuracy as the tokens "
                    "collapse",
     .unit = "1",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::gap>},
    {.name = "velocity",
     .description = "d mean_cos / dt at this state, 2 <S, sum_k d theta_k/dt> / (n (n-1)) from "
                    "the ODE right-hand side (not by differencing frames); with --integrator "
                    "layers, the ODE's value at the layer's state",
     .unit = "1/t",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::velocity>},
    {.name = "variance",
     .description =
         "mean over tokens of |theta_k - m|^2 with m = S / n the (unnormalised) mean direction",
     .unit = "1",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::variance>},
    {.name = "displacement",
     .description = "mean over tokens of the angle between theta_k(t) and theta_k(0), "
                    "2 asin(|theta_k(t) - theta_k(0)| / 2); counts rotations of the whole cloud "
                    "too",
     .unit = "rad",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::displacement>},
    {.name = "r_mean",
     .description = "mean token magnitude r_k (x_k = r_k theta_k)",
     .unit = "r",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::r_mean>},
    {.name = "r_min",
     .description = "smallest token magnitude r_k; the model needs r_k > 0",
     .unit = "r",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::r_min>},
    {.name = "r_max",
     .description = "largest token magnitude r_k",
     .unit = "r",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::r_max>},
    {.name = "min_cos",
     .description =
         "smallest cosine <theta_k, theta_l> over pairs k != l (1: a single point; 1 for n = 1)",
     .unit = "1",
     .pass = observable_pass::gram,
     .value = measured<&frame_observables::min_cos>},
    {.name = "clusters",
     .description = "number of clusters: connected components of the graph joining k and l when "
                    "<theta_k, theta_l> >= 1 - cluster_eps (single linkage; cluster_eps in "
                    "/parameters)",
     .unit = "count",
     .integer = true,
     .pass = observable_pass::gram,
     .value = measured<&frame_observables::clusters>},
    {.name = "norm_error",
     .description = "max over tokens of | |theta_k| - 1 | after the projection onto the sphere "
                    "(numerical contract: <= 1e-12)",
     .unit = "1",
     .pass = observable_pass::moments,
     .value = measured<&frame_observables::norm_error>},
    {.name = "step_size",
     .description = "the step the integrator tries next: dopri5's controller step (what a resumed "
                    "run needs to continue bit for bit), dt for rk4, euler and layers",
     .unit = "t",
     .pass = observable_pass::own,
     .value = [](const frame_context& frame, std::vector<double>&,
                 double* out) { *out = frame.next_step; }},
    {.name = "step_error",
     .description =
         "step-doubling estimate of the local error of one fixed step from this state: "
         "max(max |theta(dt) - theta(dt/2 twice)|, max_k |r relative difference|) / (2^p - 1), "
         "p = 4 for rk4, 1 for euler; warned about above 1e-6; NaN for dopri5 (controlled by "
         "rtol/atol) and layers (no discretisation)",
     .unit = "1",
     .pass = observable_pass::own,
     .value = [](const frame_context& frame, std::vector<double>&,
                 double* out) { *out = frame.step_error; }},
    {.name = "argmax_flips",
     .description = "fraction of (token, head) pairs whose most-attended key argmax_j w_kj "
                    "differs between the attention with norm noise and the noiseless attention "
                    "at the same state (ties to the lowest index); 0 without --norm-noise "
                    "(docs/model.md section 11)",
     .unit = "1",
     .pass = observable_pass::attention,
     .value = measured<&frame_observables::argmax_flips>},
    {.name = "attention_entropy",
     .description = "mean over tokens and heads of the softmax row's entropy -sum_j w_kj log "
                    "w_kj divided by log n: 0 when each token attends to one key, 1 for uniform "
                    "attention (0 for n = 1); of the attention the run uses (with its norm "
                    "noise; docs/model.md section 11)",
     .unit = "1",
     .pass = observable_pass::attention,
     .value = measured<&frame_observables::attention_entropy>},
    // Optional ones (--observe). theta' is the direction at the previous recorded frame: both
    // motions keep it (n d doubles), and a resumed run takes it from the file's last kept
    // frame, so it continues as an uninterrupted run would.
    {.name = "pair_change",
     .description = "mean over pairs k < l of |<theta_k, theta_l> - <theta'_k, theta'_l>| with "
                    "theta' the directions of the previous recorded frame: the change of the "
                    "pairwise cosines since that frame, which a common rotation of all tokens "
                    "leaves at 0; NaN at the first frame",
     .unit = "1",
     .cost = "the motion since the previous frame, a second Gram pass",
     .optional = true,
     .pass = observable_pass::motion,
     .value = measured<&frame_observables::pair_change>},
    {.name = "angle",
     .description = "mean over tokens of the angle between theta_k and its direction theta'_k at "
                    "the previous recorded frame, 2 asin(|theta_k - theta'_k| / 2); counts "
                    "rotations of the whole cloud too; NaN at the first frame",
     .unit = "rad",
     .cost = "the motion since the previous frame",
     .optional = true,
     .pass = observable_pass::motion,
     .value = measured<&frame_observables::angle>},
    // The interaction energy (docs/model.md §5.1), stored in the form that never overflows;
    // nadyn.open and nadyn inspect give E itself from it (energy_from_log_energy).
    {.name = "log_energy",
     .description =
         "the interaction energy E = (1 / (2 beta n^2)) sum_{i,j} exp(beta <Q_h y_i, K_h y_j>) "
         "of the keys and queries attention reads (y = theta, r theta for no-norm), mean (or "
         "sum) over the heads, stored as log_energy = (1 / beta) log((1 / (H n^2)) sum_h "
         "sum_{i,j} exp(beta <Q_h y_i, K_h y_j>)) = (1 / beta) log(2 beta E / c), c = 1 for the "
         "heads' mean and H for their sum, so E = c exp(beta log_energy) / (2 beta) (what "
         "nadyn.open and nadyn inspect give as energy wherever it is finite): increasing in E, "
         "never overflowing, between the mean and the largest logit per beta, and at beta = 0 "
         "its limit, the mean of <Q_h y_i, K_h y_j>; nondecreasing in time when the dynamics "
         "are a gradient flow of E (docs/model.md section 5.1); older files call it energy",
     .unit = "1",
     .cost = "the interaction energy, O(H n^2 d) per frame",
     .optional = true,
     .pass = observable_pass::own,
     .value =
         [](const frame_context& frame, std::vector<double>& logits, double* out) {
             *out = interaction_energy(frame.input, frame.n, frame.d, frame.beta, *frame.weights,
                                       logits, frame.threads);
         },
     .legacy_name = "energy"},
    {.name = "effective_rank",
     .description = "exp of the entropy of the normalised singular values p_i = s_i / sum_j s_j "
                    "of the n x d matrix of directions, exp(-sum_i p_i log p_i): 1 when all "
                    "tokens are one direction (or its opposite), min(n, d) for orthonormal "
                    "directions",
     .unit = "1",
     .cost = "an SVD of the directions, O(n d^2)",
     .optional = true,
     .pass = observable_pass::own,
     .value = [](const frame_context& frame, std::vector<double>&,
                 double* out) { *out = effective_rank(frame.theta, frame.n, frame.d); }},
    {.name = "pair_density",
     .description = "fraction of pairs k < l whose cosine <theta_k, theta_l> is >= 1 - "
                    "cluster_eps (the links of clusters; cluster_eps in /parameters); 1 for n = 1",
     .unit = "1",
     .cost = "counted in the Gram pass",
     .optional = true,
     .pass = observable_pass::gram,
     .value = measured<&frame_observables::pair_density>},
    {.name = "modes",
     .description = "spectral modes of the empirical measure, one column per degree k = 1..K (K: "
                    "the mode_count parameter, --mode-count): m_k = (1/n^2) sum_{i,j} "
                    "G_k(<theta_i, theta_j>), G_k the Gegenbauer polynomial of S^{d-1} "
                    "normalised to G_k(1) = 1 (Chebyshev T_k for d = 2): the squared norm of the "
                    "measure's degree-k spherical-harmonic part over its value for a single "
                    "point; in [0, 1], 1 for one cluster, about 1/n for independent uniform "
                    "directions, |(1/n) sum_j exp(i k phi_j)|^2 on the circle",
     .unit = "1",
     .cost = "K values per frame, --mode-count",
     .optional = true,
     .width = observable_width::modes,
     .pass = observable_pass::gram,
     .value =
         [](const frame_context& frame, std::vector<double>&, double* out) {
             std::copy(frame.passes->modes.begin(), frame.passes->modes.end(), out);
         }},
};

} // namespace

std::span<const observable> model_observables() {
    return model_rows;
}

const observable* find_model_observable(std::string_view name) {
    for (const observable& row : model_rows)
        if (row.name == name || (!row.legacy_name.empty() && row.legacy_name == name)) return &row;
    return nullptr;
}

} // namespace nadyn
