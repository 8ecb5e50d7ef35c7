// Unselectable keys (docs/model.md §12): the linear programs against the geometry they
// decide, a brute-force hull test in the plane, and the opt-in observable of a run.
#include "test_support.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/experiment/unselectable.hpp"
#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <numbers>

using namespace nadyn;

namespace {

std::vector<double> gaussian_points(std::size_t n, std::size_t d, std::uint64_t seed) {
    random_source source(seed);
    std::vector<double> points(n * d);
    for (double& x : points)
        x = source.normal();
    return points;
}

// Independent of linear programming: in the plane, point j can be given a strictly highest
// score by some query q exactly when the vectors p_i - p_j (i != j) lie in an open half-plane,
// i.e. when their sorted angles leave a gap larger than pi.
bool selectable_by_angles(const std::vector<double>& p, std::size_t n, std::size_t j) {
    std::vector<double> angles;
    for (std::size_t i = 0; i < n; ++i)
        if (i != j) angles.push_back(std::atan2(p[2 * i + 1] - p[2 * j + 1], p[2 * i] - p[2 * j]));
    std::sort(angles.begin(), angles.end());
    double widest = angles.front() + 2.0 * std::numbers::pi - angles.back();
    for (std::size_t i = 1; i < angles.size(); ++i)
        widest = std::max(widest, angles[i] - angles[i - 1]);
    return widest > std::numbers::pi;
}

} // namespace

TEST_CASE("keys on a sphere are all selectable: the fraction is exactly 0") {
    for (std::size_t d : {2, 3, 8, 32}) {
        for (std::size_t n : {16, 64, 256}) {
            CAPTURE(d);
            CAPTURE(n);
            state_type x = testing::uniform_start(n, d, 100 + d + n);
            CHECK(unselectable_fraction(x.data(), n, d) == 0.0);
        }
    }
}

TEST_CASE("a point inside a triangle is the one unselectable key of four") {
    // The triangle (0,0), (4,0), (0,4) and (1,1) inside it.
    const std::vector<double> keys{0, 0, 4, 0, 1, 1, 0, 4};
    CHECK(unselectable_fraction(keys.data(), 4, 2) == 0.25);
    CHECK(unselectable_key(keys.data(), 4, 2, 2));
    for (std::size_t j : {0, 1, 3})
        CHECK_FALSE(unselectable_key(keys.data(), 4, 2, j));
    // On an edge (2,0) it is still a convex combination of the others: unselectable.
    const std::vector<double> edge{0, 0, 4, 0, 2, 0, 0, 4};
    CHECK(unselectable_fraction(edge.data(), 4, 2) == 0.25);
    // Moved just outside the triangle, beyond the edge x + y = 4: a vertex again.
    const std::vector<double> outside{0, 0, 4, 0, 2, 2.0000000001, 0, 4};
    CHECK(unselectable_fraction(outside.data(), 4, 2) == 0.0);
}

TEST_CASE("duplicates count as unselectable, single keys and pairs as selectable") {
    const std::vector<double> twins{1, 2, 1, 2, 5, -1};
    CHECK(unselectable_fraction(twins.data(), 3, 2) == doctest::Approx(2.0 / 3.0));
    const std::vector<double> one{3, 4};
    CHECK(unselectable_fraction(one.data(), 1, 2) == 0.0);
    const std::vector<double> pair{3, 4, -1, 0};
    CHECK(unselectable_fraction(pair.data(), 2, 2) == 0.0);
    CHECK(unselectable_fraction(nullptr, 0, 2) == 0.0);
}

TEST_CASE("linear programs agree with the angle test on Gaussian points in the plane") {
    for (std::size_t n : {3, 5, 8, 13, 30}) {
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            CAPTURE(n);
            CAPTURE(seed);
            const std::vector<double> p = gaussian_points(n, 2, seed);
            std::size_t unselectable = 0;
            for (std::size_t j = 0; j < n; ++j) {
                const bool by_angles = !selectable_by_angles(p, n, j);
                CHECK(unselectable_key(p.data(), n, 2, j) == by_angles);
                unselectable += by_angles ? 1 : 0;
            }
            CHECK(unselectable_fraction(p.data(), n, 2) ==
                  static_cast<double>(unselectable) / static_cast<double>(n));
        }
    }
}

TEST_CASE("the keys are K y: an invertible K keeps them on an ellipsoid, a rank-1 K on a line") {
    const std::size_t n = 20, d = 3;
    state_type x = testing::uniform_start(n, d, 9);
    attention_weights weights;
    random_source source(4);
    weights.heads.front().K = testing::random_matrix(source, d, 1.0);
    std::vector<double> keys;
    CHECK(unselectable_fraction(x.data(), n, d, weights, keys) == 0.0);
    // K = e_1 e_1^T: key_j = (theta_j1, 0, 0); only the two extreme keys are selectable.
    weights.heads.front().K = matrix::Zero(3, 3);
    weights.heads.front().K(0, 0) = 1.0;
    CHECK(unselectable_fraction(x.data(), n, d, weights, keys) ==
          doctest::Approx(double(n - 2) / double(n)));
    // Two heads: the mean of their fractions.
    weights.heads.push_back(attention_head{});
    CHECK(unselectable_fraction(x.data(), n, d, weights, keys) ==
          doctest::Approx(0.5 * double(n - 2) / double(n)));
}

TEST_CASE("--observe unselectable: written only when asked; 0 on the sphere; no-norm's keys") {
    const auto dir = std::filesystem::path(NADYN_TEST_TMPDIR) / "unselectable";
    std::filesystem::create_directories(dir);
    run_config c;
    c.n = 12;
    c.d = 2;
    c.integration = {integrator_kind::rk4, 1.0, 0.05, 1e-8, 1e-10, 5};
    {
        const std::string path = (dir / "plain.h5").string();
        simulation(c).run_to_file(path, true);
        const trajectory_reader file(path);
        const auto names = file.observable_names();
        CHECK(std::find(names.begin(), names.end(), "unselectable") == names.end());
    }
    c.observe = {"unselectable"};
    for (scheme id : {scheme::pre_ln, scheme::no_norm}) {
        CAPTURE(info(id).name);
        c.scheme_id = id;
        const std::string path = (dir / (std::string(info(id).name) + ".h5")).string();
        simulation(c).run_to_file(path, true);
        const trajectory_reader file(path);
        CHECK(file.parameters().text("observe") == "unselectable");
        const auto fractions = file.observable("unselectable");
        REQUIRE(fractions.size() == file.frame_count());
        for (std::size_t f = 0; f < fractions.size(); ++f) {
            // The keys attention used: the directions (pre-ln, on the circle: 0), or the
            // tokens r_j theta_j (no-norm), recomputed here from the frame.
            std::vector<double> tokens = file.positions(f);
            const auto r = file.magnitudes(f);
            if (id == scheme::no_norm)
                for (std::size_t k = 0; k < c.n; ++k)
                    for (std::size_t a = 0; a < c.d; ++a)
                        tokens[k * c.d + a] *= r[k];
            const double expected =
                id == scheme::pre_ln ? 0.0 : unselectable_fraction(tokens.data(), c.n, c.d);
            CHECK(fractions[f] == expected);
        }
    }
}
