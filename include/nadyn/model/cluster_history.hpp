#pragma once
// Cluster histories (docs/model.md §5.2): labels of the single-linkage clusters of
// `clusters` kept stable from frame to frame, the merge events between them, and the
// clustering times t_k.
//
// At the first frame the components get the labels 0, 1, 2, ... in the order of their
// smallest token. At every later frame, with L(k) the label token k had at the previous
// frame:
//
//   the home of a label L is the component now holding most of L's tokens (ties: the
//   component whose smallest token is smaller). The parts of a component C are its tokens
//   grouped by previous label, for the labels whose home C is; the size of a part is its
//   number of tokens.
//   - no part (C is made of tokens that split off elsewhere): C gets a fresh label (one
//     more than the largest label ever given), a split, not a merge event;
//   - one part: C keeps its label (tokens that split off from labels homed elsewhere join
//     it silently);
//   - p >= 2 parts: C takes the label of its largest part (ties: the smaller label), and
//     the p - 1 others merge into it one by one, largest first (ties: smaller label), one
//     merge event each: (label, absorbed label, size of the cluster so far, size of the
//     absorbed part). A three-way merge of parts 5, 3, 2 is (a, b, 5, 3) then (a, c, 8, 2).
//   Events of one frame are ordered by their component's smallest token.
//
// A label thus never comes back once absorbed, and labels are issued in increasing order:
// every label ever given is either alive or named in an event, which lets a resumed run
// restore the tracker from the file (restore()).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nadyn {

// One merge: at frame `frame` (time, step), the cluster `absorbed` (absorbed_size tokens)
// became part of the cluster `label` (size tokens so far); clusters_after is the frame's
// cluster count (the `clusters` observable) once all of the frame's merges are done.
struct merge_event {
    std::int64_t frame = 0, step = 0;
    double time = 0;
    std::int64_t label = 0, absorbed = 0, size = 0, absorbed_size = 0, clusters_after = 0;
    friend bool operator==(const merge_event&, const merge_event&) = default;
};

// Columns of a merge event as the files store them (int64), after its time and step.
inline constexpr const char* merge_event_columns[] = {"frame", "label",         "absorbed",
                                                      "size",  "absorbed_size", "clusters_after"};
inline constexpr std::size_t merge_event_width = 6;

// The k of t_k: 1, 2, 4, ... up to n (powers of two <= n; n = 0 gives none).
std::vector<std::int64_t> clustering_levels(std::size_t n);

class cluster_tracker {
  public:
    explicit cluster_tracker(std::size_t n);

    // One frame: `components[k]` identifies token k's component (tokens with equal values
    // are one cluster; any integers). Labels, t_k and last_events() are updated.
    void update(const std::vector<int>& components, std::int64_t frame, std::int64_t step,
                double time);

    // The labels of the tokens after the last update (empty before the first).
    [[nodiscard]] const std::vector<std::int64_t>& labels() const { return m_labels; }
    // The merge events of the last update.
    [[nodiscard]] const std::vector<merge_event>& last_events() const { return m_events; }
    // t_k for k in clustering_levels(n): the time of the first frame whose cluster count is
    // <= k; NaN while none has been.
    [[nodiscard]] const std::vector<double>& clustering_times() const { return m_times; }
    // Splits so far (components that got a fresh label).
    [[nodiscard]] std::size_t splits() const { return m_splits; }

    // The state after a recorded frame: its labels, the events up to it (for the next fresh
    // label) and the recorded (time, cluster count) of every frame up to it (for t_k).
    void restore(const std::vector<std::int64_t>& labels, const std::vector<merge_event>& events,
                 const std::vector<double>& times, const std::vector<double>& counts);

  private:
    void record_count(double time, std::size_t count);

    std::size_t m_n;
    std::vector<std::int64_t> m_labels;
    // The last update's components as given, and their count: a frame whose partition is the
    // same skips the relabelling.
    std::vector<int> m_components;
    std::size_t m_count = 0;
    std::vector<merge_event> m_events;
    std::vector<std::int64_t> m_levels;
    std::vector<double> m_times;
    std::int64_t m_next_label = 0;
    std::size_t m_splits = 0;
};

} // namespace nadyn
