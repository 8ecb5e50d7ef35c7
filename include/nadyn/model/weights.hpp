#pragma once
// Attention weights: one or more heads, each with d x d matrices Q, K, V (docs/model.md §7).
//
// The kernel sums the heads' outputs, A_k = sum_h sum_j w^h_kj V_h theta_j; averaging the
// heads (--head-combine mean) scales each V_h by 1/H before the kernel sees it
// (combine_heads). An empty matrix stands for the identity, so the kernel can skip it.
#include <Eigen/Core>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

using matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct attention_head {
    matrix Q, K, V; // d x d, or empty for the identity
    // Norm noise (docs/model.md §11): the norms of q_k, key_k and v_k are multiplied by
    // these n factors (1 + sigma xi); empty: 1 (no noise).
    std::vector<double> query_norm = {}, key_norm = {}, value_norm = {};
};

struct attention_weights {
    std::vector<attention_head> heads{attention_head{}};

    [[nodiscard]] bool is_identity() const;
    // Some head carries norm-noise factors.
    [[nodiscard]] bool has_norm_noise() const;
    // Q == K in every head, so the logits matrix is symmetric.
    [[nodiscard]] bool query_equals_key() const;
};

// The family Q and K (and, with --value same, V) are drawn from (the --weights flag).
//   identity    Q = K = V = I
//   gaussian    entries N(0, 1/d) (Kaiming); `random` is its old name
//   orthogonal  Haar-random orthogonal: QR of a gaussian matrix, R's diagonal made positive
//   gpt2        entries N(0, 0.02^2) (GPT-2's initialisation)
//   symmetric   K = Q gaussian, so Q^T K is symmetric positive semi-definite; V gaussian
//   file        datasets Q, K, V of an HDF5 file
// The interaction-matrix families draw B = Q^T K itself, the matrix of the logits
// beta <theta_k, B theta_j>, as the peers do (Q = I, K = B; V = I unless --value says):
//   interaction-product    B = G1 G2 / sqrt(d), G1, G2 with standard normal entries
//   interaction-symmetric  B = (G + G^T) / sqrt(2): symmetric and indefinite
//   interaction-gpt2       B with entries N(0, 0.02^2)
enum class weights_family {
    identity,
    gaussian,
    orthogonal,
    gpt2,
    symmetric,
    interaction_product,
    interaction_symmetric,
    interaction_gpt2,
    file
};

// The value matrix's own family (the --value flag); `same` follows --weights.
enum class value_family {
    same,
    identity,
    minus_identity,
    gaussian,
    orthogonal,
    gpt2,
    qk,
    minus_qk,
    interaction,      // V = B^T / sqrt(d), B = Q^T K: the peers' V = B / sqrt(d) for row vectors
    minus_interaction // V = -B^T / sqrt(d)
};

// How the heads' outputs combine (--head-combine): their mean (H = 1 is the one-head
// model) or their sum.
enum class head_combine { mean, sum };

inline constexpr std::string_view weights_names =
    "identity, gaussian, orthogonal, gpt2, symmetric, interaction-product, "
    "interaction-symmetric, interaction-gpt2 (each also NAME-per-layer), random, "
    "random-per-layer, file:PATH";
inline constexpr std::string_view value_names =
    "same, identity, minus-identity, gaussian, orthogonal, gpt2, qk, minus-qk, interaction, "
    "minus-interaction";
inline constexpr std::string_view head_combine_names = "mean, sum";

value_family parse_value_family(std::string_view text); // input_error if unknown
std::string_view to_string(value_family family);
head_combine parse_head_combine(std::string_view text); // input_error if unknown
std::string_view to_string(head_combine combine);

struct weights_spec {
    weights_family family = weights_family::identity;
    bool per_layer = false;    // a new draw for every layer (NAME-per-layer)
    bool random_alias = false; // spelled `random` / `random-per-layer` (recorded as written)
    std::string path;          // for file
    // For file: the file's Q, K, V by head (an empty matrix is the identity), read by
    // read_input_files (nadyn/input_files.hpp, the file layer): the model takes numbers, not
    // files. Shared by the copies of a spec; not part of to_string.
    std::shared_ptr<const attention_weights> contents;
    std::size_t heads = 1;                   // --heads
    value_family value = value_family::same; // --value

    // FAMILY, FAMILY-per-layer, random, random-per-layer or file:PATH (input_error
    // otherwise); heads and value keep their defaults.
    static weights_spec parse(const std::string& text);
    // The --weights text (heads and value are parameters of their own).
    [[nodiscard]] std::string to_string() const;
    // Drawn from the seed (not identity, not file).
    [[nodiscard]] bool is_random() const;
    // Some matrix is drawn from the seed (the weights family's, or the value family's).
    [[nodiscard]] bool draws() const;
};

// The weights for a run (layer < 0) or for layer l of a per-layer run (the discrete model's
// layer l, or the ODE's interval [l tau, (l+1) tau)). Head h's matrix m (Q, K, V) comes from
// the stream of (layer, h) positioned after m d^2 normals, so it depends on nothing else:
// head 0 of a one-head run draws the numbers nadyn always drew, and adding a head, or
// changing V's family, never changes the other matrices. file: spec.contents (std::logic_error
// without it: read_input_files reads the datasets Q, K, V of the HDF5 file).
// qk: V = Q^T K / ‖Q^T K‖_2 per head (input_error when Q^T K = 0).
attention_weights make_weights(const weights_spec& spec, std::size_t d, std::uint64_t seed,
                               std::int64_t layer = -1);

// The weights the kernel uses: with `mean` and H > 1 heads each V_h scaled by 1/H (an
// identity V becomes I / H), so the kernel's sum over heads is their mean. H = 1 and `sum`
// return the weights unchanged.
attention_weights combine_heads(attention_weights weights, head_combine combine, std::size_t d);

// What /parameters records of fixed weights: each of Q, K, V that some head has, every head's
// d x d matrix stacked along the rows (H d x d, row-major), a head without it written out as
// the identity. Matrices no head has are left out (the identity is implied).
struct stacked_matrix {
    std::string name; // "Q", "K" or "V"
    std::vector<double> values;
};
std::vector<stacked_matrix> stacked_weight_matrices(const attention_weights& weights,
                                                    std::size_t d);

// Sets every head's norm-noise factors for n tokens (docs/model.md §11): query_norm, key_norm
// and value_norm, in that order, n each, are 1 + sigma xi with xi standard normal from the
// stream of (layer, head) (norm_noise_stream_id), so a layer's noise depends on nothing else.
// sigma = 0 clears them (the noiseless model).
void draw_norm_noise(attention_weights& weights, std::size_t n, double sigma, std::uint64_t seed,
                     std::int64_t layer);

} // namespace nadyn
