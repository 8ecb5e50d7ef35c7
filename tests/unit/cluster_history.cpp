// The cluster tracker on constructed frames: the rules of include/nadyn/model/cluster_history.hpp.
#include "nadyn/model/cluster_history.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

using namespace nadyn;

namespace {

using labels_t = std::vector<std::int64_t>;

merge_event event(std::int64_t frame, double time, std::int64_t label, std::int64_t absorbed,
                  std::int64_t size, std::int64_t absorbed_size, std::int64_t after) {
    merge_event e;
    e.frame = frame;
    e.step = frame * 10;
    e.time = time;
    e.label = label;
    e.absorbed = absorbed;
    e.size = size;
    e.absorbed_size = absorbed_size;
    e.clusters_after = after;
    return e;
}

} // namespace

TEST_CASE("clustering levels are the powers of two up to n") {
    CHECK(clustering_levels(0).empty());
    CHECK(clustering_levels(1) == std::vector<std::int64_t>{1});
    CHECK(clustering_levels(6) == std::vector<std::int64_t>{1, 2, 4});
    CHECK(clustering_levels(8) == std::vector<std::int64_t>{1, 2, 4, 8});
}

TEST_CASE("first frame: components labelled in the order of their smallest token") {
    cluster_tracker tracker(5);
    // Component ids are arbitrary (here the union-find roots would be 0, 1, 1, 0, 4).
    tracker.update({7, 3, 3, 7, 9}, 0, 0, 0.0);
    CHECK(tracker.labels() == labels_t{0, 1, 1, 0, 2});
    CHECK(tracker.last_events().empty());
}

TEST_CASE("labels stay put while the components do, whatever their ids") {
    cluster_tracker tracker(4);
    tracker.update({0, 1, 2, 3}, 0, 0, 0.0);
    tracker.update({3, 2, 1, 0}, 1, 10, 1.0); // same partition, other ids
    CHECK(tracker.labels() == labels_t{0, 1, 2, 3});
    CHECK(tracker.last_events().empty());
}

TEST_CASE("a merge keeps the larger part's label; at a tie the smaller label") {
    cluster_tracker tracker(6);
    // Clusters {0}, {1, 2, 3}, {4, 5}: labels 0, 1, 2.
    tracker.update({0, 1, 1, 1, 4, 4}, 0, 0, 0.0);
    CHECK(tracker.labels() == labels_t{0, 1, 1, 1, 2, 2});
    // {0} joins {1, 2, 3}: label 1 (3 tokens) absorbs label 0 (1 token).
    tracker.update({0, 0, 0, 0, 4, 4}, 1, 10, 0.5);
    CHECK(tracker.labels() == labels_t{1, 1, 1, 1, 2, 2});
    REQUIRE(tracker.last_events().size() == 1);
    CHECK(tracker.last_events()[0] == event(1, 0.5, 1, 0, 3, 1, 2));

    cluster_tracker tie(4);
    tie.update({0, 0, 2, 2}, 0, 0, 0.0); // two clusters of two: labels 0, 1
    tie.update({5, 5, 5, 5}, 1, 10, 2.0);
    CHECK(tie.labels() == labels_t{0, 0, 0, 0});
    REQUIRE(tie.last_events().size() == 1);
    CHECK(tie.last_events()[0] == event(1, 2.0, 0, 1, 2, 2, 1));
}

TEST_CASE("a three-way merge is two events, largest part first") {
    cluster_tracker tracker(10);
    // Labels: 0 -> {0, 1} (2 tokens), 1 -> {2..6} (5), 2 -> {7, 8, 9} (3).
    tracker.update({0, 0, 2, 2, 2, 2, 2, 7, 7, 7}, 0, 0, 0.0);
    CHECK(tracker.labels() == labels_t{0, 0, 1, 1, 1, 1, 1, 2, 2, 2});
    tracker.update(std::vector<int>(10, 0), 1, 10, 3.0);
    CHECK(tracker.labels() == labels_t(10, 1));
    REQUIRE(tracker.last_events().size() == 2);
    CHECK(tracker.last_events()[0] == event(1, 3.0, 1, 2, 5, 3, 1));
    CHECK(tracker.last_events()[1] == event(1, 3.0, 1, 0, 8, 2, 1));
}

TEST_CASE("events of one frame follow their components' smallest tokens") {
    cluster_tracker tracker(4);
    tracker.update({0, 1, 2, 3}, 0, 0, 0.0);
    tracker.update({0, 1, 0, 1}, 1, 10, 1.0); // {0, 2} and {1, 3}
    CHECK(tracker.labels() == labels_t{0, 1, 0, 1});
    REQUIRE(tracker.last_events().size() == 2);
    CHECK(tracker.last_events()[0] == event(1, 1.0, 0, 2, 1, 1, 2));
    CHECK(tracker.last_events()[1] == event(1, 1.0, 1, 3, 1, 1, 2));
}

TEST_CASE("a split keeps the label on the majority and gives the rest fresh labels") {
    cluster_tracker tracker(6);
    tracker.update({0, 0, 0, 0, 4, 4}, 0, 0, 0.0); // labels 0 (4 tokens), 1 (2 tokens)
    // {0, 1, 2, 3} splits into {0}, {1, 2, 3}: the three keep 0, token 0 gets label 2.
    tracker.update({0, 1, 1, 1, 4, 4}, 1, 10, 1.0);
    CHECK(tracker.labels() == labels_t{2, 0, 0, 0, 1, 1});
    CHECK(tracker.last_events().empty());
    CHECK(tracker.splits() == 1);
    // An even split: the part with the smaller smallest token keeps the label.
    tracker.update({0, 1, 1, 3, 4, 5}, 2, 20, 2.0); // {1, 2} | {3} and {4} | {5}
    CHECK(tracker.labels() == labels_t{2, 0, 0, 3, 1, 4});
    CHECK(tracker.splits() == 3);
    // Split and merge in one frame: token 3 (label 3) joins label 1's {4}, token 5 joins
    // label 2's {0}: two merges, no fresh label.
    tracker.update({0, 1, 1, 3, 3, 0}, 3, 30, 3.0);
    CHECK(tracker.labels() == labels_t{2, 0, 0, 1, 1, 2});
    REQUIRE(tracker.last_events().size() == 2);
    CHECK(tracker.last_events()[0] == event(3, 3.0, 2, 4, 1, 1, 3));
    CHECK(tracker.last_events()[1] == event(3, 3.0, 1, 3, 1, 1, 3));
    // A label split evenly between a merge and a lone token: label 1's tokens 3 and 4 go
    // to {1, 2, 3} and {4}; its home is {1, 2, 3} (smaller smallest token), where label 0
    // (two tokens) absorbs it, and {4} gets the fresh label 5.
    tracker.update({0, 1, 1, 1, 3, 0}, 4, 40, 4.0);
    CHECK(tracker.labels() == labels_t{2, 0, 0, 0, 5, 2});
    REQUIRE(tracker.last_events().size() == 1);
    CHECK(tracker.last_events()[0] == event(4, 4.0, 0, 1, 2, 1, 3));
    CHECK(tracker.splits() == 4);
    // Tokens that leave a cluster for another one join it without an event: token 1
    // (label 0, whose majority stays in {2, 3}) moves to {0, 5}.
    tracker.update({0, 0, 2, 2, 4, 0}, 5, 50, 5.0);
    CHECK(tracker.labels() == labels_t{2, 2, 0, 0, 5, 2});
    CHECK(tracker.last_events().empty());
}

TEST_CASE("t_k is the first time the count is at most k, NaN until then") {
    cluster_tracker tracker(5);
    tracker.update({0, 1, 2, 3, 4}, 0, 0, 0.0);
    tracker.update({0, 0, 2, 3, 4}, 1, 10, 1.0); // 4 clusters
    tracker.update({0, 0, 2, 3, 4}, 2, 20, 2.0);
    tracker.update({0, 0, 0, 3, 4}, 3, 30, 3.0); // 3
    tracker.update({0, 1, 0, 3, 4}, 4, 40, 4.0); // a split: 4 again, t_4 stays
    const auto& t = tracker.clustering_times();  // k = 1, 2, 4
    REQUIRE(t.size() == 3);
    CHECK(std::isnan(t[0]));
    CHECK(std::isnan(t[1]));
    CHECK(t[2] == 1.0);
    tracker.update({0, 0, 0, 0, 0}, 5, 50, 5.0);
    CHECK(tracker.clustering_times()[0] == 5.0);
    CHECK(tracker.clustering_times()[1] == 5.0);
}

TEST_CASE("restore continues as the uninterrupted tracker") {
    const std::vector<std::vector<int>> frames{
        {0, 1, 2, 3, 4, 5}, {0, 0, 2, 3, 4, 5},
        {0, 0, 2, 2, 4, 4}, {0, 1, 2, 2, 4, 4}, // split: fresh label
        {0, 0, 0, 0, 4, 4}, {0, 0, 0, 0, 0, 0}};
    cluster_tracker whole(6);
    std::vector<merge_event> events;
    std::vector<double> times, counts;
    std::vector<std::vector<merge_event>> later;
    for (std::size_t f = 0; f < frames.size(); ++f) {
        whole.update(frames[f], std::int64_t(f), std::int64_t(f), double(f));
        if (f <= 3) {
            events.insert(events.end(), whole.last_events().begin(), whole.last_events().end());
            times.push_back(double(f));
            std::vector<int> ids = frames[f];
            std::sort(ids.begin(), ids.end());
            counts.push_back(double(std::unique(ids.begin(), ids.end()) - ids.begin()));
        } else {
            later.push_back(whole.last_events());
        }
        if (f == 3) {
            cluster_tracker resumed(6);
            resumed.restore(whole.labels(), events, times, counts);
            for (std::size_t g = 4; g < frames.size(); ++g) {
                resumed.update(frames[g], std::int64_t(g), std::int64_t(g), double(g));
                CHECK(resumed.labels().size() == 6);
            }
            // Compared below with the whole run's frames 4 and 5.
            cluster_tracker check(6);
            check.restore(whole.labels(), events, times, counts);
            check.update(frames[4], 4, 4, 4.0);
            const auto first = check.last_events();
            check.update(frames[5], 5, 5, 5.0);
            later.push_back(first);
            later.push_back(check.last_events());
            CHECK(check.clustering_times() == resumed.clustering_times());
        }
    }
    // later: the whole run's frames 4, 5, then the restored tracker's frames 4, 5.
    REQUIRE(later.size() == 4);
    CHECK(later[0] == later[2]);
    CHECK(later[1] == later[3]);
    CHECK(!later[1].empty());
}

TEST_CASE("a frame repeating the last partition keeps labels, events none, counts recorded") {
    // The tracker skips the relabelling when the components are those of the last update:
    // the result must be what the full rules give (a merge, then the same partition twice;
    // after restore, a first update with the restored partition).
    cluster_tracker tracker(4);
    tracker.update({0, 1, 2, 3}, 0, 0, 0.0);
    tracker.update({0, 0, 2, 2}, 1, 10, 1.0);
    const labels_t merged = tracker.labels();
    CHECK(merged == labels_t{0, 0, 2, 2});
    CHECK(tracker.last_events().size() == 2);
    tracker.update({0, 0, 2, 2}, 2, 20, 2.0);
    CHECK(tracker.labels() == merged);
    CHECK(tracker.last_events().empty());
    tracker.update({0, 0, 0, 0}, 3, 30, 3.0);
    REQUIRE(tracker.last_events().size() == 1);
    CHECK(tracker.last_events()[0] == event(3, 3.0, 0, 2, 2, 2, 1));
    // t_1 at the last frame, t_2 at the merge's frame (levels 1, 2, 4).
    CHECK(tracker.clustering_times() == std::vector<double>{3.0, 1.0, 0.0});

    cluster_tracker resumed(4);
    resumed.restore(merged, {}, {0.0, 1.0}, {4.0, 2.0});
    resumed.update({0, 0, 2, 2}, 2, 20, 2.0);
    CHECK(resumed.labels() == merged);
    CHECK(resumed.last_events().empty());
    resumed.update({0, 0, 2, 2}, 3, 30, 3.0);
    CHECK(resumed.labels() == merged);
    CHECK(resumed.last_events().empty());
}

TEST_CASE("a component vector of the wrong size is refused") {
    cluster_tracker tracker(3);
    CHECK_THROWS_AS(tracker.update({0, 1}, 0, 0, 0.0), std::invalid_argument);
}
