#pragma once
// One run of the scalar ODE of the symmetric start (what `nadyn reduced` does), as a library
// call with the same checks and the same file: validated inputs, the sample times, and an
// H5MD file with the full provenance of a particle run.
#include "nadyn/model/reduced.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nadyn {

enum class sample_spacing { linear, log };

struct reduced_run {
    scheme id = scheme::peri_ln;
    double n = 256, beta = 5.0, r0 = 1.0, alpha = 1.0, T = 30.0;
    std::optional<double> t_switch;                  // mix-ln; default 0.25 T
    std::int64_t samples = 100;                      // output samples after t = 0
    sample_spacing spacing = sample_spacing::linear; // log: from 1e-3 T to T
    double rtol = 1e-13;
    attention_kind attention = attention_kind::softmax; // docs/model.md §8

    // input_error naming the first invalid input and its valid range.
    void validate() const;
    [[nodiscard]] reduced_parameters parameters() const;
    // t = 0, then `samples` times up to T.
    [[nodiscard]] std::vector<double> sample_times() const;
    // Validates and integrates.
    [[nodiscard]] std::vector<reduced_sample> integrate() const;
    // Writes the samples as an H5MD file (observables mean_cos, gap, velocity, r_mean of one
    // representative token) with the inputs and the provenance (version, commit, compiler,
    // flags, build type, command line); input_error if the path exists (unless overwrite) or
    // cannot be created.
    void write_file(const std::string& path, const std::vector<reduced_sample>& samples,
                    bool overwrite, const std::string& command_line = {}) const;
};

sample_spacing parse_spacing(const std::string& name); // input_error if unknown

} // namespace nadyn
