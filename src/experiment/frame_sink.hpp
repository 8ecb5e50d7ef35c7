#pragma once
// Where a run's frames go: a trajectory writer that is open already, or one still being opened
// on another thread. A new file's creation and header (about 65 HDF5 objects and 230
// attributes: 4 ms, a ninth of a small run's whole process) then overlap the run's first
// steps instead of preceding them. The frames computed before the writer is open are held,
// in order, and handed to it as soon as it is; the file is the one the run writes when it
// opens the file first (HDF5 is called under its process-wide lock, src/files/hdf5.hpp, so
// the two threads never call it at once). The disk space of a held frame is reserved when it
// is handed over: a disk that cannot take it stops the run at the same frame, later in time.
#include "nadyn/files/h5md.hpp"

#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <vector>

namespace nadyn::detail {

class frame_sink {
  public:
    // A writer that is open (not owned).
    explicit frame_sink(trajectory_writer& open) : m_writer(&open) {}
    // A writer being opened (`opening`: its creation and header, on another thread). on_open
    // (may be empty) is called on the run's thread when the writer is taken (its warnings).
    // n and d: the frames' shape; positions: whether the file records them (else a held frame
    // keeps no copy of theta).
    frame_sink(std::future<std::unique_ptr<trajectory_writer>> opening,
               std::function<void(trajectory_writer&)> on_open, std::size_t n, std::size_t d,
               bool positions);
    // Waits for an opening still under way and hands the writer the frames still held (errors
    // ignored), as the writer's own destructor writes the frames it holds: for a run ended by
    // an exception that did not reach finish().
    ~frame_sink();
    frame_sink(const frame_sink&) = delete;
    frame_sink& operator=(const frame_sink&) = delete;

    // trajectory_writer::write_frame, or the frame held (copied) while the writer is opening.
    void write_frame(std::int64_t step, double time, const double* theta, const double* r,
                     const std::vector<double>& observables, const cluster_record* clusters);
    // The writer with every frame given so far handed to it: waits for the opening, and throws
    // its exception if it failed (the file's error comes before anything the run met after).
    trajectory_writer& writer();
    // The writer, waited for but without the held frames (for the run's error paths): throws
    // the opening's exception if it failed.
    trajectory_writer& opened();

  private:
    struct held_frame {
        std::int64_t step = 0;
        double time = 0;
        std::vector<double> theta, r, observables;
        bool clusters = false;
        std::vector<std::int64_t> labels;
        std::vector<merge_event> merges;
        std::vector<double> clustering_times;
    };
    void hand_over();

    trajectory_writer* m_writer = nullptr;
    std::unique_ptr<trajectory_writer> m_owned;
    std::future<std::unique_ptr<trajectory_writer>> m_opening;
    std::exception_ptr m_failed;
    std::function<void(trajectory_writer&)> m_on_open;
    std::size_t m_n = 0, m_d = 0;
    bool m_positions = true;
    std::vector<held_frame> m_held;
};

} // namespace nadyn::detail
