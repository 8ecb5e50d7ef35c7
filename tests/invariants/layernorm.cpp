// --norm layernorm (docs/model.md §10): the directions stay on the sphere of the hyperplane
// U = {sum_c x_c = 0} at every frame, for every scheme that normalises and every integrator,
// with random weights and with a gain and bias; the right-hand side and the discrete layer
// agree with their definitions computed here from the naive attention.
#include "test_support.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

using namespace nadyn;

namespace {

// A gain and bias with no structure the dynamics could exploit.
layer_norm_affine test_affine(std::size_t d) {
    layer_norm_affine affine;
    for (std::size_t c = 0; c < d; ++c) {
        affine.gain.push_back(0.6 + 0.15 * static_cast<double>(c));
        affine.bias.push_back(0.2 * std::sin(1.7 * static_cast<double>(c) + 0.3));
    }
    return affine;
}

std::vector<state_type> record_states(const run_config& c, const layer_norm_affine& affine) {
    const initial_state start = make_initial(c.init, c.n, c.d, c.seed, c.r0, c.norm);
    simulation run(c, start, make_weights(c.weights, c.d, c.seed, -1), affine);
    std::vector<state_type> states;
    run.run([&](const state_type& x, double, std::int64_t, const frame_observables& o) {
        CHECK(o.norm_error <= 1e-12);
        states.push_back(x);
    });
    return states;
}

// Pi v = v - mean(v) 1, computed the plain way.
std::vector<double> centred(std::vector<double> v) {
    double mean = 0.0;
    for (double x : v)
        mean += x;
    mean /= static_cast<double>(v.size());
    for (double& x : v)
        x -= mean;
    return v;
}

double dot(const double* a, const double* b, std::size_t d) {
    double s = 0.0;
    for (std::size_t c = 0; c < d; ++c)
        s += a[c] * b[c];
    return s;
}

} // namespace

TEST_CASE("layernorm: sum_c theta_kc = 0 and unit norm to 1e-12 at every frame, every scheme "
          "and integrator") {
    for (const auto& row : scheme_table) {
        if (row.id == scheme::no_norm) continue; // refused with layernorm: nothing to centre
        for (integrator_kind kind : {integrator_kind::rk4, integrator_kind::dopri5,
                                     integrator_kind::euler, integrator_kind::layers}) {
            for (bool with_affine : {false, true}) {
                CAPTURE(row.name);
                CAPTURE(to_string(kind));
                CAPTURE(with_affine);
                run_config c;
                c.scheme_id = row.id;
                c.norm = norm_kind::layernorm;
                c.n = 20;
                c.d = 5;
                c.beta = 3.0;
                c.integration = {kind, 3.0, 0.05, 1e-7, 1e-9, 5};
                c.weights = weights_spec::parse("random");
                const auto states =
                    record_states(c, with_affine ? test_affine(c.d) : layer_norm_affine{});
                REQUIRE(states.size() >= 2);
                double worst_sum = 0.0, worst_norm = 0.0, moved = 0.0;
                for (const auto& x : states)
                    for (std::size_t k = 0; k < c.n; ++k) {
                        const double* theta = &x[k * c.d];
                        double sum = 0.0;
                        for (std::size_t a = 0; a < c.d; ++a)
                            sum += theta[a];
                        worst_sum = std::max(worst_sum, std::abs(sum));
                        worst_norm =
                            std::max(worst_norm, std::abs(std::sqrt(dot(theta, theta, c.d)) - 1.0));
                        moved = std::max(moved, std::abs(theta[0] - states.front()[k * c.d]));
                    }
                CHECK(worst_sum <= 1e-12);
                CHECK(worst_norm <= 1e-12);
                CHECK(moved > 1e-3); // the directions did move
            }
        }
    }
}

TEST_CASE("layernorm starts lie on the centred sphere; Helmert's are orthonormal") {
    const std::size_t n = 6, d = 7;
    for (const char* init : {"uniform", "orthogonal", "cap:0.4"}) {
        CAPTURE(init);
        const initial_state s =
            make_initial(initial_spec::parse(init), n, d, 3, 1.0, norm_kind::layernorm);
        for (std::size_t k = 0; k < n; ++k) {
            const double* theta = &s.theta[k * d];
            double sum = 0.0;
            for (std::size_t a = 0; a < d; ++a)
                sum += theta[a];
            CHECK(std::abs(sum) <= 1e-15);
            CHECK(std::abs(dot(theta, theta, d) - 1.0) <= 1e-15);
        }
    }
    const initial_state h =
        make_initial(initial_spec::parse("orthogonal"), n, d, 0, 1.0, norm_kind::layernorm);
    for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t l = 0; l < k; ++l)
            CHECK(std::abs(dot(&h.theta[k * d], &h.theta[l * d], d)) <= 1e-15);
        // h_m = (1, ..., 1, -m, 0, ...) / sqrt(m (m+1)), m = k + 1.
        const double m = static_cast<double>(k + 1);
        CHECK(h.theta[k * d] == doctest::Approx(1.0 / std::sqrt(m * (m + 1.0))).epsilon(1e-15));
        CHECK(h.theta[k * d + k + 1] ==
              doctest::Approx(-m / std::sqrt(m * (m + 1.0))).epsilon(1e-15));
    }
    CHECK_THROWS_AS(
        make_initial(initial_spec::parse("orthogonal"), d, d, 0, 1.0, norm_kind::layernorm),
        input_error);
}

TEST_CASE("layernorm right-hand side: the tangent part of the centred attention of a ⊙ theta + b") {
    const std::size_t n = 9, d = 6;
    const layer_norm_affine affine = test_affine(d);
    random_source source(77);
    attention_weights weights;
    weights.heads.push_back({testing::random_matrix(source, d, 0.5),
                             testing::random_matrix(source, d, 0.5),
                             testing::random_matrix(source, d, 0.5)});
    const initial_state s =
        make_initial(initial_spec::parse("uniform"), n, d, 8, 1.3, norm_kind::layernorm);
    state_type x(state_size(n, d));
    std::copy(s.theta.begin(), s.theta.end(), x.begin());
    std::copy(s.r.begin(), s.r.end(), x.begin() + static_cast<std::ptrdiff_t>(n * d));
    // The attention of y_k = a ⊙ theta_k + b by the naive loop.
    std::vector<double> y(n * d), reference(n * d);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            y[k * d + c] = affine.gain[c] * s.theta[k * d + c] + affine.bias[c];
    const double beta = 2.0;
    reference_attention(y.data(), n, d, weights, {beta, false, precision::double_precision, 1},
                        reference.data());
    for (const auto& row : scheme_table) {
        if (row.id == scheme::no_norm) continue;
        CAPTURE(row.name);
        model_parameters model{n, d, beta, false, {row.id, 0.7, 1.0}};
        model.norm = norm_kind::layernorm;
        model.affine = affine;
        attention_system system(model, weights);
        state_type dxdt(x.size());
        system.begin_step(0.5);
        system(x, dxdt, 0.5);
        double worst = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
            const double* theta = &x[k * d];
            const std::vector<double> pa =
                centred({reference.begin() + static_cast<std::ptrdiff_t>(k * d),
                         reference.begin() + static_cast<std::ptrdiff_t>((k + 1) * d)});
            const double along = dot(theta, pa.data(), d);
            const double norm = std::sqrt(dot(pa.data(), pa.data(), d));
            const token_rates rate = rates({row.id, 0.7, 1.0}, 0.5, 0.5, x[n * d + k], along, norm);
            for (std::size_t c = 0; c < d; ++c)
                worst = std::max(worst, std::abs(dxdt[k * d + c] -
                                                 (pa[c] - along * theta[c]) * rate.inverse_speed));
            worst = std::max(worst, std::abs(dxdt[n * d + k] - rate.radial_rate));
            double sum = 0.0;
            for (std::size_t c = 0; c < d; ++c)
                sum += dxdt[k * d + c];
            CHECK(std::abs(sum) < 1e-14); // the velocity lies in U
        }
        CHECK(worst < 1e-13);
    }
}

TEST_CASE("the discrete layernorm layer is the literal centre-then-scale map") {
    const std::size_t n = 7, d = 5;
    const double h = 0.3, r0 = 1.4;
    const initial_state s =
        make_initial(initial_spec::parse("uniform"), n, d, 12, r0, norm_kind::layernorm);
    // A deliberately uncentred "attention output": the layer must centre it.
    std::vector<double> attention(n * d);
    for (std::size_t i = 0; i < n * d; ++i)
        attention[i] = 0.5 + std::cos(0.9 * static_cast<double>(i));
    for (scheme id : {scheme::post_ln, scheme::pre_ln, scheme::peri_ln, scheme::ngpt}) {
        CAPTURE(info(id).name);
        std::vector<double> theta = s.theta, r = s.r;
        apply_layer({id, 0.8, 1.0}, 0.0, h, attention.data(), theta.data(), r.data(), n, d, 1,
                    norm_kind::layernorm);
        for (std::size_t k = 0; k < n; ++k) {
            const double* t0 = &s.theta[k * d];
            const std::vector<double> a =
                centred({attention.begin() + static_cast<std::ptrdiff_t>(k * d),
                         attention.begin() + static_cast<std::ptrdiff_t>((k + 1) * d)});
            const double a_norm = std::sqrt(dot(a.data(), a.data(), d));
            // The stream x = r theta (plus an invisible multiple of 1), the layer formula with
            // LN(v) = Pi v / ‖Pi v‖.
            std::vector<double> x(d);
            for (std::size_t c = 0; c < d; ++c) {
                switch (id) {
                case scheme::post_ln: // LN(theta + h Attn)
                    x[c] = t0[c] + h * a[c];
                    break;
                case scheme::pre_ln: // r theta + h Attn
                    x[c] = r0 * t0[c] + h * a[c];
                    break;
                case scheme::peri_ln: // r theta + h LN(Attn)
                    x[c] = r0 * t0[c] + h * a[c] / a_norm;
                    break;
                default: // ngpt: LN(theta + h alpha (LN(Attn) - theta))
                    x[c] = t0[c] + h * 0.8 * (a[c] / a_norm - t0[c]);
                    break;
                }
            }
            const std::vector<double> px = centred(x);
            const double px_norm = std::sqrt(dot(px.data(), px.data(), d));
            for (std::size_t c = 0; c < d; ++c)
                CHECK(theta[k * d + c] == doctest::Approx(px[c] / px_norm).epsilon(1e-13));
            const bool keeps = id == scheme::post_ln || id == scheme::ngpt;
            CHECK(r[k] == doctest::Approx(keeps ? r0 : px_norm).epsilon(1e-13));
        }
    }
}

TEST_CASE("layernorm refuses no-norm, d < 3, and a gain without layernorm") {
    run_config c;
    c.norm = norm_kind::layernorm;
    c.scheme_id = scheme::no_norm;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("nothing to centre"), input_error);
    c.scheme_id = scheme::pre_ln;
    c.d = 2;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("d >= 3"), input_error);
    c.d = 4;
    c.n = 4;
    c.init = initial_spec::parse("orthogonal");
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("n <= d - 1"), input_error);
    c.n = 3;
    CHECK_NOTHROW(c.validate());
    run_config plain;
    plain.ln_params = "gain.h5";
    CHECK_THROWS_WITH_AS(plain.validate(), doctest::Contains("ln-params needs --norm layernorm"),
                         input_error);
}
