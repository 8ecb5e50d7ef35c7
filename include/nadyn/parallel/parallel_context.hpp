#pragma once
// Where this process stands in its job: its rank and the number of ranks. A process started
// by an MPI launcher (mpirun, srun) joins the MPI job when nadyn was built with MPI
// (NADYN_MPI); a process started any other way is a job of one, without MPI, exactly as a
// build without MPI. The command line asks it who prints (rank 0) and whether to spread a
// sweep over ranks (include/nadyn/parallel/mpi_sweep.hpp).
#include <cstdint>
#include <string>

namespace nadyn {

// What the ranks of a job agreed on before anything ran (parallel_context::agree_on_start).
struct start_agreement {
    int refused_rank = -1;   // the lowest rank that refused its input; -1: none did
    int differing_rank = -1; // the lowest rank whose command differs from rank 0's; -1: none
    [[nodiscard]] bool proceed() const { return refused_rank < 0 && differing_rank < 0; }
};

class parallel_context {
  public:
    // Joins the MPI job if there is one (MPI_Init_thread); the destructor leaves it.
    parallel_context(int& argc, char**& argv);
    ~parallel_context();
    parallel_context(const parallel_context&) = delete;
    parallel_context& operator=(const parallel_context&) = delete;

    [[nodiscard]] int rank() const { return m_rank; }
    [[nodiscard]] int size() const { return m_size; }
    [[nodiscard]] bool root() const { return m_rank == 0; }
    // Whether this process is in an MPI job (false for a job of one started without mpirun).
    [[nodiscard]] bool mpi() const { return m_mpi; }
    // The ranks of this job on this rank's node, this one included (MPI_Comm_split_type with
    // MPI_COMM_TYPE_SHARED; 1 in a job of one).
    [[nodiscard]] int node_ranks() const { return m_node_ranks; }
    // This rank's share of its node: the node's cores / the ranks on the node, at least 1 and at
    // most the cores this process may run on (a launcher that binds each rank to one core
    // leaves it one). The default of the runs side by side and of the threads of a run on this
    // rank, so that the ranks of one node do not oversubscribe its cores.
    [[nodiscard]] int cores_per_rank() const;
    // The OpenMP threads of one run on this rank when nothing else asks: 0 (OpenMP's default)
    // when OMP_NUM_THREADS is set, which then wins, else cores_per_rank(). A count passed to
    // the run (its `threads` option), never set on the process.
    [[nodiscard]] int threads_per_run() const;
    // Ends the whole job at once with `status` (MPI_Abort in an MPI job, exit otherwise): for a
    // failure on one rank that the others, waiting in a collective, cannot learn of.
    [[noreturn]] void abort(int status) const;
    // Whether this nadyn was built with MPI.
    static bool built_with_mpi();

    // A collective of every rank at start-up, before anything runs or any file is touched:
    // each rank contributes whether it refused its command line and the hash of that command
    // line (command_hash), and all learn the lowest rank that refused and the lowest rank whose
    // command differs from rank 0's. Ranks started with different arguments (mpirun's
    // "-np 1 A : -np 1 B") would otherwise compute a mixture, or wait for each other forever;
    // a rank that refused takes part too, instead of leaving the others waiting. A job of one
    // agrees with itself.
    [[nodiscard]] start_agreement agree_on_start(std::uint64_t command_hash, bool refused) const;
    // The same collective once every rank has read its inputs: identical command lines can
    // still name different files (a `file:` path resolved in another working directory), so
    // the ranks compare a hash of what they read (simulation::inputs_digest, the sweep's
    // input files) and learn whether any could not read its inputs.
    [[nodiscard]] start_agreement agree_on_inputs(std::uint64_t inputs_hash, bool refused) const {
        return agree_on_start(inputs_hash, refused);
    }
    // Rank `from`'s `text` on every rank (a collective): the refusal one rank met, for rank 0
    // to report.
    [[nodiscard]] std::string text_from(int from, const std::string& text) const;
    // A hash (FNV-1a, 64 bits) of argv[1..argc-1], the subcommand and every argument; the
    // program's own path (argv[0]) may differ between nodes and is left out.
    static std::uint64_t command_hash(int argc, const char* const* argv);

  private:
    int m_rank = 0;
    int m_size = 1;
    bool m_mpi = false;
    int m_node_ranks = 1;
};

} // namespace nadyn
