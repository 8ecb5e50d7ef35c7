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
// Decided per key by one linear program (GLPK's simplex, src/unselectable.cpp): the largest
// margin max_q (<q, key_j> - max_{i != j} <q, key_i>) over queries q in [-1, 1]^d, which is
// positive exactly when key j is selectable. The query the simplex returns is then checked
// in floating point with a rigorous bound on the rounding of the scores: key j counts as
// selectable only when that query's margin exceeds the bound, so no solver tolerance decides
// it. A key is misjudged (counted unselectable although it is not) only when its distance
// outside the hull of the others is within the rounding of the scores, ~d 1e-16 times the
// keys' size: at that distance the keys' own rounding decides anyway. Keys on a sphere give
// exactly 0 unless two keys are within ~1e-7 of each other (the sagitta of their chord is
// then ~1e-14).
//
// Duplicates: a key equal to another key is in the hull of the others, so every copy of a
// repeated key counts as unselectable (no query scores one copy strictly above its twin).
#include "nadyn/weights.hpp"

#include <cstddef>
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

} // namespace nadyn
