#pragma once
// The inputs a run names by path, read from HDF5 (the file layer, nadyn_files): the initial
// state of --init file:PATH, the weights of --weights file:PATH and layernorm's gain and bias
// of --ln-params PATH. The model (initial.hpp, weights.hpp, norm.hpp) takes numbers, not
// files, so that it builds without HDF5; these readers give it the numbers.
//
// Each reader throws input_error naming the file and the dataset when the file cannot be
// opened or a dataset has the wrong shape or type, and checks a shape before it reads a
// value (a malformed file can declare any shape).
#include "nadyn/model/initial.hpp"
#include "nadyn/model/norm.hpp"
#include "nadyn/model/weights.hpp"

#include <cstddef>
#include <string>

namespace nadyn {

// Dataset theta0 (n x d, required) and r0 (n entries, optional).
initial_file_contents read_initial_file(const std::string& path, std::size_t n, std::size_t d);

// Datasets Q, K, V, each d x d (shared by every head) or heads x d x d; at least one of them.
// A missing one is the identity (an empty matrix).
attention_weights read_weights_file(const std::string& path, std::size_t d, std::size_t heads);

// Datasets gain and bias, each d finite numbers; at least one of them (an absent one keeps
// its identity value).
layer_norm_affine read_layer_norm_affine(const std::string& path, std::size_t d);

// The spec with its file's numbers in `contents` (a spec that names no file, unchanged): what
// make_initial and make_weights need, for callers without a run_config.
initial_spec with_file_contents(initial_spec spec, std::size_t n, std::size_t d);
weights_spec with_file_contents(weights_spec spec, std::size_t d);

// The content hash of an input file: SHA-256 of its bytes, 64 lowercase hex digits (what
// `sha256sum FILE` prints). Recorded as /parameters/<parameter>_sha256 (experiment/
// run_inputs.hpp), so that a resume, or the ranks of an MPI job, can tell whether they read
// the same file.
std::string input_file_sha256(const std::string& path);

} // namespace nadyn
