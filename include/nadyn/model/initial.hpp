#pragma once
// Initial conditions (the --init flag):
//   uniform      directions uniform on S^{d-1} (seeded)
//   orthogonal   theta_k = e_k, the symmetric start of docs/model.md §3 (needs n <= d)
//   cap:EPS      uniform in the spherical cap of angular radius EPS around a random pole
//   caps:K,EPS   K caps of angular radius EPS, token k in cap k mod K, around the centres
//                +u_1, -u_1, +u_2, -u_2, ... of a random orthonormal frame (seeded): any two
//                centres 90 or 180 degrees apart, so K <= 2d (2(d-1) under layernorm); caps
//                with EPS < pi/4 are disjoint and k well-separated clusters to start from
//   caps:K,EPS,DELTA  the same caps around K centres with every pairwise angle DELTA
//                (cos DELTA >= -1/(K-1)): sqrt(t) u_0 + sqrt(1 - t) s_k, s_k the unit
//                vertices of a regular simplex in span(u_1..u_{K-1}) centred at 0,
//                t = ((K-1) cos DELTA + 1) / K; needs K <= d (K <= d - 1 under layernorm)
//   perturbed:K,EPS   i.i.d. from the density 1 + EPS G_K(x_d) w.r.t. the uniform measure,
//                G_K the degree-K Gegenbauer polynomial of S^{d-1} with G_K(1) = 1; K >= 1,
//                |EPS| <= 1
//   vonmises:Q,KAPPA  i.i.d. from the density sum_{j<Q} exp(KAPPA (<x, c_j> - 1)),
//                c_j = cos(2 pi j/Q) e_d + sin(2 pi j/Q) e_1; Q >= 1, KAPPA >= 0
//                These two are the density solver's analytic starts, the same functions
//                (start_density.hpp), so that particles and density start alike.
//   file:PATH    HDF5 dataset theta0 (n x d, rows normalised, a zero row is an error) and
//                optional r0 (length n, positive)
// Magnitudes start at r0 unless the file gives them.
//
// With norm = layernorm (docs/model.md §10) the directions lie on S^{d-1} ∩ U, U the
// hyperplane orthogonal to (1, ..., 1): uniform is uniform there (a Gaussian vector, centred,
// normalised), orthogonal is the first n vectors of U's Helmert basis
// h_m = (1, ..., 1, -m, 0, ..., 0) / sqrt(m (m+1)) (needs n <= d - 1), the cap lies in U
// around a pole in U, and a file's rows are centred, then normalised (a constant row is an
// error). perturbed and vonmises are densities on S^{d-1} about e_d, which is not in U, and are
// refused under layernorm.
#include "nadyn/model/norm.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nadyn {

enum class initial_kind { uniform, orthogonal, cap, caps, perturbed, vonmises, noise, file };

// The numbers of an init file (file:PATH) as stored. The model takes numbers, not files:
// read_input_files (nadyn/input_files.hpp, the file layer) reads them into the spec.
struct initial_file_contents {
    std::size_t rows = 0, cols = 0;
    std::vector<double> theta0; // rows x cols, row-major, not yet normalised
    std::vector<double> r0;     // one magnitude per row, or empty (the run's r0)
};

struct initial_spec {
    initial_kind kind = initial_kind::uniform;
    double cap_radius = 0.0; // radians, for cap and caps
    std::size_t caps = 0;    // the number of caps, for caps
    double separation = 0.0; // caps: the centres' pairwise angle DELTA; 0: +-u_1, +-u_2, ...
    std::size_t degree = 0;  // perturbed: K; vonmises: Q, the number of centres; noise: KMAX
    double amplitude = 0.0;  // perturbed: EPS; vonmises: KAPPA; noise: EPS
    std::string path;        // for file
    // For file: the file's numbers (shared by the copies of a spec; not part of to_string).
    std::shared_ptr<const initial_file_contents> contents;

    // uniform | orthogonal | cap:EPS | caps:K,EPS[,DELTA] | perturbed:K,EPS |
    // vonmises:Q,KAPPA | file:PATH; input_error otherwise.
    static initial_spec parse(const std::string& text);
    [[nodiscard]] std::string to_string() const;
};

struct initial_state {
    std::vector<double> theta; // n x d row-major, unit rows
    std::vector<double> r;     // n magnitudes
};

// An init file's shapes, checked by its reader before it reads a value and by make_initial:
// input_error naming the file and the dataset. theta0 is n x d; r0 has n entries (rows x cols
// with one of them 1).
void check_init_theta0_shape(const std::string& path, std::size_t n, std::size_t d,
                             std::size_t rows, std::size_t cols);
void check_init_r0_shape(const std::string& path, std::size_t n, std::size_t rows,
                         std::size_t cols);

// Why perturbed and vonmises are refused under layernorm (make_initial's message and the
// run's check).
std::string layernorm_density_start_refusal(const initial_spec& spec);

// file: needs spec.contents (std::logic_error without it); input_error when its shape is not
// n x d, a row is zero (or constant under layernorm) or a magnitude is not positive.
initial_state make_initial(const initial_spec& spec, std::size_t n, std::size_t d,
                           std::uint64_t seed, double r0, norm_kind norm = norm_kind::rms);

} // namespace nadyn
