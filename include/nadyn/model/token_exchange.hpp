#pragma once
// One run shared among the processes of an MPI job by its tokens (`mpirun -np P nadyn
// simulate`), docs/model.md's kernel computed row by row:
//
// every process holds the whole state and steps it itself (the integrator, the schemes' rates
// and the projections cost O(n d) per step, nothing beside the O(n^2 d) attention); in each
// right-hand-side evaluation a process computes the attention A_k of its own contiguous block
// of query tokens k against all keys (attention_kernel::compute_rows, each row bitwise that of
// the full kernel), and the exchange fills in the other processes' blocks (an allgather of
// n d values). Every process then holds the A of one process, bitwise, so every process's
// state is the state of a run in one process, for any number of processes. One process (the
// writer) writes the file.
//
// Stop requests (SIGINT, SIGTERM: mpirun forwards them to every process) are agreed in the
// same exchange: every process stops at the same step.
//
// The interface has no MPI in it: the core library depends on it alone, and the MPI-aware
// build provides the implementation (include/nadyn/parallel/mpi_token_exchange.hpp).
#include <atomic>
#include <cstddef>

namespace nadyn {

class token_exchange {
  public:
    virtual ~token_exchange() = default;

    // This process's block of query tokens: first_token() .. first_token() + token_count() - 1.
    [[nodiscard]] virtual std::size_t first_token() const = 0;
    [[nodiscard]] virtual std::size_t token_count() const = 0;
    // Whether this process writes the run's file (exactly one does).
    [[nodiscard]] virtual bool writes() const = 0;
    // Collective. `rows` is n x width row-major with this process's block filled; on return
    // every block holds its owner's values. Also agrees on the stop request (stop_agreed()).
    virtual void share_rows(double* rows, std::size_t width) = 0;
    // Collective: the writer's value, on every process.
    virtual int writer_value(int value) = 0;
    // Collective: waits until every process has called it.
    virtual void synchronise() = 0;

    // The stop request of this process that share_rows() passes on (nullptr: none).
    void watch_stop(const std::atomic<bool>* requested) {
        m_requested = requested;
        m_agreed.store(false);
    }
    // Whether some process has requested a stop, as of the last share_rows(): the same on
    // every process at the same point of the run, so all stop at the same step.
    [[nodiscard]] const std::atomic<bool>* stop_agreed() const { return &m_agreed; }

    // Where this process's time went (seconds): computing its rows of A, waiting in the
    // exchange for the slowest process (the writer also writes frames and computes their
    // observables), and the exchange itself (the allgather of the rows and the stop's
    // agreement).
    [[nodiscard]] double compute_seconds() const { return m_compute_seconds; }
    [[nodiscard]] double waiting_seconds() const { return m_waiting_seconds; }
    [[nodiscard]] double exchange_seconds() const { return m_exchange_seconds; }
    void add_compute_seconds(double seconds) { m_compute_seconds += seconds; }
    // Processes sharing the run.
    [[nodiscard]] virtual int processes() const = 0;

  protected:
    const std::atomic<bool>* m_requested = nullptr;
    std::atomic<bool> m_agreed{false};
    double m_compute_seconds = 0.0;
    double m_waiting_seconds = 0.0;
    double m_exchange_seconds = 0.0;
};

} // namespace nadyn
