#pragma once
// The token exchange of an MPI job (token_exchange.hpp); built only with MPI (NADYN_MPI).
#include "nadyn/model/token_exchange.hpp"
#include "nadyn/parallel/parallel_context.hpp"

#include <cstddef>
#include <memory>

namespace nadyn {

// The n tokens dealt to the ranks of `context` in contiguous blocks of n / P (the first
// n mod P ranks one more); rank 0 writes. Collective only in its use, not in its creation.
std::unique_ptr<token_exchange> share_tokens_over_ranks(const parallel_context& context,
                                                        std::size_t n);

} // namespace nadyn
