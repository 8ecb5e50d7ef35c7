#pragma once
// A cache of the attention heads' weights for the small-n loops (src/model/kernel/small_n.hpp),
// held by value by the kernel and the attention observables.
#include "nadyn/model/weights.hpp"

#include <cstddef>
#include <vector>

namespace nadyn::detail {

// The heads' weights in the form the small-n projections read, kept across calls, so that
// a call does not transpose d x d maps before projecting 64 tokens through them; and the
// queries' map folded with the keys': the logits need Q and K only through
//
//     <Q x_k, K x_j> = <(K^T Q) x_k, x_j>,
//
// so one projection by K^T Q (the keys then being the tokens themselves) stands for two.
// Each call compares the maps with the copies kept (d^2 compares against the n d^2
// multiply-adds of a projection) and rebuilds an entry only when they changed (weights
// redrawn per layer, or a kernel reused for other weights). One per kernel or observables
// object: runs side by side share nothing.
class small_n_weights {
  public:
    // M^T of head `head`'s map `m` (d x d; which: 0 Q, 1 K, 2 V).
    const double* transposed(std::size_t head, std::size_t which, const matrix& m);
    // (K^T Q)^T = Q^T K of head `head` (an empty Q or K is the identity; not both).
    const double* folded(std::size_t head, const matrix& q, const matrix& k);
    // The same two rounded to float, for the float paths: converted once per rebuild, not at
    // every call (a conversion per head per call was 1% of simuformer's float sweep).
    const float* transposed_float(std::size_t head, std::size_t which, const matrix& m);
    const float* folded_float(std::size_t head, const matrix& q, const matrix& k);

  private:
    struct entry {
        matrix first, second; // the maps the value was made from
        std::vector<double> value;
        std::vector<float> single; // value in float, empty until asked for after a rebuild
        bool valid = false;
    };
    static const float* single_of(entry& e);
    entry& slot(std::size_t head, std::size_t which);
    std::vector<entry> m_entries;
};

} // namespace nadyn::detail
