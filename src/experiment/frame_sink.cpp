#include "frame_sink.hpp"

#include <chrono>
#include <utility>

namespace nadyn::detail {

frame_sink::frame_sink(std::future<std::unique_ptr<trajectory_writer>> opening,
                       std::function<void(trajectory_writer&)> on_open, std::size_t n,
                       std::size_t d, bool positions)
    : m_opening(std::move(opening)), m_on_open(std::move(on_open)), m_n(n), m_d(d),
      m_positions(positions) {}

frame_sink::~frame_sink() {
    try {
        writer();
    } catch (...) {
        // Destructors do not throw; the run's own exception is the one reported.
    }
}

trajectory_writer& frame_sink::opened() {
    if (m_writer) return *m_writer;
    if (m_failed) std::rethrow_exception(m_failed);
    try {
        m_owned = m_opening.get();
    } catch (...) {
        m_failed = std::current_exception();
        throw;
    }
    m_writer = m_owned.get();
    if (m_on_open) m_on_open(*m_writer);
    return *m_writer;
}

trajectory_writer& frame_sink::writer() {
    opened();
    hand_over();
    return *m_writer;
}

void frame_sink::hand_over() {
    try {
        for (const held_frame& f : m_held) {
            const cluster_record history{f.labels.empty() ? nullptr : f.labels.data(), &f.merges,
                                         &f.clustering_times};
            m_writer->write_frame(f.step, f.time, f.theta.empty() ? nullptr : f.theta.data(),
                                  f.r.data(), f.observables, f.clusters ? &history : nullptr);
        }
    } catch (...) {
        // The frames after one the writer refused (a full disk) are not written either: the
        // file ends where it would have ended without them held.
        m_held.clear();
        throw;
    }
    m_held.clear();
}

void frame_sink::write_frame(std::int64_t step, double time, const double* theta, const double* r,
                             const std::vector<double>& observables,
                             const cluster_record* clusters) {
    if (!m_writer && !m_failed &&
        m_opening.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
        opened();
    if (m_writer) {
        hand_over();
        m_writer->write_frame(step, time, theta, r, observables, clusters);
        return;
    }
    // Copied whole before it is kept: a copy that runs out of memory leaves no half frame.
    held_frame f;
    f.step = step;
    f.time = time;
    if (theta && m_positions) f.theta.assign(theta, theta + m_n * m_d);
    f.r.assign(r, r + m_n);
    f.observables = observables;
    if (clusters) {
        f.clusters = true;
        if (clusters->labels) f.labels.assign(clusters->labels, clusters->labels + m_n);
        if (clusters->merges) f.merges = *clusters->merges;
        if (clusters->clustering_times) f.clustering_times = *clusters->clustering_times;
    }
    m_held.push_back(std::move(f));
}

} // namespace nadyn::detail
