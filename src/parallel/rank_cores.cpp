// A rank's share of its node's cores (parallel_context::cores_per_rank), with MPI or without.
#include "nadyn/experiment/run_scheduler.hpp"
#include "nadyn/parallel/parallel_context.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace nadyn {

int parallel_context::cores_per_rank() const {
    // available_cores() is this process's affinity mask: all of the node's cores when the
    // launcher binds no rank, one when it binds each rank to a core (Open MPI's default for two
    // ranks), a socket's when it binds to sockets. The node's share caps it in the first case,
    // the mask in the others.
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const int node_cores = online > 0 ? static_cast<int>(online) : available_cores();
    return std::max(1, std::min(available_cores(), node_cores / std::max(1, m_node_ranks)));
}

int parallel_context::threads_per_run() const {
    if (const char* value = std::getenv("OMP_NUM_THREADS"); value && *value) return 0;
    return cores_per_rank();
}

} // namespace nadyn
