// The discrete transformer (docs/model.md §4): its layers are the schemes' formulas, and
// as the step h -> 0 it converges to the ODE at order 1.
#include "test_support.hpp"

#include "nadyn/model/integrate.hpp"

#include <doctest/doctest.h>

using namespace nadyn;

namespace {

state_type run_to(integrator_kind kind, const scheme_parameters& scheme, double dt, double T,
                  const attention_weights& weights) {
    const std::size_t n = 10, d = 4;
    attention_system system({n, d, 2.0, false, scheme}, weights);
    state_type x = testing::uniform_start(n, d, 31, 1.4);
    solver_statistics statistics;
    integrate(
        system, x, {kind, T, dt, 1e-13, 1e-15, 1 << 30},
        [](const state_type&, const state_type&, double, std::int64_t) {}, statistics);
    return x;
}

} // namespace

TEST_CASE("layers converge to the ODE at order 1 for every scheme") {
    const double T = 1.0;
    const attention_weights weights = make_weights(weights_spec::parse("random"), 4, 2);
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        const scheme_parameters scheme{row.id, 0.9, 0.5};
        const state_type exact = run_to(integrator_kind::dopri5, scheme, 0.01, T, weights);
        const double e1 = testing::max_abs_difference(
            run_to(integrator_kind::layers, scheme, 0.01, T, weights), exact);
        const double e2 = testing::max_abs_difference(
            run_to(integrator_kind::layers, scheme, 0.005, T, weights), exact);
        CAPTURE(e1);
        CAPTURE(e2);
        CHECK(e1 / e2 == doctest::Approx(2.0).epsilon(0.05));
    }
}

TEST_CASE("one layer applies the scheme's formula literally") {
    const std::size_t n = 7, d = 3;
    const double h = 0.3, alpha = 0.6, beta = 1.7;
    state_type x = testing::uniform_start(n, d, 17, 1.9);
    std::vector<double> a(n * d);
    reference_attention(x.data(), n, d, attention_weights{}, {beta, false}, a.data());
    auto normalise = [](std::vector<double> v) {
        double s = 0.0;
        for (double c : v)
            s += c * c;
        for (double& c : v)
            c /= std::sqrt(s);
        return v;
    };
    for (const auto& row : scheme_table) {
        CAPTURE(row.name);
        state_type y = x;
        const double t = 2.0; // mix-ln: after t_switch = 1, so pre-ln
        apply_layer({row.id, alpha, 1.0}, t, h, a.data(), directions(y), magnitudes(y, n, d), n, d);
        for (std::size_t k = 0; k < n; ++k) {
            const double r = x[n * d + k];
            std::vector<double> theta(x.begin() + long(k * d), x.begin() + long(k * d + d));
            std::vector<double> attn(a.begin() + long(k * d), a.begin() + long(k * d + d));
            const std::vector<double> attn_unit = normalise(attn);
            std::vector<double> next(d);
            double next_r = r;
            for (std::size_t c = 0; c < d; ++c) {
                switch (row.id) {
                case scheme::post_ln:
                    next[c] = theta[c] + h * attn[c];
                    break; // LN(x + Attn(x))
                case scheme::pre_ln:
                case scheme::mix_ln:
                case scheme::no_norm: // a stands for Attn(x) here (next test)
                    next[c] = r * theta[c] + h * attn[c];
                    break; // x + Attn(LN x)
                case scheme::peri_ln:
                    next[c] = r * theta[c] + h * attn_unit[c];
                    break; // x + LN(Attn(LN x))
                case scheme::ngpt:
                    next[c] = theta[c] + h * alpha * (attn_unit[c] - theta[c]);
                    break;
                case scheme::sqrt_scaling:
                    next[c] = theta[c] + h / std::sqrt(t + 1.0) * attn[c];
                    break;
                }
            }
            if (row.id == scheme::pre_ln || row.id == scheme::mix_ln || row.id == scheme::peri_ln ||
                row.id == scheme::no_norm) {
                double s = 0.0;
                for (double c : next)
                    s += c * c;
                next_r = std::sqrt(s);
            }
            next = normalise(next);
            for (std::size_t c = 0; c < d; ++c)
                CHECK(y[k * d + c] == doctest::Approx(next[c]).epsilon(1e-14));
            CHECK(y[n * d + k] == doctest::Approx(next_r).epsilon(1e-14));
        }
    }
}

TEST_CASE("a no-norm layer is x <- x + h Attn(x) on the unnormalised tokens") {
    const std::size_t n = 9, d = 3;
    const double h = 0.4, beta = 1.3;
    const attention_weights weights = make_weights(weights_spec::parse("random"), d, 5);
    state_type x = testing::uniform_start(n, d, 23, 1.0);
    for (std::size_t k = 0; k < n; ++k)
        x[n * d + k] = 0.5 + 0.25 * double(k); // distinct magnitudes: r enters the logits
    // The literal layer: tokens x_k = r_k theta_k, the naive attention of those, x + h A.
    std::vector<double> tokens(n * d), a(n * d);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            tokens[k * d + c] = x[n * d + k] * x[k * d + c];
    reference_attention(tokens.data(), n, d, weights, {beta, false}, a.data());
    attention_system system({n, d, beta, false, {scheme::no_norm, 1.0, 0.0}}, weights);
    state_type y = x;
    solver_statistics statistics;
    integrate(
        system, y, {integrator_kind::layers, h, h, 1e-8, 1e-10, 1},
        [](const state_type&, const state_type&, double, std::int64_t) {}, statistics);
    for (std::size_t k = 0; k < n; ++k) {
        double r2 = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
            const double next = tokens[k * d + c] + h * a[k * d + c];
            r2 += next * next;
        }
        const double r = std::sqrt(r2);
        CHECK(y[n * d + k] == doctest::Approx(r).epsilon(1e-13));
        for (std::size_t c = 0; c < d; ++c)
            CHECK(y[k * d + c] ==
                  doctest::Approx((tokens[k * d + c] + h * a[k * d + c]) / r).epsilon(1e-13));
    }
}
