// Unselectable keys (docs/model.md §12) against an exact hull test written here, independent
// of the production code: integer coordinates, exact integer arithmetic (__int128). By
// Carathéodory's theorem a point lies in the convex hull of a set in R^d exactly when it lies
// in the hull of an affinely independent subset of at most d + 1 of its points, so key j is
// unselectable exactly when it equals another key, or lies on a segment, in a triangle or (d
// = 3) in a tetrahedron of other keys that are affinely independent. The inputs are integers
// below 2^53, so the doubles the production code reads are the exact points.
#include "nadyn/experiment/unselectable.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

using namespace nadyn;

namespace {

__extension__ typedef __int128 wide;       // GCC and Clang; __extension__: no -Wpedantic
using point = std::array<std::int64_t, 3>; // d = 2: the third coordinate is 0

point minus(const point& a, const point& b) {
    return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}

std::array<wide, 3> cross(const point& a, const point& b) {
    return {wide(a[1]) * b[2] - wide(a[2]) * b[1], wide(a[2]) * b[0] - wide(a[0]) * b[2],
            wide(a[0]) * b[1] - wide(a[1]) * b[0]};
}

wide dot(const std::array<wide, 3>& a, const std::array<wide, 3>& b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

wide dot(const point& a, const point& b) {
    return wide(a[0]) * b[0] + wide(a[1]) * b[1] + wide(a[2]) * b[2];
}

bool is_zero(const std::array<wide, 3>& v) {
    return v[0] == 0 && v[1] == 0 && v[2] == 0;
}

wide det(const point& a, const point& b, const point& c) {
    const auto bc = cross(b, c);
    return wide(a[0]) * bc[0] + wide(a[1]) * bc[1] + wide(a[2]) * bc[2];
}

// p on the segment [a, b] (a != b).
bool on_segment(const point& p, const point& a, const point& b) {
    const point ab = minus(b, a), ap = minus(p, a);
    if (!is_zero(cross(ab, ap))) return false;
    const wide t = dot(ap, ab);
    return t >= 0 && t <= dot(ab, ab);
}

// p in the triangle a, b, c (not collinear): in its plane and on the inner side of each edge.
bool in_triangle(const point& p, const point& a, const point& b, const point& c) {
    const auto normal = cross(minus(b, a), minus(c, a));
    if (is_zero(normal)) return false; // collinear: its segments are tested on their own
    if (dot(normal, {wide(p[0] - a[0]), wide(p[1] - a[1]), wide(p[2] - a[2])}) != 0) return false;
    const std::array<std::pair<point, point>, 3> edges{{{a, b}, {b, c}, {c, a}}};
    for (const auto& [from, to] : edges) {
        // The tests' coordinate differences stay below 2^30, so every product fits in
        // __int128.
        const auto side = cross(minus(to, from), minus(p, from));
        if (dot(normal, side) < 0) return false;
    }
    return true;
}

// p in the tetrahedron a, b, c, e (not coplanar): each barycentric determinant has the sign
// of the whole or is 0.
bool in_tetrahedron(const point& p, const point& a, const point& b, const point& c,
                    const point& e) {
    const wide whole = det(minus(b, a), minus(c, a), minus(e, a));
    if (whole == 0) return false;
    const std::array<wide, 4> parts{
        det(minus(b, p), minus(c, p), minus(e, p)), det(minus(p, a), minus(c, a), minus(e, a)),
        det(minus(b, a), minus(p, a), minus(e, a)), det(minus(b, a), minus(c, a), minus(p, a))};
    for (wide part : parts)
        if ((whole > 0 && part < 0) || (whole < 0 && part > 0)) return false;
    return true;
}

bool in_hull_of_others(const std::vector<point>& keys, std::size_t j) {
    std::vector<point> others;
    for (std::size_t i = 0; i < keys.size(); ++i)
        if (i != j) others.push_back(keys[i]);
    const point& p = keys[j];
    const std::size_t m = others.size();
    for (std::size_t a = 0; a < m; ++a) {
        if (others[a] == p) return true;
        for (std::size_t b = a + 1; b < m; ++b) {
            if (others[a] != others[b] && on_segment(p, others[a], others[b])) return true;
            for (std::size_t c = b + 1; c < m; ++c) {
                if (in_triangle(p, others[a], others[b], others[c])) return true;
                for (std::size_t e = c + 1; e < m; ++e)
                    if (in_tetrahedron(p, others[a], others[b], others[c], others[e])) return true;
            }
        }
    }
    return false;
}

std::vector<double> as_keys(const std::vector<point>& points, std::size_t d) {
    std::vector<double> keys;
    for (const point& p : points)
        for (std::size_t c = 0; c < d; ++c)
            keys.push_back(static_cast<double>(p[c]));
    return keys;
}

// Every key decided as the exact test decides it, and the fraction is their count over n.
void check_against_exact(const std::vector<point>& points, std::size_t d) {
    const std::vector<double> keys = as_keys(points, d);
    const std::size_t n = points.size();
    std::size_t inside = 0;
    for (std::size_t j = 0; j < n; ++j) {
        CAPTURE(j);
        const bool exact = in_hull_of_others(points, j);
        inside += exact ? 1 : 0;
        CHECK(unselectable_key(keys.data(), n, d, j) == exact);
    }
    CHECK(unselectable_fraction(keys.data(), n, d) ==
          static_cast<double>(inside) / static_cast<double>(n));
}

} // namespace

TEST_CASE("the exact reference itself: a triangle, its edge, a tetrahedron") {
    CHECK(in_hull_of_others({{0, 0, 0}, {4, 0, 0}, {1, 1, 0}, {0, 4, 0}}, 2));
    CHECK(in_hull_of_others({{0, 0, 0}, {4, 0, 0}, {2, 0, 0}, {0, 4, 0}}, 2));
    CHECK_FALSE(in_hull_of_others({{0, 0, 0}, {4, 0, 0}, {3, 2, 0}, {0, 4, 0}}, 2));
    CHECK(in_hull_of_others({{0, 0, 0}, {4, 0, 0}, {0, 4, 0}, {0, 0, 4}, {1, 1, 1}}, 4));
    CHECK(in_hull_of_others({{0, 0, 0}, {4, 0, 0}, {0, 4, 0}, {0, 0, 4}, {0, 2, 2}}, 4));
    CHECK_FALSE(in_hull_of_others({{0, 0, 0}, {4, 0, 0}, {0, 4, 0}, {0, 0, 4}, {2, 2, 1}}, 4));
}

TEST_CASE("exact in d = 2 and 3: random integer keys in a small box (ties, edges, twins)") {
    std::mt19937_64 engine(24);
    for (std::size_t d : {2, 3}) {
        for (std::size_t n : {4, 7, 12, 16}) {
            for (int trial = 0; trial < 6; ++trial) {
                CAPTURE(d);
                CAPTURE(n);
                CAPTURE(trial);
                std::uniform_int_distribution<std::int64_t> coordinate(-3, 3);
                std::vector<point> points(n, point{0, 0, 0});
                for (point& p : points)
                    for (std::size_t c = 0; c < d; ++c)
                        p[c] = coordinate(engine);
                check_against_exact(points, d);
            }
        }
    }
}

TEST_CASE("exact in d = 2: keys on a parabola far from the origin are all vertices") {
    // (x, x^2) with x = 2^20 + i: strictly convex, every key selectable, yet each lies within
    // 1 (of coordinates ~2^40) of the chord of its neighbours: a relative margin of 1e-12.
    std::vector<point> points;
    for (std::int64_t i = 0; i < 12; ++i) {
        const std::int64_t x = (std::int64_t(1) << 20) + i;
        points.push_back({x, x * x, 0});
    }
    check_against_exact(points, 2);
    // Lifting one key by 1 onto the chord of its neighbours (2 x^2 = (x-1)^2 + (x+1)^2 - 2)
    // and by 2 above it: on the chord it is in their hull, above it inside the polygon.
    points[5][1] += 1;
    check_against_exact(points, 2);
    points[5][1] += 1;
    check_against_exact(points, 2);
}

TEST_CASE("exact in d = 3: keys on a paraboloid far from the origin are all vertices") {
    // (x, y, x^2 + y^2) on a 4 x 4 grid offset by 2^12: strictly convex, all selectable.
    std::vector<point> points;
    const std::int64_t offset = std::int64_t(1) << 12;
    for (std::int64_t a = 0; a < 4; ++a)
        for (std::int64_t b = 0; b < 4; ++b) {
            const std::int64_t x = offset + a, y = offset + 2 * b;
            points.push_back({x, y, x * x + y * y});
        }
    check_against_exact(points, 3);
    // An inner grid key raised by 3, above the mean (+2.5) of its four grid neighbours:
    // inside the hull.
    points[5][2] += 3;
    check_against_exact(points, 3);
}
