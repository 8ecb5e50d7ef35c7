#pragma once
// Every input of one simulation, with defaults that give a meaningful run, validation with
// messages that name the problem and the valid choices, and the record written to the
// file's /parameters.
#include "nadyn/experiment/observable_table.hpp"
#include "nadyn/model/attention.hpp"
#include "nadyn/model/initial.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/norm.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/parameters.hpp"
#include "nadyn/model/plateaus.hpp"
#include "nadyn/model/precision.hpp"
#include "nadyn/model/scheme.hpp"
#include "nadyn/model/system.hpp"
#include "nadyn/model/weights.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

// The names of every standard observable (--observables all), in the table's order.
std::vector<std::string> all_standard_observables();

struct run_config {
    scheme scheme_id = scheme::peri_ln;
    std::size_t n = 64;
    std::size_t d = 3;
    double beta = 4.0;
    // The logits use beta log n instead of beta (beta then plays the role of gamma in the
    // long-context scaling beta_n = gamma log n, docs/model.md section 14).
    bool beta_log_n = false;
    double r0 = 1.0;
    double alpha = 1.0;
    ngpt_layer ngpt_step = ngpt_layer::interpolate; // ngpt's discrete layer (scheme.hpp)
    std::optional<double> t_switch;                 // mix-ln; default 0.25 T
    bool causal = false;
    precision arithmetic = precision::double_precision; // of the attention kernel
    attention_kind attention = attention_kind::softmax; // softmax or unnormalised weights
    norm_kind norm = norm_kind::rms;                    // the layers' LN (docs/model.md §10)
    std::string ln_params; // layernorm's gain and bias file; empty: none (a = 1, b = 0)
    integration_settings integration{integrator_kind::rk4, 20.0, 0.01, 1e-8, 1e-10, 0};
    initial_spec init;
    weights_spec weights;                      // with the heads and the value family
    head_combine combine = head_combine::mean; // of the heads' outputs
    bool qkv_norm = false;   // QKV-Norm: q, k, v normalised after the linear maps (§11)
    double norm_noise = 0.0; // sigma: the norms of q, k, v multiplied by 1 + sigma xi (§11)
    std::uint64_t seed = 1;
    // Seeds by purpose (--init-seed, --weights-seed, --noise-seed): each draw has a seed of its
    // own, so a sweep can hold the weights while the start varies, or the reverse. Unset, a
    // purpose follows `seed`; every draw reads the seed of its purpose (seed_for_init() ...).
    std::optional<std::uint64_t> init_seed, weights_seed, noise_seed;
    std::uint64_t seed_for_init() const { return init_seed.value_or(seed); }
    std::uint64_t seed_for_weights() const { return weights_seed.value_or(seed); }
    std::uint64_t seed_for_noise() const { return noise_seed.value_or(seed); }
    bool positions = true;
    bool compress = false;
    bool swmr = true; // SWMR writing (see trajectory_layout); --no-swmr turns it off
    double cluster_eps = 1e-3;
    // Optional observables of the run (--observe), names of the table's optional rows
    // (observable_table.hpp) in its order, no repeats; empty: none.
    std::vector<std::string> observe;
    // The standard observables computed and recorded at frames (--observables), names from
    // the table's standard rows in its order, no repeats; default: all of them. step_size is
    // recorded whatever the choice (a resumed run continues from it).
    std::vector<std::string> observables = all_standard_observables();
    // Degrees k = 1..modes of the optional observable `modes` (its width in the files).
    std::size_t modes = 8;
    // The least length of a metastable plateau of the cluster count (--plateau-min: a time or
    // a percentage of T), for the plateau table written when the run ends.
    plateau_threshold plateau_min;
    int threads = 0;       // 0: OpenMP's default (all cores)
    std::size_t block = 0; // attention query block; 0: chosen from n
    std::string command_line;
    // Run even when the memory estimate exceeds the memory available now (never beyond the
    // machine's physical memory).
    bool ignore_memory_estimate = false;

    // Throws input_error naming the first invalid input and its valid range, or a run whose
    // memory estimate exceeds the machine's memory (or the memory available now, unless
    // ignore_memory_estimate).
    void validate() const;
    // The same against `available` bytes of free memory (available_memory_bytes(), read once
    // for many configurations).
    void validate(double available) const;
    // Bytes the run needs at its peak: every allocation that scales with n, d, the heads and
    // the threads (the state, the stepper's stages, the weights, the kernel's workspaces).
    [[nodiscard]] double memory_bytes() const;
    // What an allocation that failed (std::bad_alloc) means for this run, for out_of_memory:
    // n, d and memory_bytes(), the address-space limit when one is set (ulimit -v; validate()
    // compares the estimate with the free memory, not with it), and what makes the run smaller.
    [[nodiscard]] std::string out_of_memory_message() const;
    // t_switch with its default resolved.
    [[nodiscard]] double switch_time() const;
    // Frame interval in steps: `every` if set, else about 100 frames over the horizon.
    [[nodiscard]] std::int64_t frame_interval() const;
    [[nodiscard]] scheme_parameters scheme_settings() const;
    // The inverse temperature the logits use: beta, or beta log n with beta_log_n.
    [[nodiscard]] double logit_beta() const;
    // The model's parameters of this run (what attention_system integrates), with `threads`
    // OpenMP threads per evaluation and layernorm's gain and bias `affine` (read from
    // ln_params by the caller: the model takes numbers, not files).
    [[nodiscard]] model_parameters model(int threads, layer_norm_affine affine = {}) const;
    // Whether the run computes the optional observable `name` (--observe).
    [[nodiscard]] bool observes(std::string_view name) const;
    // Whether the run records the standard observable `name` (--observables, plus step_size).
    [[nodiscard]] bool records(std::string_view name) const;
    // The series a trajectory file of the run holds, in file order: the standard observables
    // recorded (the table's order), then the optional ones (--observe).
    [[nodiscard]] std::vector<std::string> recorded_observables() const;
    // The rows of recorded_observables(), in that order.
    [[nodiscard]] std::vector<const observable*> recorded_rows() const;
    // Whether any recorded observable needs the pass.
    [[nodiscard]] bool needs(observable_pass pass) const;
    [[nodiscard]] integration_settings resolved_integration() const;
    // The interaction energy E (docs/model.md §5.1) from the recorded log_energy L of this
    // run: E = c exp(beta L) / (2 beta) with beta = logit_beta() and c = 1 for the heads'
    // mean, H for their sum. NaN at beta = 0 (E itself is infinite there), +-inf where it
    // overflows.
    [[nodiscard]] double energy_from_log_energy(double log_energy) const;
    // Every input, as the attributes of /parameters.
    [[nodiscard]] parameter_list to_parameters() const;
    // The inputs recorded in a file's /parameters; input_error names a missing or
    // malformed parameter.
    static run_config from_parameters(const parameter_list& parameters);
};

// Bytes of memory available now (0 when the system does not say).
double available_memory_bytes();

} // namespace nadyn
