#pragma once
// The normalisation map LN of the layers (the --norm flag), docs/model.md §10.
//
//   rms        LN(x) = x / ‖x‖: the directions live on the sphere S^{d-1} (RMSNorm's
//              geometry; sections 1 to 9 of docs/model.md)
//   layernorm  LN(x) = Pi x / ‖Pi x‖ with Pi x = x - mean(x) 1, the orthogonal projection
//              onto the hyperplane U = {x : sum_c x_c = 0}: the directions live on the
//              (d-2)-sphere S^{d-1} ∩ U, and every scheme's attention output is centred
//              first, A_k -> Pi A_k:
//
//                  d theta_k/dt = (Pi A_k - <theta_k, Pi A_k> theta_k) / s_k
//
//              with s_k and dr_k/dt from <theta_k, Pi A_k> and ‖Pi A_k‖. An optional gain
//              a and bias b (--ln-params) make attention read y_k = a ⊙ theta_k + b.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

enum class norm_kind { rms, layernorm };

// "rms" | "layernorm"; input_error naming the valid choices otherwise.
norm_kind parse_norm(std::string_view name);
std::string_view to_string(norm_kind kind);
// "rms, layernorm" for messages and --help.
std::string norm_names();

// LayerNorm's gain a and bias b (length d each); an empty vector is the identity (a = 1,
// b = 0), so a run without --ln-params does no extra work.
struct layer_norm_affine {
    std::vector<double> gain;
    std::vector<double> bias;

    [[nodiscard]] bool identity() const { return gain.empty() && bias.empty(); }
};

// y_k = a ⊙ theta_k + b for n rows of d (what attention reads under layernorm).
void apply_affine(const layer_norm_affine& affine, const double* theta, double* y, std::size_t n,
                  std::size_t d);

// Pi x = x - mean(x) 1 for each of n rows of d, in place.
void centre_rows(double* x, std::size_t n, std::size_t d, int threads = 0);

// theta_k <- Pi theta_k / ‖Pi theta_k‖ for every row: the projection onto S^{d-1} ∩ U after
// each accepted step (the layernorm counterpart of project_to_sphere).
void project_to_centred_sphere(double* theta, std::size_t n, std::size_t d, int threads = 0);

} // namespace nadyn
