// The token exchange over the ranks of MPI_COMM_WORLD
// (include/nadyn/parallel/mpi_token_exchange.hpp).
#include "nadyn/parallel/mpi_token_exchange.hpp"

#include "nadyn/model/error.hpp"

#include <mpi.h>

#include <chrono>
#include <limits>
#include <string>
#include <vector>

namespace nadyn {

namespace {

class mpi_token_exchange final : public token_exchange {
  public:
    mpi_token_exchange(const parallel_context& context, std::size_t n)
        : m_rank(context.rank()), m_size(context.size()) {
        const auto ranks = static_cast<std::size_t>(m_size);
        m_first.resize(ranks + 1);
        for (std::size_t r = 0; r < ranks; ++r)
            m_first[r + 1] = m_first[r] + n / ranks + (r < n % ranks ? 1 : 0);
    }

    [[nodiscard]] std::size_t first_token() const override {
        return m_first[static_cast<std::size_t>(m_rank)];
    }
    [[nodiscard]] std::size_t token_count() const override {
        return m_first[static_cast<std::size_t>(m_rank) + 1] - first_token();
    }
    [[nodiscard]] bool writes() const override { return m_rank == 0; }
    [[nodiscard]] int processes() const override { return m_size; }

    void share_rows(double* rows, std::size_t width) override {
        // The barrier separates waiting for the slowest rank from the exchange's own cost
        // (a few microseconds on shared memory, against milliseconds of rows at large n).
        const auto arrived = std::chrono::steady_clock::now();
        MPI_Barrier(MPI_COMM_WORLD);
        const auto started = std::chrono::steady_clock::now();
        m_waiting_seconds += std::chrono::duration<double>(started - arrived).count();
        if (width != m_width) {
            m_width = width;
            m_counts.resize(static_cast<std::size_t>(m_size));
            m_displacements.resize(static_cast<std::size_t>(m_size));
            for (std::size_t r = 0; r < m_counts.size(); ++r) {
                const std::size_t count = (m_first[r + 1] - m_first[r]) * width;
                const std::size_t displacement = m_first[r] * width;
                if (count > std::numeric_limits<int>::max() ||
                    displacement > std::numeric_limits<int>::max())
                    throw input_error("a rank's block of " + std::to_string(count) +
                                      " values exceeds MPI's int counts; use more ranks");
                m_counts[r] = static_cast<int>(count);
                m_displacements[r] = static_cast<int>(displacement);
            }
        }
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rows, m_counts.data(),
                       m_displacements.data(), MPI_DOUBLE, MPI_COMM_WORLD);
        int mine = m_requested && m_requested->load() ? 1 : 0, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        if (any) m_agreed.store(true);
        m_exchange_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }

    int writer_value(int value) override {
        MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
        return value;
    }

    void synchronise() override { MPI_Barrier(MPI_COMM_WORLD); }

  private:
    int m_rank, m_size;
    std::vector<std::size_t> m_first; // rank r owns tokens m_first[r] .. m_first[r + 1] - 1
    std::size_t m_width = 0;
    std::vector<int> m_counts, m_displacements;
};

} // namespace

std::unique_ptr<token_exchange> share_tokens_over_ranks(const parallel_context& context,
                                                        std::size_t n) {
    return std::make_unique<mpi_token_exchange>(context, n);
}

} // namespace nadyn
