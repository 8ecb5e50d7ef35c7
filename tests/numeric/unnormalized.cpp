// Unnormalised attention (docs/model.md §8) from the symmetric start: gamma'(0) of the
// particles against the closed forms (2/n, 2/(r0 n), and the softmax values for peri-ln and
// ngpt) in the symmetric kernel paths and the general one; the n-particle run against the
// scalar ODE over a horizon; one discrete layer against the layer formula; and an overflow
// stopping every integrator with the last good frame, all of it finite.
#include "test_support.hpp"

#include "nadyn/model/integrate.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/reduced.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace nadyn;

namespace {

model_parameters unnormalized_model(std::size_t n, std::size_t d, double beta,
                                    const scheme_parameters& scheme) {
    return {
        n, d, beta, false, scheme, precision::double_precision, 0, attention_kind::unnormalized};
}

// gamma'(0) from the n-particle right-hand side, and the kernel path it took.
std::pair<double, attention_kernel::path>
particle_initial_velocity(const scheme_parameters& scheme, std::size_t n, std::size_t d,
                          double beta, double r0, const attention_weights& weights) {
    attention_system system(unnormalized_model(n, d, beta, scheme), weights);
    state_type x = testing::symmetric_start(n, d, r0), dxdt(x.size());
    system(x, dxdt, 0.0);
    observables_calculator calculator(n, d, std::vector<double>(x.begin(), x.begin() + n * d),
                                      1e-3);
    attention_kernel probe(n, d);
    std::vector<double> a(n * d);
    probe.compute(x.data(), weights,
                  {beta, false, precision::double_precision, 0, attention_kind::unnormalized},
                  a.data());
    return {calculator.compute_moments(x.data(), dxdt.data()).velocity, probe.last_path()};
}

// One head whose K is an explicit identity matrix while Q is the implicit one: the same
// attention, but not recognised as Q = K, so the kernel takes its general path.
attention_weights explicit_keys(std::size_t d) {
    attention_weights w;
    w.heads[0].K = matrix::Identity(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
    return w;
}

} // namespace

TEST_CASE("unnormalised gamma'(0) of every scheme: the closed forms of docs/model.md §8") {
    const double beta = 5.0, r0 = 1.7, alpha = 0.6;
    // n = d = 256: symmetric path with GEMM tiles; n = d = 8: the small-d single tile;
    // n = 200, d = 210 through the general path.
    struct layout {
        std::size_t n, d;
        bool general;
    };
    for (const layout& l : {layout{256, 256, false}, layout{8, 8, false}, layout{200, 210, true}}) {
        const attention_weights weights = l.general ? explicit_keys(l.d) : attention_weights{};
        const double n = static_cast<double>(l.n);
        const double root = 2.0 / std::sqrt(std::exp(2.0 * beta) + n - 1.0);
        for (const auto& row : scheme_table) {
            CAPTURE(row.name);
            CAPTURE(l.n);
            const scheme_parameters scheme{row.id, alpha, 1.0};
            reduced_parameters p{scheme, n, beta, r0, attention_kind::unnormalized};
            const double closed = initial_velocity_closed_form(p);
            // The closed forms written out.
            double expected = 2.0 / n; // post-ln, mix-ln (before its switch), sqrt-scaling, no-norm
            if (row.id == scheme::pre_ln) expected = 2.0 / (r0 * n);
            if (row.id == scheme::peri_ln) expected = root / r0;
            if (row.id == scheme::ngpt) expected = alpha * root;
            CHECK(testing::relative_error(closed, expected) < 1e-14);
            const auto [particles, path] =
                particle_initial_velocity(scheme, l.n, l.d, beta, r0, weights);
            CHECK(path == (l.general   ? attention_kernel::path::general
                           : l.d <= 16 ? attention_kernel::path::symmetric_small_d
                                       : attention_kernel::path::symmetric));
            CHECK(testing::relative_error(particles, closed) < 1e-10);
            // The scalar ODE's right-hand side at gamma = 0 (u = 1) agrees.
            CHECK(testing::relative_error(-reduced_rhs(p, 0.0, 1.0, r0, 0.0).du_dt, closed) <
                  1e-13);
        }
    }
    // mix-ln switched at t = 0 is pre-ln from the start.
    const reduced_parameters switched{
        {scheme::mix_ln, 1.0, 0.0}, 16.0, 2.0, 3.0, attention_kind::unnormalized};
    CHECK(testing::relative_error(initial_velocity_closed_form(switched), 2.0 / (3.0 * 16.0)) <
          1e-15);
}

TEST_CASE("unnormalised n-particle run matches the scalar ODE to 1e-9 for every scheme") {
    const std::size_t n = 6;
    const double r0 = 1.2;
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        // no-norm's logits beta r^2 grow with r and its r with them (a blow-up in finite
        // time): a small beta and a short horizon.
        const double T = row.attention_reads_tokens ? 0.5 : 6.0;
        const double beta = row.attention_reads_tokens ? 0.2 : 1.5;
        const scheme_parameters scheme{row.id, 0.7, 0.25 * T};
        attention_system system(unnormalized_model(n, n, beta, scheme), attention_weights{});
        state_type x = testing::symmetric_start(n, n, r0);
        observables_calculator calculator(n, n, std::vector<double>(x.begin(), x.begin() + n * n),
                                          1e-3);
        integration_settings settings{integrator_kind::dopri5, T, T / 100.0, 1e-13, 1e-15, 1};
        std::vector<double> times, mean_cos, r_mean, velocity;
        double worst_symmetry = 0.0;
        solver_statistics statistics;
        integrate(
            system, x, settings,
            [&](const state_type& state, const state_type& dxdt, double t, std::int64_t) {
                const frame_observables o =
                    calculator.compute(directions(state), magnitudes(state, n, n), dxdt.data());
                times.push_back(t);
                mean_cos.push_back(o.mean_cos);
                r_mean.push_back(o.r_mean);
                velocity.push_back(o.velocity);
                worst_symmetry =
                    std::max({worst_symmetry, o.mean_cos - o.min_cos, o.r_max - o.r_min});
            },
            statistics);
        REQUIRE(times.size() == 101);
        const auto reduced = integrate_reduced(
            {scheme, static_cast<double>(n), beta, r0, attention_kind::unnormalized}, times);
        double worst_gamma = 0, worst_r = 0, worst_velocity = 0;
        for (std::size_t i = 0; i < times.size(); ++i) {
            worst_gamma = std::max(worst_gamma, std::abs(mean_cos[i] - (1.0 - reduced[i].u)));
            worst_r = std::max(worst_r, std::abs(r_mean[i] - reduced[i].r) / reduced[i].r);
            worst_velocity = std::max(worst_velocity, std::abs(velocity[i] - reduced[i].velocity) /
                                                          std::max(1.0, reduced[i].velocity));
        }
        CHECK(worst_gamma < 1e-9);
        CHECK(worst_r < 1e-9);
        CHECK(worst_velocity < 1e-9);
        CHECK(worst_symmetry < 1e-9);
        CHECK(mean_cos.back() - mean_cos.front() > 0.05); // the comparison is not of constants
    }
}

TEST_CASE("one discrete layer with unnormalised attention is the layer formula") {
    // post-ln: theta <- LN(theta + h A), pre-ln: x <- x + h A, with A = Attn_unnormalised.
    const std::size_t n = 40, d = 5;
    const double beta = 2.0, h = 0.3;
    for (const scheme id : {scheme::post_ln, scheme::pre_ln}) {
        CAPTURE(info(id).name);
        state_type x = testing::uniform_start(n, d, 9, 1.3);
        const state_type start = x;
        attention_system system(unnormalized_model(n, d, beta, {id, 1.0, 1.0}),
                                attention_weights{});
        integration_settings settings{integrator_kind::layers, h, h, 1e-8, 1e-10, 1};
        solver_statistics statistics;
        integrate(
            system, x, settings, [](const state_type&, const state_type&, double, std::int64_t) {},
            statistics);
        std::vector<double> a(n * d);
        reference_attention(
            start.data(), n, d, attention_weights{},
            {beta, false, precision::double_precision, 0, attention_kind::unnormalized}, a.data());
        double worst = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
            const double r = start[n * d + k];
            const double base = id == scheme::post_ln ? 1.0 : r;
            std::vector<double> y(d);
            double norm2 = 0.0;
            for (std::size_t c = 0; c < d; ++c) {
                y[c] = base * start[k * d + c] + h * a[k * d + c];
                norm2 += y[c] * y[c];
            }
            const double norm = std::sqrt(norm2);
            for (std::size_t c = 0; c < d; ++c)
                worst = std::max(worst, std::abs(x[k * d + c] - y[c] / norm));
            const double r_expected = id == scheme::post_ln ? r : norm;
            worst = std::max(worst, std::abs(x[n * d + k] - r_expected));
        }
        CHECK(worst < 1e-13);
    }
}

TEST_CASE("an overflow stops rk4, dopri5 and layers with the last good frame, all finite") {
    // no-norm reads the tokens r theta: the logits beta r^2 grow with r until exp overflows.
    // dopri5 at its default tolerances follows the blow-up until its step floor; loose ones
    // step into the overflow.
    // With frames at every step and every 7th: the last good state is a frame either way.
    const std::size_t n = 8, d = 3;
    for (const auto& [kind, every] : {std::pair{integrator_kind::rk4, 1},
                                      {integrator_kind::rk4, 7},
                                      {integrator_kind::dopri5, 1},
                                      {integrator_kind::dopri5, 7},
                                      {integrator_kind::layers, 1},
                                      {integrator_kind::layers, 7}}) {
        CAPTURE(to_string(kind));
        CAPTURE(every);
        const bool adaptive = kind == integrator_kind::dopri5;
        attention_system system(
            unnormalized_model(n, d, adaptive ? 5.0 : 2.0, {scheme::no_norm, 1.0, 1.0}),
            attention_weights{});
        state_type x = testing::uniform_start(n, d, 4);
        integration_settings settings{kind, 50.0, adaptive ? 0.001 : 0.01, adaptive ? 1e-3 : 1e-8,
                                      1e-3, every};
        solver_statistics statistics;
        std::vector<state_type> states, rates;
        bool faulted = false;
        std::string message;
        try {
            integrate(
                system, x, settings,
                [&](const state_type& state, const state_type& dxdt, double, std::int64_t) {
                    states.push_back(state);
                    rates.push_back(dxdt);
                },
                statistics);
        } catch (const numerical_fault& fault) {
            faulted = true;
            message = fault.what();
        }
        CHECK(faulted);
        CHECK(message.find("overflowed at t = ") != std::string::npos);
        REQUIRE(states.size() >= 2);
        auto finite = [](const state_type& v) {
            return std::all_of(v.begin(), v.end(), [](double e) { return std::isfinite(e); });
        };
        for (std::size_t i = 0; i < states.size(); ++i) {
            CHECK(finite(states[i]));
            CHECK(finite(rates[i]));
        }
        CHECK(x == states.back()); // the state handed back is the last good frame
    }
}
