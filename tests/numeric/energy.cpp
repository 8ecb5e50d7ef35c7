// The interaction energy (docs/model.md §5.1): the observable against a naive double sum, the
// closed form of the symmetric start at beta = 1e3 (where exp(beta) overflows) and the
// cumulant expansion near beta = 0; dE/dt against the formula of §5.1 by central differences
// of the naive sum along the right-hand side, for every scheme, softmax and unnormalised; and
// over whole runs, E never decreasing for every scheme in the gradient-flow setting and
// decreasing for V = -I.
#include "test_support.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/weights.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace nadyn;

namespace {

matrix identity_if_empty(const matrix& m, std::size_t d) {
    const auto size = static_cast<Eigen::Index>(d);
    return m.size() == 0 ? matrix(matrix::Identity(size, size)) : m;
}

// <Q_h y_i, K_h y_j> by the definition, one pair at a time.
double logit(const double* y, std::size_t d, const attention_head& head, std::size_t i,
             std::size_t j) {
    const matrix q = identity_if_empty(head.Q, d), k = identity_if_empty(head.K, d);
    double sum = 0.0;
    for (std::size_t a = 0; a < d; ++a) {
        double qa = 0.0, ka = 0.0;
        for (std::size_t b = 0; b < d; ++b) {
            qa += q(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) * y[i * d + b];
            ka += k(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) * y[j * d + b];
        }
        sum += qa * ka;
    }
    return sum;
}

// E = (1 / (2 beta n^2)) sum_{i,j} exp(beta <Q y_i, K y_j>) of one head, naively (beta small
// enough that nothing overflows).
double naive_energy(const std::vector<double>& y, std::size_t n, std::size_t d, double beta,
                    const attention_head& head) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            sum += std::exp(beta * logit(y.data(), d, head, i, j));
    return sum / (2.0 * beta * double(n) * double(n));
}

attention_weights gaussian_heads(std::size_t heads, std::size_t d, std::uint64_t seed) {
    random_source source(seed);
    attention_weights w;
    w.heads.resize(heads);
    for (auto& head : w.heads) {
        head.Q = testing::random_matrix(source, d, 1.0 / std::sqrt(double(d)));
        head.K = testing::random_matrix(source, d, 1.0 / std::sqrt(double(d)));
    }
    return w;
}

} // namespace

TEST_CASE("the energy equals the naive double sum, across row blocks, heads and threads") {
    const std::size_t n = 300, d = 5, heads = 3; // 300 rows: three blocks of at most 128
    const state_type x = testing::uniform_start(n, d, 7, 1.0);
    const std::vector<double> y(x.begin(), x.begin() + n * d);
    const attention_weights w = gaussian_heads(heads, d, 3);
    std::vector<double> workspace;
    for (const double beta : {0.0, 1e-9, 0.3, 2.0, -1.5, 1e3}) {
        CAPTURE(beta);
        // Independently: the logits of every head, then (1 / beta) log of the mean of
        // exp(beta G) with the largest beta G subtracted (two passes), or the mean of G.
        std::vector<double> logits;
        for (const auto& head : w.heads)
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < n; ++j)
                    logits.push_back(logit(y.data(), d, head, i, j));
        const double count = double(logits.size());
        double expected = 0.0;
        if (beta == 0.0) {
            for (const double g : logits)
                expected += g / count;
        } else if (beta == 1e-9) {
            // (1 / beta) log E[exp(beta G)] = k1 + beta k2 / 2 + O(beta^2), k the cumulants:
            // the shifted sum would lose all but ~1e-7 of the value to rounding.
            double mean = 0.0, second = 0.0;
            for (const double g : logits)
                mean += g / count;
            for (const double g : logits)
                second += (g - mean) * (g - mean) / count;
            expected = mean + beta * second / 2.0;
        } else {
            double largest = -INFINITY;
            for (const double g : logits)
                largest = std::max(largest, beta * g);
            double sum = 0.0;
            for (const double g : logits)
                sum += std::exp(beta * g - largest);
            expected = (largest + std::log(sum / count)) / beta;
        }
        const double energy = interaction_energy(y.data(), n, d, beta, w, workspace);
        CHECK(energy == doctest::Approx(expected).epsilon(1e-12));
        // The blocks folded in order: bitwise the same for any thread count.
        for (const int threads : {2, 3, 0})
            CHECK(interaction_energy(y.data(), n, d, beta, w, workspace, threads) == energy);
    }
}

TEST_CASE("the energy of the symmetric start: (1 / beta) log((e^beta + n - 1) / n)") {
    // theta_k = e_k with identity weights: <theta_i, theta_j> = 1 on the diagonal, 0 off it.
    const std::size_t n = 256, d = 256;
    const state_type x = testing::symmetric_start(n, d);
    const attention_weights identity;
    std::vector<double> workspace;
    const double nn = double(n);
    // beta = 1e3: e^beta overflows a double; the closed form is 1 + log((1 + (n-1) e^-beta)/n)
    // / beta, and e^-1000 is far below the rounding of 1.
    CHECK(interaction_energy(x.data(), n, d, 1e3, identity, workspace) ==
          doctest::Approx(1.0 - std::log(nn) / 1e3).epsilon(1e-14));
    CHECK(interaction_energy(x.data(), n, d, 5.0, identity, workspace) ==
          doctest::Approx(std::log((std::exp(5.0) + nn - 1.0) / nn) / 5.0).epsilon(1e-14));
    // beta = 0: the limit, the mean of the logits, 1/n.
    CHECK(interaction_energy(x.data(), n, d, 0.0, identity, workspace) ==
          doctest::Approx(1.0 / nn).epsilon(1e-14));
    // Two identical heads (mean or sum alike: the recorded value is normalised by H).
    attention_weights two;
    two.heads.resize(2);
    CHECK(interaction_energy(x.data(), n, d, 5.0, two, workspace) ==
          doctest::Approx(std::log((std::exp(5.0) + nn - 1.0) / nn) / 5.0).epsilon(1e-14));
}

TEST_CASE("dE/dt = sum_k Z_k s_k |theta'_k|^2 / (c n^2) (softmax), s_k |theta'_k|^2 / (c n) "
          "(unnormalised)") {
    // One head with Q^T K symmetric and V = c Q^T K: K = Q gaussian, V = Q^T Q / |Q^T Q|_2,
    // so c = 1 / |Q^T Q|_2 (not 1: the formula without c is off by that factor).
    const std::size_t n = 12, d = 4;
    weights_spec spec = weights_spec::parse("symmetric");
    spec.value = value_family::qk;
    const attention_weights w = make_weights(spec, d, 5);
    const attention_head& head = w.heads[0];
    const matrix b = identity_if_empty(head.Q, d).transpose() * identity_if_empty(head.K, d);
    const double c = head.V.norm() / b.norm(); // V = c B
    REQUIRE((head.V - c * b).norm() < 1e-14 * head.V.norm());
    const double beta = 1.3, t = 0.7, h = 1e-5;
    for (const auto& row : scheme_table) {
        for (const attention_kind kind : {attention_kind::softmax, attention_kind::unnormalized}) {
            CAPTURE(row.name);
            CAPTURE(kind == attention_kind::softmax);
            const scheme_parameters scheme{row.id, 0.6, 0.5}; // alpha, t_switch < t: pre-ln
            model_parameters model{n, d, beta, false, scheme, precision::double_precision, 1, kind};
            attention_system system(model, w);
            state_type x = testing::uniform_start(n, d, 9, 1.0), dxdt(x.size());
            for (std::size_t k = 0; k < n; ++k)
                x[n * d + k] = 0.8 + 0.05 * double(k); // unequal magnitudes
            system.begin_step(t);
            system(x, dxdt, t);
            const double* r = x.data() + n * d;
            const double* dr = dxdt.data() + n * d;
            // The input y attention reads and its velocity: theta (theta'), or for no-norm
            // x = r theta with x' = r' theta + r theta'.
            const bool tokens = row.attention_reads_tokens;
            std::vector<double> y(n * d), dy(n * d);
            for (std::size_t k = 0; k < n; ++k)
                for (std::size_t a = 0; a < d; ++a) {
                    const double th = x[k * d + a], dth = dxdt[k * d + a];
                    y[k * d + a] = tokens ? r[k] * th : th;
                    dy[k * d + a] = tokens ? dr[k] * th + r[k] * dth : dth;
                }
            std::vector<double> ahead(y), behind(y);
            for (std::size_t i = 0; i < n * d; ++i) {
                ahead[i] += h * dy[i];
                behind[i] -= h * dy[i];
            }
            const double numeric =
                (naive_energy(ahead, n, d, beta, head) - naive_energy(behind, n, d, beta, head)) /
                (2.0 * h);
            // The formula: per token Z_k = sum_j exp(l_kj) and the output A_k the run uses.
            double formula = 0.0;
            for (std::size_t k = 0; k < n; ++k) {
                double z = 0.0;
                std::vector<double> a(d, 0.0);
                for (std::size_t j = 0; j < n; ++j) {
                    const double weight = std::exp(beta * logit(y.data(), d, head, k, j));
                    z += weight;
                    for (std::size_t e = 0; e < d; ++e)
                        for (std::size_t f = 0; f < d; ++f)
                            a[e] +=
                                weight *
                                head.V(static_cast<Eigen::Index>(e), static_cast<Eigen::Index>(f)) *
                                y[j * d + f];
                }
                const double scale = kind == attention_kind::softmax ? 1.0 / z : 1.0 / double(n);
                for (double& v : a)
                    v *= scale;
                const double* th = x.data() + k * d;
                double along = 0.0, norm2 = 0.0, tangent2 = 0.0;
                for (std::size_t e = 0; e < d; ++e) {
                    along += th[e] * a[e];
                    norm2 += a[e] * a[e];
                }
                for (std::size_t e = 0; e < d; ++e)
                    tangent2 += (a[e] - along * th[e]) * (a[e] - along * th[e]);
                // No-norm: dx_k/dt = A_k, the whole output, no speed divisor.
                double speed = 1.0;
                switch (row.id) {
                case scheme::post_ln:
                    speed = 1.0;
                    break;
                case scheme::pre_ln:
                case scheme::mix_ln:
                    speed = r[k];
                    break; // t > t_switch
                case scheme::peri_ln:
                    speed = r[k] * std::sqrt(norm2);
                    break;
                case scheme::ngpt:
                    speed = std::sqrt(norm2) / scheme.alpha;
                    break;
                case scheme::sqrt_scaling:
                    speed = std::sqrt(t + 1.0);
                    break;
                case scheme::no_norm:
                    speed = 1.0;
                    break;
                }
                const double moved = tokens ? norm2 : tangent2 / speed;
                formula += kind == attention_kind::softmax ? z * moved / (c * double(n * n))
                                                           : moved / (c * double(n));
            }
            CHECK(formula > 0.0);
            CHECK(numeric == doctest::Approx(formula).epsilon(1e-7));
        }
    }
}

namespace {

// The recorded energy (log_energy, the run's only recorded optional observable, last in
// every frame's values) of every frame of a run.
std::vector<double> energy_series(const run_config& c) {
    std::vector<double> series;
    simulation(c).run([&](const state_type&, double, std::int64_t, const frame_observables& o) {
        series.push_back(o.values.back());
    });
    return series;
}

} // namespace

TEST_CASE("E never decreases in the gradient-flow setting, every scheme, rk4 and dopri5") {
    struct setting {
        const char* weights;
        value_family value;
    };
    for (const auto& row : scheme_table) {
        for (const setting s :
             {setting{"identity", value_family::same}, setting{"symmetric", value_family::qk}}) {
            for (const attention_kind kind :
                 {attention_kind::softmax, attention_kind::unnormalized}) {
                for (const integrator_kind integrator :
                     {integrator_kind::rk4, integrator_kind::dopri5}) {
                    CAPTURE(row.name);
                    CAPTURE(s.weights);
                    CAPTURE(kind == attention_kind::softmax);
                    CAPTURE(integrator == integrator_kind::rk4);
                    run_config c;
                    c.scheme_id = row.id;
                    c.n = 16;
                    c.d = 4;
                    c.beta = 1.0;
                    c.attention = kind;
                    c.weights = weights_spec::parse(s.weights);
                    c.weights.value = s.value;
                    c.observe = {"log_energy"};
                    // no-norm's magnitudes grow, and with them the logits beta r_k r_j G
                    // (docs/model.md §9): unnormalised weights overflow at t = 0.39 here, so a
                    // short run, every step a frame.
                    const bool short_run = row.id == scheme::no_norm;
                    c.integration = {integrator, short_run ? 0.25 : 4.0, 0.01, 1e-10,
                                     1e-12,      short_run ? 1 : 5};
                    c.threads = 1;
                    const std::vector<double> e = energy_series(c);
                    REQUIRE(e.size() > 10);
                    double worst = 0.0;
                    for (std::size_t f = 1; f < e.size(); ++f)
                        worst = std::min(worst, e[f] - e[f - 1]);
                    // Each frame's fall is at most the integrator's error (rounding-level);
                    // and the energy did rise, so the check is not empty.
                    CHECK(worst >= -1e-10 * std::abs(e.back()));
                    CHECK(e.back() > e.front() + 1e-3);
                }
            }
        }
    }
}

TEST_CASE("with V = -I (c = -1) the energy decreases") {
    for (const scheme id : {scheme::post_ln, scheme::ngpt, scheme::sqrt_scaling}) {
        CAPTURE(info(id).name);
        run_config c;
        c.scheme_id = id;
        c.n = 16;
        c.d = 4;
        c.beta = 1.0;
        c.weights.value = value_family::minus_identity;
        c.observe = {"log_energy"};
        c.integration = {integrator_kind::rk4, 4.0, 0.01, 1e-8, 1e-10, 5};
        c.threads = 1;
        const std::vector<double> e = energy_series(c);
        REQUIRE(e.size() > 10);
        CHECK(e.back() < e.front() - 1e-3);
        double rise = 0.0;
        for (std::size_t f = 1; f < e.size(); ++f)
            rise = std::max(rise, e[f] - e[f - 1]);
        CHECK(rise <= 1e-10 * std::abs(e.back())); // dE/dt = -(the same sum) <= 0
    }
}
