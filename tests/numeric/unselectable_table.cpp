// `nadyn table unselectable` (docs/model.md §12): the numbers geometry fixes.
#include "nadyn/unselectable_table.hpp"

#include <doctest/doctest.h>

using namespace nadyn;

TEST_CASE(
    "unselectable table: 0 on the sphere, 0 for affinely independent keys, > 0 in the plane") {
    unselectable_table_settings settings;
    settings.ns = {8, 16};
    settings.ds = {2, 16};
    settings.seeds = {1, 2};
    const auto rows = unselectable_table(settings);
    REQUIRE(rows.size() == 4);
    for (const auto& row : rows) {
        CAPTURE(row.n);
        CAPTURE(row.d);
        // LayerNorm's scaling puts the keys on a sphere: a strictly convex surface.
        CHECK(row.sphere_mean == 0.0);
        CHECK(row.sphere_spread == 0.0);
        // n <= d + 1 Gaussian points are affinely independent (almost surely): every one
        // is a vertex of their simplex.
        if (row.n <= row.d + 1) CHECK(row.raw_mean == 0.0);
        // In the plane most of 8 or 16 Gaussian points are inside their hull.
        if (row.d == 2) CHECK(row.raw_mean > 0.2);
    }
    CHECK(unselectable_table_csv(rows).rfind(
              "n,d,seeds,raw_mean,raw_spread,sphere_mean,sphere_spread\n", 0) == 0);
}
