#pragma once
// Where this process stands in its job: its rank and the number of ranks. A process started
// by an MPI launcher (mpirun, srun) joins the MPI job when nadyn was built with MPI
// (NADYN_MPI); a process started any other way is a job of one, without MPI, exactly as a
// build without MPI. The command line asks it who prints (rank 0) and whether to spread a
// sweep over ranks (include/nadyn/mpi_sweep.hpp).
namespace nadyn {

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
    // Ends the whole job at once with `status` (MPI_Abort in an MPI job, exit otherwise): for a
    // failure on one rank that the others, waiting in a collective, cannot learn of.
    [[noreturn]] void abort(int status) const;
    // Whether this nadyn was built with MPI.
    static bool built_with_mpi();

  private:
    int m_rank = 0;
    int m_size = 1;
    bool m_mpi = false;
};

} // namespace nadyn
