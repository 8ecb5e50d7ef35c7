// The paper's tables as nadyn recomputes them (issue: reproduce the paper): the numbers
// where theory gives a number.
#include "nadyn/paper_tables.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace nadyn;

TEST_CASE("initial-velocity table: scalar ODE and particles match the closed forms to 1e-10") {
    const auto rows = initial_velocity_table({});
    REQUIRE(rows.size() == scheme_table.size());
    for (const auto& row : rows) {
        CAPTURE(info(row.id).name);
        CHECK(row.rel_error_reduced < 1e-10);
        CHECK(row.rel_error_particles < 1e-10);
    }
    CHECK(initial_table_csv(rows).rfind(
              "scheme,closed_form,reduced,particles,rel_error_reduced,rel_error_particles\n", 0) ==
          0);
}

TEST_CASE("terminal-velocity table: fitted laws match theory; the predicted law fits best") {
    const terminal_table_settings settings;
    const auto rows = terminal_velocity_table(settings);
    REQUIRE(rows.size() == static_cast<std::size_t>(std::count_if(
                               scheme_table.begin(), scheme_table.end(),
                               [](const scheme_info& row) { return row.in_paper_tables; })));
    for (const auto& row : rows) {
        CAPTURE(info(row.id).name);
        CAPTURE(row.reduced.parameter);
        CAPTURE(row.particles.parameter);
        // MODEL.md section 3: rate 2, power 3, stretched coefficient 4.
        CHECK(row.theory == predicted_parameter(row.id));
        CHECK(std::abs(row.reduced.parameter / row.theory - 1.0) < 0.02);
        CHECK(std::abs(row.particles.parameter / row.theory - 1.0) < 0.05);
        CHECK(row.best_reduced == row.law);
        CHECK(row.best_particles == row.law);
        // The windows are where the velocity is well above round-off: several decades.
        CHECK(row.reduced_window.end > 5.0 * row.reduced_window.start);
    }
    CHECK(terminal_table_csv(rows).rfind(
              "scheme,law,theory,fit_reduced,fit_particles,window_start,window_end\n", 0) == 0);
}

TEST_CASE("fits recover the parameters of exact laws") {
    std::vector<double> t, exp_v, poly_v, stretched_v;
    for (int i = 1; i <= 200; ++i) {
        const double x = 0.5 * i;
        t.push_back(x);
        exp_v.push_back(3.0 * std::exp(-2.0 * x));
        poly_v.push_back(7.0 / std::pow(x, 3.0));
        const double s = std::sqrt(x + 1.0);
        stretched_v.push_back(0.5 * std::exp(-4.0 * s) / s);
    }
    const fit_window window{5.0, 100.0, true};
    CHECK(fit_law(decay_law::exponential, t, exp_v, 5, 100).parameter ==
          doctest::Approx(2.0).epsilon(1e-12));
    CHECK(fit_law(decay_law::polynomial, t, poly_v, 5, 100).parameter ==
          doctest::Approx(3.0).epsilon(1e-12));
    CHECK(fit_law(decay_law::stretched, t, stretched_v, 5, 100).parameter ==
          doctest::Approx(4.0).epsilon(1e-12));
    CHECK(std::exp(fit_law(decay_law::polynomial, t, poly_v, 5, 100).log_prefactor) ==
          doctest::Approx(7.0).epsilon(1e-10));
    CHECK(rank_laws(t, exp_v, window).front().law == decay_law::exponential);
    CHECK(rank_laws(t, poly_v, window).front().law == decay_law::polynomial);
    CHECK(rank_laws(t, stretched_v, window).front().law == decay_law::stretched);
}
