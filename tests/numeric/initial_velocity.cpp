// gamma'(0) from the n-particle right-hand side against the closed forms of
// docs/model.md §3 and its reference numbers (beta = 5, n = d = 256).
#include "test_support.hpp"

#include "nadyn/model/observables.hpp"
#include "nadyn/model/reduced.hpp"

#include <doctest/doctest.h>

using namespace nadyn;

namespace {

double particle_initial_velocity(scheme id, std::size_t n, double beta, double r0, double alpha) {
    const std::size_t d = n;
    model_parameters model{n, d, beta, false, {id, alpha, 1.0}};
    attention_system system(model, attention_weights{});
    state_type x = testing::symmetric_start(n, d, r0), dxdt(x.size());
    system(x, dxdt, 0.0);
    observables_calculator calculator(n, d, std::vector<double>(x.begin(), x.begin() + n * d),
                                      1e-3);
    return calculator.compute_moments(x.data(), dxdt.data()).velocity;
}

} // namespace

TEST_CASE("gamma'(0) of every scheme matches the closed form and docs/model.md §3.6") {
    // docs/model.md §3.6: beta = 5, n = 256, r0 = alpha = 1.
    const double linear_reference = 4.957696482805e-03;
    const double root_reference = 1.339855973539e-02;
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        const double particles = particle_initial_velocity(row.id, 256, 5.0, 1.0, 1.0);
        reduced_parameters p{{row.id, 1.0, 1.0}, 256.0, 5.0, 1.0};
        const double closed = initial_velocity_closed_form(p);
        // The RHS sums 256 terms of size ~1/Z: round-off is ~1e-14 relative.
        CHECK(testing::relative_error(particles, closed) < 1e-10);
        const bool uses_norm = row.id == scheme::peri_ln || row.id == scheme::ngpt;
        // The reference numbers carry 13 significant digits.
        CHECK(testing::relative_error(closed, uses_norm ? root_reference : linear_reference) <
              1e-12);
        // The scalar ODE's own right-hand side at u = 1 gives the same number.
        CHECK(testing::relative_error(-reduced_rhs(p, 0.0, 1.0, 1.0, 0.0).du_dt, closed) < 1e-13);
    }
}

TEST_CASE("gamma'(0) scales as 1/r0 (pre-ln, peri-ln) and alpha (ngpt)") {
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        for (double r0 : {0.5, 3.0}) {
            for (double alpha : {0.25, 2.0}) {
                const double particles = particle_initial_velocity(row.id, 16, 2.0, r0, alpha);
                reduced_parameters p{{row.id, alpha, 1.0}, 16.0, 2.0, r0};
                CHECK(testing::relative_error(particles, initial_velocity_closed_form(p)) < 1e-12);
            }
        }
    }
    // The closed forms themselves, written out (docs/model.md §3.4) at n = 16, beta = 2.
    const double e = std::exp(2.0), r0 = 3.0, alpha = 2.0;
    auto closed = [&](scheme id) {
        return initial_velocity_closed_form({{id, alpha, 1.0}, 16.0, 2.0, r0});
    };
    CHECK(closed(scheme::pre_ln) == doctest::Approx(2.0 / (r0 * (e + 15.0))).epsilon(1e-14));
    CHECK(closed(scheme::peri_ln) ==
          doctest::Approx(2.0 / (r0 * std::sqrt(e * e + 15.0))).epsilon(1e-14));
    CHECK(closed(scheme::ngpt) ==
          doctest::Approx(2.0 * alpha / std::sqrt(e * e + 15.0)).epsilon(1e-14));
    CHECK(closed(scheme::post_ln) == doctest::Approx(2.0 / (e + 15.0)).epsilon(1e-14));
}

TEST_CASE("closed forms stay finite at beta = 1e4") {
    for (const auto& row : scheme_table) {
        reduced_parameters p{{row.id, 1.0, 1.0}, 256.0, 1e4, 1.0};
        const double v = initial_velocity_closed_form(p);
        CHECK(std::isfinite(v));
        CHECK(v >= 0.0);
    }
}

TEST_CASE("no-norm: gamma'(0) = 2 / (e^{beta r0^2} + n - 1) from the particles' RHS") {
    // docs/model.md §9: attention reads r0 e_k, so r0 enters the logits squared.
    for (std::size_t n : {3, 16, 64}) {
        for (double beta : {0.5, 2.0, 5.0}) {
            for (double r0 : {0.3, 1.0, 2.5}) {
                CAPTURE(n);
                CAPTURE(beta);
                CAPTURE(r0);
                const double closed =
                    2.0 / (std::exp(beta * r0 * r0) + static_cast<double>(n) - 1.0);
                const reduced_parameters p{{scheme::no_norm, 1.0, 1.0}, double(n), beta, r0};
                CHECK(testing::relative_error(initial_velocity_closed_form(p), closed) < 1e-13);
                const double particles =
                    particle_initial_velocity(scheme::no_norm, n, beta, r0, 1.0);
                CHECK(testing::relative_error(particles, closed) < 1e-10);
                CHECK(testing::relative_error(-reduced_rhs(p, 0.0, 1.0, r0, 0.0).du_dt, closed) <
                      1e-13);
            }
        }
    }
}
