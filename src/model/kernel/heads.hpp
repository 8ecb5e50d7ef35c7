#pragma once
// What attention_kernel keeps between calls, by path: each path's buffers are declared with
// the path (general.hpp, symmetric.hpp, float.hpp) and grown on first use, so that after the
// first call compute() allocates nothing of its own.
#include "float.hpp"
#include "general.hpp"
#include "symmetric.hpp"

namespace nadyn::kernel {

struct workspaces {
    head_operands head;                // heads.cpp: one head's q, k, v in double
    general_workspace<double> general; // general.cpp: the logits of the blocks
    symmetric_workspace symmetric;     // symmetric.cpp, small_d.cpp: both arithmetics' tiles
    single_workspace single;           // float.cpp: the general path in float
    std::vector<double> frame_entropy; // heads.cpp: one head's row entropies at a frame (n)
};

} // namespace nadyn::kernel
