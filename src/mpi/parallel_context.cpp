// parallel_context of a build with MPI. MPI is initialised only when an MPI launcher started
// the process: started by hand, nadyn runs as a job of one without touching MPI (an Open MPI
// singleton would fork an orted daemon for nothing and change how Ctrl-C reaches the run).
#include "nadyn/parallel_context.hpp"

#include <mpi.h>

#include <cstdlib>
#include <initializer_list>

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

} // namespace nadyn
