// parallel_context of a build without MPI: a job of one. Started by an MPI launcher anyway,
// it still reads its rank and size from the launcher's environment, so that the command line
// can refuse to run P copies of the same command (rank 0 says why, once).
#include "nadyn/parallel/parallel_context.hpp"

#include <cstdlib>

namespace nadyn {

namespace {

int from_environment(const char* const* names, int otherwise) {
    for (const char* const* name = names; *name; ++name)
        if (const char* value = std::getenv(*name); value && *value) return std::atoi(value);
    return otherwise;
}

} // namespace

parallel_context::parallel_context(int&, char**&) {
    static const char* const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", nullptr};
    static const char* const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", nullptr};
    m_rank = from_environment(ranks, 0);
    m_size = from_environment(sizes, 1);
}

parallel_context::~parallel_context() = default;

void parallel_context::abort(int status) const {
    std::exit(status);
}

bool parallel_context::built_with_mpi() {
    return false;
}

start_agreement parallel_context::agree_on_start(std::uint64_t, bool refused) const {
    // Without MPI every process is a job of its own (the command line refuses to run P copies).
    start_agreement agreement;
    if (refused) agreement.refused_rank = m_rank;
    return agreement;
}

std::string parallel_context::text_from(int, const std::string& text) const {
    return text;
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
