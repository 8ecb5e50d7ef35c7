#pragma once
// The one choice of the attention kernel's path (include/nadyn/model/attention.hpp,
// attention_kernel::path): per head, from the call's shape and options and whether the head's
// queries and keys are equal. Every other file in src/model/kernel/ is one path and takes what it
// is given; heads.cpp runs the chosen one.
#include "call.hpp"

#include "nadyn/model/attention.hpp"

#include <optional>

namespace nadyn::kernel {

using path = attention_kernel::path;

// Whether path p can take a head of this call: its arithmetic (double or --precision float),
// its shape (small_n and single_precision_small_n: n <= small_n_limit, d <= 64, softmax; the
// small-d tiles: d <= 16) and, for the symmetric paths, queries equal to keys (same_keys: Q = K and
// no norm noise on q or k), no causal mask and beta >= 0. Nothing here looks at the data: the
// symmetric paths may still decline a head at run time (add_symmetric_tiles()).
[[nodiscard]] bool can_take(path p, const call_shape& shape, const attention_options& options,
                            bool same_keys);

// The path of a head: `forced` (attention_kernel::force_path) when given, std::invalid_argument
// when it cannot take the head; otherwise the fastest that can: the symmetric paths for equal
// queries and keys (the register tiles for d <= 16, the GEMM tiles above), else small_n for a
// few tokens (in float: single_precision_small_n), else the general path (in float:
// single_precision). The small-n paths take every head of their shape with softmax weights:
// causal masks, QKV-Norm and norm noise included (those heads' q, k, v are shaped first and
// their keys transposed per head instead of folding Q into K); unnormalised weights stay on
// the general path.
[[nodiscard]] path choose_path(const call_shape& shape, const attention_options& options,
                               bool same_keys, std::optional<path> forced = std::nullopt);

// Whether p is one of the symmetric paths (Q = K).
[[nodiscard]] bool is_symmetric(path p);

} // namespace nadyn::kernel
