// --norm layernorm from the Helmert start with a = 1, b = 0 against the closed forms of
// docs/model.md §3 (docs/model.md §10 derives why they hold with the token count n, whatever
// d): the n-particle system against the scalar ODE over the whole horizon, gamma'(0) against
// the reference numbers of §3.6, and the centred standard basis (a regular simplex) as an
// equilibrium of the same scalar ODE.
#include "test_support.hpp"

#include "nadyn/model/integrate.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/reduced.hpp"

#include <doctest/doctest.h>

using namespace nadyn;

namespace {

struct particle_frame {
    double t, mean_cos, min_cos, r_mean, r_spread, velocity;
};

model_parameters layernorm_model(std::size_t n, std::size_t d, double beta,
                                 const scheme_parameters& scheme) {
    model_parameters model{n, d, beta, false, scheme};
    model.norm = norm_kind::layernorm;
    return model;
}

state_type state_of(const initial_state& s, std::size_t n, std::size_t d) {
    state_type x(state_size(n, d));
    std::copy(s.theta.begin(), s.theta.end(), x.begin());
    std::copy(s.r.begin(), s.r.end(), x.begin() + static_cast<std::ptrdiff_t>(n * d));
    return x;
}

// theta_k(0) = h_k, the first n vectors of the Helmert basis of U (n <= d - 1).
state_type helmert_start(std::size_t n, std::size_t d, double r0) {
    return state_of(
        make_initial(initial_spec::parse("orthogonal"), n, d, 0, r0, norm_kind::layernorm), n, d);
}

std::vector<particle_frame> simulate(const scheme_parameters& scheme, std::size_t d, double beta,
                                     double T, state_type x, std::size_t n) {
    attention_system system(layernorm_model(n, d, beta, scheme), attention_weights{});
    observables_calculator calculator(n, d, std::vector<double>(x.begin(), x.begin() + n * d),
                                      1e-3);
    integration_settings settings{integrator_kind::dopri5, T, 0.05, 1e-13, 1e-15, 1};
    std::vector<particle_frame> frames;
    solver_statistics statistics;
    integrate(
        system, x, settings,
        [&](const state_type& state, const state_type& dxdt, double t, std::int64_t) {
            frame_observables o =
                calculator.compute(directions(state), magnitudes(state, n, d), dxdt.data());
            frames.push_back({t, o.mean_cos, o.min_cos, o.r_mean, o.r_max - o.r_min, o.velocity});
        },
        statistics);
    return frames;
}

} // namespace

TEST_CASE("layernorm from the Helmert start follows the scalar ODE of n tokens to 1e-10") {
    const std::size_t n = 6;
    const double beta = 2.0, r0 = 1.5, T = 8.0;
    // d = n + 1 (the Helmert basis exhausted) and d = n + 4: the closed forms depend on n only.
    for (std::size_t d : {n + 1, n + 4}) {
        for (const auto& row : scheme_table) {
            if (row.id == scheme::no_norm) continue; // refused with layernorm
            CAPTURE(d);
            CAPTURE(row.name);
            const scheme_parameters scheme{row.id, 0.7, 0.25 * T};
            const auto frames = simulate(scheme, d, beta, T, helmert_start(n, d, r0), n);
            REQUIRE(frames.size() == 161);
            std::vector<double> times;
            for (const auto& f : frames)
                times.push_back(f.t);
            const auto reduced =
                integrate_reduced({scheme, static_cast<double>(n), beta, r0}, times);
            double worst_gamma = 0, worst_r = 0, worst_velocity = 0, worst_symmetry = 0;
            for (std::size_t i = 0; i < frames.size(); ++i) {
                worst_gamma =
                    std::max(worst_gamma, std::abs(frames[i].mean_cos - (1.0 - reduced[i].u)));
                worst_r =
                    std::max(worst_r, std::abs(frames[i].r_mean - reduced[i].r) / reduced[i].r);
                worst_velocity =
                    std::max(worst_velocity, std::abs(frames[i].velocity - reduced[i].velocity));
                worst_symmetry = std::max(
                    {worst_symmetry, frames[i].mean_cos - frames[i].min_cos, frames[i].r_spread});
            }
            CHECK(worst_gamma < 1e-10);
            CHECK(worst_r < 1e-10);
            CHECK(worst_velocity < 1e-10);
            CHECK(worst_symmetry < 1e-10);
            CHECK(frames.back().mean_cos - frames.front().mean_cos > 0.05); // gamma did move
        }
    }
}

TEST_CASE("layernorm gamma'(0) from the Helmert start: docs/model.md §3.6 at n = 256, d = 257") {
    const std::size_t n = 256, d = 257;
    const double linear_reference = 4.957696482805e-03;
    const double root_reference = 1.339855973539e-02;
    for (const auto& row : scheme_table) {
        if (row.id == scheme::no_norm) continue;
        CAPTURE(row.name);
        attention_system system(layernorm_model(n, d, 5.0, {row.id, 1.0, 1.0}),
                                attention_weights{});
        state_type x = helmert_start(n, d, 1.0), dxdt(x.size());
        system(x, dxdt, 0.0);
        observables_calculator calculator(n, d, std::vector<double>(x.begin(), x.begin() + n * d),
                                          1e-3);
        const double particles = calculator.compute_moments(x.data(), dxdt.data()).velocity;
        const bool uses_norm = row.id == scheme::peri_ln || row.id == scheme::ngpt;
        CHECK(testing::relative_error(particles, uses_norm ? root_reference : linear_reference) <
              1e-10);
        CHECK(testing::relative_error(
                  particles, initial_velocity_closed_form({{row.id, 1.0, 1.0}, 256.0, 5.0, 1.0})) <
              1e-10);
    }
}

TEST_CASE("the centred standard basis is a regular simplex and an equilibrium (gamma = -1/(d-1))") {
    // n = d tokens Pi e_k / ‖Pi e_k‖: every pair has cosine -1/(d-1), so the symmetric
    // scalar ODE applies with gamma(0) = -1/(n-1), where 1 + (n-1) gamma = 0 and g = 0.
    const std::size_t d = 5, n = d;
    const double beta = 1.5, r0 = 0.8, T = 3.0;
    const double gamma = -1.0 / static_cast<double>(n - 1);
    initial_state s;
    s.r.assign(n, r0);
    const double off = -1.0 / static_cast<double>(d);
    const double norm =
        std::sqrt((1.0 + off) * (1.0 + off) + static_cast<double>(d - 1) * off * off);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            s.theta.push_back(((c == k ? 1.0 : 0.0) + off) / norm);
    const reduced_attention at = reduced_attention_at(double(n), beta, 1.0 - gamma);
    CHECK(std::abs(at.rate) < 1e-15);
    for (scheme id : {scheme::post_ln, scheme::pre_ln}) {
        CAPTURE(info(id).name);
        const auto frames = simulate({id, 1.0, 1.0}, d, beta, T, state_of(s, n, d), n);
        for (const auto& f : frames) {
            CHECK(std::abs(f.mean_cos - gamma) < 1e-12);
            CHECK(std::abs(f.min_cos - gamma) < 1e-12);
            CHECK(std::abs(f.velocity) < 1e-12);
        }
        // pre-ln: dr/dt = <theta, A> = (e^beta + (n-1) gamma e^{beta gamma}) / Z, constant.
        const double e = std::exp(beta), eg = std::exp(beta * gamma);
        const double along = (e + double(n - 1) * gamma * eg) / (e + double(n - 1) * eg);
        CHECK(along == doctest::Approx(at.along).epsilon(1e-14));
        const double expected_r = id == scheme::pre_ln ? r0 + T * along : r0;
        CHECK(frames.back().r_mean == doctest::Approx(expected_r).epsilon(1e-12));
    }
}
