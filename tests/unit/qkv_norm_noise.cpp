// QKV-Norm, norm noise and the attention observables (docs/model.md §11): every kernel path
// against the naive loop, the identity case bitwise, the noise factors' distribution, and the
// entropy's closed forms.
#include "../../src/model/kernel/general.hpp" // detail::worth_parallel
#include "nadyn/model/attention.hpp"
#include "nadyn/model/attention_observables.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/weights.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace nadyn;

namespace {

std::vector<double> directions_of(std::size_t n, std::size_t d, std::uint64_t seed) {
    const state_type x = testing::uniform_start(n, d, seed);
    return {x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n * d)};
}

// H heads of random Q, K, V (scale 1/sqrt(d): Kaiming).
attention_weights random_heads(std::size_t heads, std::size_t d, std::uint64_t seed) {
    random_source source(seed);
    attention_weights w;
    w.heads.clear();
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (std::size_t h = 0; h < heads; ++h)
        w.heads.push_back({testing::random_matrix(source, d, scale),
                           testing::random_matrix(source, d, scale),
                           testing::random_matrix(source, d, scale)});
    return w;
}

std::vector<double> kernel_output(const std::vector<double>& y, std::size_t n, std::size_t d,
                                  const attention_weights& w, const attention_options& o,
                                  std::size_t block = 0) {
    attention_kernel kernel(n, d, block);
    std::vector<double> out(n * d);
    kernel.compute(y.data(), w, o, out.data());
    return out;
}

std::vector<double> reference_output(const std::vector<double>& y, std::size_t n, std::size_t d,
                                     const attention_weights& w, const attention_options& o) {
    std::vector<double> out(n * d);
    reference_attention(y.data(), n, d, w, o, out.data());
    return out;
}

} // namespace

TEST_CASE("QKV-Norm and norm noise: the kernel matches the naive loop to 1e-12") {
    const std::size_t n = 53, d = 7; // blocks of 16 leave a partial last block
    const std::vector<double> theta = directions_of(n, d, 3);
    // Tokens off the sphere (as no-norm's r_k theta_k): QKV-Norm must normalise every map.
    std::vector<double> tokens = theta;
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            tokens[k * d + c] *= 0.5 + 0.05 * static_cast<double>(k);
    for (const bool causal : {false, true})
        for (const bool noisy : {false, true})
            for (const bool unit : {false, true}) {
                CAPTURE(causal);
                CAPTURE(noisy);
                CAPTURE(unit);
                attention_weights w = random_heads(3, d, 11);
                if (noisy) draw_norm_noise(w, n, 0.2, 5, 4);
                attention_options o{4.0, causal};
                o.qkv_norm = true;
                o.unit_inputs = unit;
                const std::vector<double>& y = unit ? theta : tokens;
                const auto fast = kernel_output(y, n, d, w, o, 16);
                const auto slow = reference_output(y, n, d, w, o);
                CHECK(testing::max_abs_difference(fast, slow) < 1e-12);
                // Noise without QKV-Norm: the factors scale the plain projections.
                o.qkv_norm = false;
                CHECK(testing::max_abs_difference(kernel_output(y, n, d, w, o, 16),
                                                  reference_output(y, n, d, w, o)) < 1e-12);
            }
}

TEST_CASE("QKV-Norm on the symmetric path (Q = K, no noise) matches the naive loop") {
    const std::size_t n = 300, d = 24;
    const std::vector<double> theta = directions_of(n, d, 8);
    random_source source(2);
    attention_weights w;
    w.heads[0].Q = testing::random_matrix(source, d, 0.3);
    w.heads[0].K = w.heads[0].Q;
    w.heads[0].V = testing::random_matrix(source, d, 0.3);
    attention_options o{6.0};
    o.qkv_norm = true;
    o.unit_inputs = true;
    attention_kernel kernel(n, d, 64);
    std::vector<double> out(n * d);
    kernel.compute(theta.data(), w, o, out.data());
    CHECK(kernel.last_path() == attention_kernel::path::symmetric);
    CHECK(testing::max_abs_difference(out, reference_output(theta, n, d, w, o)) < 1e-12);
    // With noise the queries and keys differ: the general path, still the naive numbers.
    draw_norm_noise(w, n, 0.1, 1, 0);
    kernel.compute(theta.data(), w, o, out.data());
    CHECK(kernel.last_path() == attention_kernel::path::general);
    CHECK(testing::max_abs_difference(out, reference_output(theta, n, d, w, o)) < 1e-12);
}

TEST_CASE("QKV-Norm and noise in single precision stay within the float bound") {
    const std::size_t n = 40, d = 8;
    const std::vector<double> theta = directions_of(n, d, 4);
    attention_weights w = random_heads(2, d, 6);
    draw_norm_noise(w, n, 0.1, 2, 1);
    attention_options o{5.0};
    o.qkv_norm = true;
    o.unit_inputs = true;
    const auto exact = reference_output(theta, n, d, w, o);
    o.arithmetic = precision::single_precision;
    // Bound of docs/model.md §6 with the logits' scale beta (QKV-Norm bounds them by beta),
    // times the two heads and the noise factors (below 2 here).
    const double bound = 2.0 * 2.0 * (4.0 * 5.0 * (d + 4) + 16.0) * std::ldexp(1.0, -24);
    CHECK(testing::max_abs_difference(kernel_output(theta, n, d, w, o), exact) < bound);
}

TEST_CASE("QKV-Norm with identity weights on the sphere is the plain model, bit for bit") {
    for (const std::size_t n : {std::size_t{20}, std::size_t{300}}) {
        const std::size_t d = 16;
        const std::vector<double> theta = directions_of(n, d, 9);
        attention_weights identity;
        identity.heads.assign(2, attention_head{});
        attention_options plain{3.0};
        plain.unit_inputs = true;
        attention_options normalised = plain;
        normalised.qkv_norm = true;
        for (const bool causal : {false, true}) {
            plain.causal = normalised.causal = causal;
            CHECK(kernel_output(theta, n, d, identity, plain) ==
                  kernel_output(theta, n, d, identity, normalised));
        }
        // Off the sphere QKV-Norm does act on identity maps: the naive loop says how.
        normalised.unit_inputs = false;
        std::vector<double> tokens = theta;
        for (double& v : tokens)
            v *= 3.0;
        CHECK(testing::max_abs_difference(kernel_output(tokens, n, d, identity, normalised),
                                          kernel_output(theta, n, d, identity, plain)) < 1e-12);
    }
}

TEST_CASE("norm-noise factors of exactly 1 leave the kernel's bits unchanged") {
    const std::size_t n = 70, d = 5;
    const std::vector<double> theta = directions_of(n, d, 1);
    attention_weights w = random_heads(1, d, 3);
    const attention_options o{2.5};
    const auto plain = kernel_output(theta, n, d, w, o);
    w.heads[0].query_norm.assign(n, 1.0);
    w.heads[0].key_norm.assign(n, 1.0);
    w.heads[0].value_norm.assign(n, 1.0);
    CHECK(kernel_output(theta, n, d, w, o) == plain);
    // sigma = 0 draws no factors at all: the noiseless model.
    draw_norm_noise(w, n, 0.0, 1, 0);
    CHECK(!w.has_norm_noise());
}

TEST_CASE("norm-noise factors: 1 + sigma xi with xi standard normal, one stream per layer, head") {
    const std::size_t n = 20000;
    const double sigma = 0.05;
    attention_weights w;
    w.heads.assign(2, attention_head{});
    draw_norm_noise(w, n, sigma, 7, 3);
    std::vector<double> xi;
    for (const auto& head : w.heads)
        for (const auto* factors : {&head.query_norm, &head.key_norm, &head.value_norm}) {
            REQUIRE(factors->size() == n);
            for (const double f : *factors)
                xi.push_back((f - 1.0) / sigma);
        }
    const double count = static_cast<double>(xi.size());
    double sum = 0.0, squares = 0.0;
    for (const double x : xi) {
        sum += x;
        squares += x * x;
    }
    const double mean = sum / count, variance = squares / count - mean * mean;
    // Six standard errors: mean ~ N(0, 1/N), sample variance ~ N(1, 2/N).
    CHECK(std::abs(mean) < 6.0 / std::sqrt(count));
    CHECK(std::abs(variance - 1.0) < 6.0 * std::sqrt(2.0 / count));
    // Pearson's chi-square over 10 equiprobable bins of N(0, 1) (edges: the normal's deciles);
    // 9 degrees of freedom, P(chi2_9 > 40) < 5e-6.
    const double deciles[9] = {
        -1.2815515655446004, -0.8416212335729142, -0.5244005127080407, -0.2533471031357997, 0.0,
        0.2533471031357997,  0.5244005127080407,  0.8416212335729142,  1.2815515655446004};
    double bins[10] = {};
    for (const double x : xi) {
        std::size_t b = 0;
        while (b < 9 && x >= deciles[b])
            ++b;
        bins[b] += 1.0;
    }
    double chi2 = 0.0;
    for (const double observed : bins)
        chi2 += (observed - count / 10.0) * (observed - count / 10.0) / (count / 10.0);
    CHECK(chi2 < 40.0);
    // Independent streams: another layer, another head, another seed give other numbers; the
    // same (seed, layer, head) the same ones (a resumed run redraws them).
    attention_weights again;
    again.heads.assign(2, attention_head{});
    draw_norm_noise(again, n, sigma, 7, 3);
    CHECK(again.heads[1].key_norm == w.heads[1].key_norm);
    draw_norm_noise(again, n, sigma, 7, 4);
    CHECK(again.heads[0].query_norm != w.heads[0].query_norm);
    CHECK(w.heads[0].query_norm != w.heads[1].query_norm);
    CHECK(norm_noise_stream_id(3, 1) != norm_noise_stream_id(3, 0));
    CHECK(norm_noise_stream_id(0, 0) != weights_stream_id(0, 0));
    CHECK(norm_noise_stream_id(5, 2) < head_weights_stream);
}

TEST_CASE("attention_entropy: 1 for beta = 0, the closed form of the symmetric start, -> 0") {
    SUBCASE("beta = 0: uniform rows, entropy exactly 1, no flips") {
        for (const std::size_t n : {std::size_t{2}, std::size_t{37}, std::size_t{1000}}) {
            const std::size_t d = 6;
            const std::vector<double> theta = directions_of(n, d, 2);
            attention_weights w = random_heads(2, d, 4);
            attention_observables pass(n, d, 16);
            const attention_summary s = pass.compute(theta.data(), w, attention_options{0.0});
            CHECK(s.attention_entropy == 1.0);
            CHECK(s.argmax_flips == 0.0);
            // beta = 0 ties every key: noise cannot move the argmax (ties to the lowest index).
            draw_norm_noise(w, n, 0.3, 1, 0);
            CHECK(pass.compute(theta.data(), w, attention_options{0.0}).argmax_flips == 0.0);
        }
    }
    SUBCASE("symmetric start: (log(e^beta + n - 1) - beta e^beta / (e^beta + n - 1)) / log n") {
        const std::size_t n = 256, d = 256;
        const double beta = 5.0;
        const state_type x = testing::symmetric_start(n, d);
        attention_options o{beta};
        o.unit_inputs = true;
        attention_observables pass(n, d);
        const attention_summary s = pass.compute(x.data(), attention_weights{}, o);
        const double z = std::exp(beta) + static_cast<double>(n - 1);
        const double expected =
            (std::log(z) - beta * std::exp(beta) / z) / std::log(static_cast<double>(n));
        CHECK(std::abs(s.attention_entropy - expected) < 1e-12);
        CHECK(std::abs(s.attention_entropy - 0.7502902828476) < 1e-12);
        CHECK(s.argmax_flips == 0.0);
        // QKV-Norm changes nothing here (unit inputs, identity maps).
        o.qkv_norm = true;
        CHECK(pass.compute(x.data(), attention_weights{}, o).attention_entropy ==
              s.attention_entropy);
    }
    SUBCASE("one dominant key: entropy -> 0 as beta grows") {
        const std::size_t n = 30, d = 30;
        const state_type x = testing::symmetric_start(n, d);
        attention_options o{50.0};
        attention_observables pass(n, d);
        // Each token's own key dominates by e^-50: entropy ~ 50 n e^-50 / log n.
        const double entropy = pass.compute(x.data(), attention_weights{}, o).attention_entropy;
        CHECK(entropy > 0.0);
        CHECK(entropy < 1e-18);
    }
}

TEST_CASE("argmax_flips: the naive count of tokens whose top key moved under the noise") {
    // n^2 (d + 16) > 4e6, so the pass deals its blocks to two threads below when asked to
    // (below it every call runs on one thread, whatever it asks). Ten times the threshold:
    // a call then outlasts a scheduler time slice, so that the second thread takes blocks
    // even on a loaded machine (the first would otherwise deal them all to itself).
    const std::size_t n = 2000, d = 5;
    REQUIRE(detail::worth_parallel(n, d));
    const std::vector<double> theta = directions_of(n, d, 12);
    attention_weights w = random_heads(2, d, 13);
    draw_norm_noise(w, n, 0.3, 3, 0);
    attention_options o{3.0};
    o.qkv_norm = true;
    o.unit_inputs = true;
    // Naive: logits beta <f^q q_k, f^k key_j> of the normalised rows, against the noiseless.
    double flips = 0.0;
    for (const attention_head& head : w.heads) {
        auto rows_of = [&](const matrix& m) {
            std::vector<Eigen::VectorXd> rows;
            for (std::size_t k = 0; k < n; ++k) {
                Eigen::VectorXd v = m * Eigen::Map<const Eigen::VectorXd>(
                                            theta.data() + k * d, static_cast<Eigen::Index>(d));
                rows.emplace_back(v / v.norm());
            }
            return rows;
        };
        const std::vector<Eigen::VectorXd> queries = rows_of(head.Q), keys = rows_of(head.K);
        for (std::size_t k = 0; k < n; ++k) {
            std::size_t clean = 0, noisy = 0;
            double best_clean = -std::numeric_limits<double>::infinity(), best_noisy = best_clean;
            for (std::size_t j = 0; j < n; ++j) {
                const double logit = o.beta * queries[k].dot(keys[j]);
                const double noisy_logit = logit * head.query_norm[k] * head.key_norm[j];
                if (logit > best_clean) best_clean = logit, clean = j;
                if (noisy_logit > best_noisy) best_noisy = noisy_logit, noisy = j;
            }
            flips += clean != noisy ? 1.0 : 0.0;
        }
    }
    flips /= static_cast<double>(2 * n);
    o.threads = 1; // not the default, which is every core
    attention_observables pass(n, d, 16);
    const attention_summary s = pass.compute(theta.data(), w, o);
    CHECK(s.argmax_flips == flips);
    CHECK(s.argmax_flips > 0.0); // sigma = 0.3 moves some top keys at beta = 3
    // Thread count: the same numbers with two threads, in a few calls (the blocks go to
    // whichever thread is free).
    o.threads = 2;
    attention_observables two(n, d, 16);
    for (int call = 0; call < 3; ++call) {
        const attention_summary t = two.compute(theta.data(), w, o);
        CHECK(t.argmax_flips == s.argmax_flips);
        CHECK(t.attention_entropy == s.attention_entropy);
    }
}
