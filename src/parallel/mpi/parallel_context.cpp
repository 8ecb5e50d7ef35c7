// parallel_context of a build with MPI. MPI is initialised only when an MPI launcher started
// the process: started by hand, nadyn runs as a job of one without touching MPI (an Open MPI
// singleton would fork an orted daemon for nothing and change how Ctrl-C reaches the run).
#include "nadyn/parallel/parallel_context.hpp"

#include <mpi.h>

#include <cstdlib>
#include <initializer_list>
#include <vector>

namespace nadyn {

namespace {

bool started_by_launcher() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
        if (const char* value = std::getenv(name); value && *value) return true;
    return false;
}

} // namespace

parallel_context::parallel_context(int& argc, char**& argv) {
    if (!started_by_launcher()) return;
    // FUNNELED: a rank's runs compute on threads of their own, only its main thread calls MPI.
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    // A failed call or a dead rank ends the whole job (Open MPI's default, stated here): the
    // sweep file is flushed after every run, so it stays resumable.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m_size);
    // The ranks that share this rank's node (its memory): what its cores are divided among.
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &m_node_ranks);
    MPI_Comm_free(&node);
    m_mpi = true;
}

parallel_context::~parallel_context() {
    int finalized = 0;
    if (m_mpi && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
}

void parallel_context::abort(int status) const {
    if (m_mpi) MPI_Abort(MPI_COMM_WORLD, status);
    std::exit(status);
}

bool parallel_context::built_with_mpi() {
    return true;
}

start_agreement parallel_context::agree_on_start(std::uint64_t command_hash, bool refused) const {
    start_agreement agreement;
    if (!m_mpi) {
        if (refused) agreement.refused_rank = m_rank;
        return agreement;
    }
    // Every rank's (hash, refused), gathered everywhere: each rank then reaches the same
    // verdict without a second round.
    const std::uint64_t mine[2] = {command_hash, refused ? 1U : 0U};
    std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(m_size));
    MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = m_size - 1; r >= 0; --r) {
        const auto at = 2 * static_cast<std::size_t>(r);
        if (all[at + 1] != 0) agreement.refused_rank = r;
        if (all[at] != all[0]) agreement.differing_rank = r;
    }
    return agreement;
}

std::string parallel_context::text_from(int from, const std::string& text) const {
    if (!m_mpi) return text;
    std::uint64_t size = m_rank == from ? text.size() : 0;
    MPI_Bcast(&size, 1, MPI_UINT64_T, from, MPI_COMM_WORLD);
    std::string out = m_rank == from ? text : std::string(size, '\0');
    MPI_Bcast(out.data(), static_cast<int>(size), MPI_CHAR, from, MPI_COMM_WORLD);
    return out;
}

std::uint64_t parallel_context::command_hash(int argc, const char* const* argv) {
    std::uint64_t hash = 14695981039346656037ULL;
    for (int i = 1; i < argc; ++i) {
        for (const char* c = argv[i]; *c; ++c) {
            hash ^= static_cast<unsigned char>(*c);
            hash *= 1099511628211ULL;
        }
        hash ^= 0x100; // the end of an argument: "a b" and "ab" differ
        hash *= 1099511628211ULL;
    }
    return hash;
}

} // namespace nadyn
