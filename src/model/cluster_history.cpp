#include "nadyn/model/cluster_history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace nadyn {

std::vector<std::int64_t> clustering_levels(std::size_t n) {
    std::vector<std::int64_t> levels;
    for (std::size_t k = 1; n > 0 && k <= n; k *= 2)
        levels.push_back(static_cast<std::int64_t>(k));
    return levels;
}

cluster_tracker::cluster_tracker(std::size_t n)
    : m_n(n), m_levels(clustering_levels(n)),
      m_times(m_levels.size(), std::numeric_limits<double>::quiet_NaN()) {}

void cluster_tracker::record_count(double time, std::size_t count) {
    for (std::size_t i = 0; i < m_levels.size(); ++i)
        if (std::isnan(m_times[i]) && static_cast<std::int64_t>(count) <= m_levels[i])
            m_times[i] = time;
}

void cluster_tracker::update(const std::vector<int>& components, std::int64_t frame,
                             std::int64_t step, double time) {
    if (components.size() != m_n)
        throw std::invalid_argument(
            "cluster_tracker::update: " + std::to_string(components.size()) + " components for " +
            std::to_string(m_n) + " tokens");
    m_events.clear();
    // The same partition as the last frame (most frames): the labels stand and nothing merged.
    if (!m_labels.empty() && components == m_components) {
        record_count(time, m_count);
        return;
    }
    // Components numbered in the order of their smallest token, whatever ids they came with.
    std::unordered_map<int, std::size_t> index_of;
    std::vector<std::size_t> component(m_n);
    for (std::size_t k = 0; k < m_n; ++k)
        component[k] = index_of.emplace(components[k], index_of.size()).first->second;
    const std::size_t count = index_of.size();
    std::vector<std::int64_t> component_label(count, -1);

    if (m_labels.empty()) {
        for (std::size_t c = 0; c < count; ++c)
            component_label[c] = static_cast<std::int64_t>(c);
        m_next_label = static_cast<std::int64_t>(count);
    } else {
        // Tokens per (previous label, component): ordered, so every choice below is fixed.
        std::map<std::pair<std::int64_t, std::size_t>, std::int64_t> shares;
        for (std::size_t k = 0; k < m_n; ++k)
            ++shares[{m_labels[k], component[k]}];
        // Each label's home: most tokens, ties to the component listed first (the map
        // visits a label's components in increasing order, and only a larger share wins).
        std::map<std::int64_t, std::pair<std::size_t, std::int64_t>> home; // label -> (c, size)
        for (const auto& [key, size] : shares) {
            const auto [it, inserted] = home.try_emplace(key.first, key.second, size);
            if (!inserted && size > it->second.second) it->second = {key.second, size};
        }
        // The parts of each component: (size, label) of the labels homed there.
        std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> parts(count);
        for (const auto& [label, where] : home)
            parts[where.first].emplace_back(where.second, label);
        for (std::size_t c = 0; c < count; ++c) {
            auto& mine = parts[c];
            if (mine.empty()) {
                component_label[c] = m_next_label++;
                ++m_splits;
                continue;
            }
            // Largest part first, ties to the smaller label.
            std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) {
                return a.first != b.first ? a.first > b.first : a.second < b.second;
            });
            const std::int64_t survivor = mine.front().second;
            std::int64_t size = mine.front().first;
            for (std::size_t p = 1; p < mine.size(); ++p) {
                merge_event event;
                event.frame = frame;
                event.step = step;
                event.time = time;
                event.label = survivor;
                event.absorbed = mine[p].second;
                event.size = size;
                event.absorbed_size = mine[p].first;
                event.clusters_after = static_cast<std::int64_t>(count);
                m_events.push_back(event);
                size += mine[p].first;
            }
            component_label[c] = survivor;
        }
    }
    m_labels.resize(m_n);
    for (std::size_t k = 0; k < m_n; ++k)
        m_labels[k] = component_label[component[k]];
    m_components = components;
    m_count = count;
    record_count(time, count);
}

void cluster_tracker::restore(const std::vector<std::int64_t>& labels,
                              const std::vector<merge_event>& events,
                              const std::vector<double>& times, const std::vector<double>& counts) {
    if (labels.size() != m_n || times.size() != counts.size())
        throw std::invalid_argument("cluster_tracker::restore: inconsistent sizes");
    m_labels = labels;
    m_components.clear(); // the next update compares with no partition
    m_events.clear();
    // Labels are issued in increasing order and vanish only in a merge event, so the
    // largest one ever issued is alive or named in an event.
    std::int64_t largest = -1;
    for (const std::int64_t label : labels)
        largest = std::max(largest, label);
    for (const merge_event& event : events)
        largest = std::max({largest, event.label, event.absorbed});
    m_next_label = largest + 1;
    std::fill(m_times.begin(), m_times.end(), std::numeric_limits<double>::quiet_NaN());
    for (std::size_t f = 0; f < times.size(); ++f)
        record_count(times[f], static_cast<std::size_t>(counts[f]));
}

} // namespace nadyn
