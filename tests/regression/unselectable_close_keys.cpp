// `--observe unselectable` counted selectable keys as unselectable when
// the keys were close together (distinct keys 3e-4 apart on an arc: 0.44 instead of 0; a
// clustering run at t = 5: 0.125 instead of 0). GLPK's objective was trusted at its
// tolerance (~1e-7), while a key's margin on a circle is the sagitta of its chord, ~1e-8
// here. Distinct points of a circle are all vertices of their hull (a strictly convex
// curve), so the answer is exactly 0 in both cases.
#include "test_support.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/experiment/unselectable.hpp"
#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

using namespace nadyn;

TEST_CASE("distinct keys 3e-4 apart on an arc are all selectable") {
    for (std::size_t n : {8, 16, 25, 64}) {
        CAPTURE(n);
        std::vector<double> keys;
        for (std::size_t k = 0; k < n; ++k) {
            const double angle = 0.3 + 3e-4 * static_cast<double>(k);
            keys.push_back(std::cos(angle));
            keys.push_back(std::sin(angle));
        }
        CHECK(unselectable_fraction(keys.data(), n, 2) == 0.0);
        // The same arc in R^3 (a great circle of the sphere, tilted): still 0.
        std::vector<double> tilted;
        for (std::size_t k = 0; k < n; ++k) {
            const double x = keys[2 * k], y = keys[2 * k + 1];
            tilted.insert(tilted.end(), {x, 0.6 * y, 0.8 * y});
        }
        CHECK(unselectable_fraction(tilted.data(), n, 3) == 0.0);
    }
}

TEST_CASE("a clustering run: late frames whose distinct keys are close are all selectable") {
    // Pre-LN with the identity weights: the keys are the directions theta_j on the circle.
    // Eight tokens start in a cap of radius 0.01 and gather; by t = 5 they span ~3e-3 rad,
    // neighbours ~1e-4 apart, yet distinct: every key is a vertex, the fraction exactly 0
    // at every frame (0.25 before the fix at the late frames).
    const auto dir = std::filesystem::path(NADYN_TEST_TMPDIR) / "unselectable_close_keys";
    std::filesystem::create_directories(dir);
    run_config c;
    c.scheme_id = scheme::pre_ln;
    c.n = 8;
    c.d = 2;
    c.beta = 1.0;
    c.seed = 1;
    c.init = initial_spec::parse("cap:0.01");
    c.observe = {"unselectable"};
    c.integration = {integrator_kind::rk4, 5.0, 0.01, 1e-8, 1e-10, 50};
    const std::string path = (dir / "clustering.h5").string();
    simulation(c).run_to_file(path, true);
    const trajectory_reader file(path);
    const auto fractions = file.observable("unselectable");
    const auto min_cos = file.observable("min_cos");
    REQUIRE(fractions.size() == file.frame_count());
    REQUIRE(min_cos.back() > 1.0 - 1e-5); // close: every pair within ~4e-3 rad
    for (std::size_t f = 0; f < fractions.size(); ++f) {
        CAPTURE(f);
        // Distinct keys (no two rows of the frame equal), so all of them are vertices.
        const std::vector<double> theta = file.positions(f);
        for (std::size_t k = 0; k < c.n; ++k)
            for (std::size_t l = k + 1; l < c.n; ++l)
                REQUIRE((theta[2 * k] != theta[2 * l] || theta[2 * k + 1] != theta[2 * l + 1]));
        CHECK(fractions[f] == 0.0);
    }
}
