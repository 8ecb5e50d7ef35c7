#pragma once
// Attention weights: one or more heads, each with d x d matrices Q, K, V.
//
// The kernel sums the heads' outputs, A_k = sum_h sum_j w^h_kj V_h theta_j; today's runs
// use one head. An empty matrix stands for the identity, so the kernel can skip it.
#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

namespace nadyn {

using matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct attention_head {
    matrix Q, K, V; // d x d, or empty for the identity
};

struct attention_weights {
    std::vector<attention_head> heads{attention_head{}};

    [[nodiscard]] bool is_identity() const;
    // Q == K in every head, so the logits matrix is symmetric.
    [[nodiscard]] bool query_equals_key() const;
};

// How the weights of a run are chosen (the --weights flag).
enum class weights_kind { identity, random, random_per_layer, file };

struct weights_spec {
    weights_kind kind = weights_kind::identity;
    std::string path; // for file

    // identity | random | random-per-layer | file:PATH; input_error otherwise.
    static weights_spec parse(const std::string& text);
    [[nodiscard]] std::string to_string() const;
};

// The weights for a run (layer < 0) or for one layer of the discrete model.
// random: Gaussian entries with variance 1/d (Kaiming), drawn from the seed; the draw
// of layer l (random-per-layer) uses its own stream, so any layer can be regenerated
// alone. file: datasets Q, K, V (d x d) of an HDF5 file, a missing one is the identity.
attention_weights make_weights(const weights_spec& spec, std::size_t d, std::uint64_t seed,
                               std::int64_t layer = -1);

} // namespace nadyn
