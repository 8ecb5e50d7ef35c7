#pragma once
// Unselectable keys (Brody et al.; docs/model.md §12). Key j is unselectable when no query q
// gives it a strictly higher score <q, key_j> than every other key: exactly when key_j lies
// in the convex hull of the other keys, i.e. when the linear program
//
//     lambda_i >= 0 (i != j),   sum_i lambda_i = 1,   sum_i lambda_i key_i = key_j
//
// is feasible (otherwise a separating hyperplane is the query that selects j). Keys on a
// sphere or an ellipsoid (every normalised scheme) are all selectable: a point of a strictly
// convex surface is never a convex combination of other points of it.
//
// Decided per key with a certificate in each direction, checked with rigorous bounds on
// the rounding or in exact rational arithmetic, so that no solver tolerance decides
// (src/experiment/unselectable.cpp): a key equal to another is unselectable; a query q whose scores
// <q, key_j> > <q, key_i> (i != j) hold with their rounding bounded (and, for a difference
// within its bound, in exact rationals) makes it selectable (the candidates: q = key_j,
// which selects every key of a sphere about the origin, and the query of GLPK's margin
// program max_q (<q, key_j> - max_{i != j} <q, key_i>) over q in [-1, 1]^d); convex weights
// read off that program's dual basis and verified with a rigorous error bound on their
// floating-point solution (all provably positive) make it unselectable; when neither
// certificate verifies, the feasibility program above is solved by the simplex method in
// exact rational arithmetic. Every double is a rational, so the answer is exact for the
// keys as stored, however close they are: distinct keys rounded onto a sphere are all
// selectable while the sagitta of their chords (spacing^2 / 8) exceeds their rounding
// (~1e-16), i.e. for spacings above ~1e-7. The exact fallback is the slow part; it runs
// only when a key lies within rounding of the boundary of the others' hull or GLPK's
// answer is off by its tolerance (~1e-7).
//
// Duplicates: a key equal to another key is in the hull of the others, so every copy of a
// repeated key counts as unselectable (no query scores one copy strictly above its twin).
#include "nadyn/model/weights.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nadyn {

// The fraction of the n keys (row-major n x d) that are unselectable, in [0, 1]: n linear
// programs with d + 1 rows and n - 1 columns each. n = 0 gives 0; a single key is selectable.
// GLPK's terminal output is off while it runs.
double unselectable_fraction(const double* keys, std::size_t n, std::size_t d);

// The unselectable fraction of the keys attention uses, key_j = K_h y_j for the attention
// input y (n x d row-major: theta_j, or r_j theta_j for no-norm), averaged over the heads
// (an empty K is the identity). `keys` is a workspace (n x d), reused between calls.
double unselectable_fraction(const double* inputs, std::size_t n, std::size_t d,
                             const attention_weights& weights, std::vector<double>& keys);

// Whether key j is unselectable (in the convex hull of the other keys), one program.
bool unselectable_key(const double* keys, std::size_t n, std::size_t d, std::size_t j);

// n x d standard normal keys of (seed, n, d), from a stream of their own (away from the
// simulation's initial state, weights and layers): the keys of the unselectable study
// (studies/unselectable/).
std::vector<double> gaussian_keys(std::uint64_t seed, std::size_t n, std::size_t d);

} // namespace nadyn
