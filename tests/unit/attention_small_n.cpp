// The general path's loops for a few tokens (src/model/kernel/small_n.cpp, n <= 128): against the
// plain O(n^2 d) definition, row ranges bitwise the full call, and results independent of
// the thread a run is on (runs of a sweep share the process).
#include "test_support.hpp"

#include "nadyn/model/attention.hpp"
#include "nadyn/model/attention_observables.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/weights.hpp"

#include "../../src/model/kernel/small_n.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

using namespace nadyn;

namespace {

attention_weights gaussian_heads(std::size_t d, std::size_t heads, std::uint64_t seed) {
    random_source source(seed);
    attention_weights w;
    w.heads.clear();
    for (std::size_t h = 0; h < heads; ++h)
        w.heads.push_back({testing::random_matrix(source, d, 1.0 / std::sqrt(double(d))),
                           testing::random_matrix(source, d, 1.0 / std::sqrt(double(d))),
                           testing::random_matrix(source, d, 1.0 / std::sqrt(double(d)))});
    return w;
}

void check_against_reference(std::size_t n, std::size_t d, const attention_weights& w, double beta,
                             bool causal) {
    CAPTURE(n);
    CAPTURE(d);
    CAPTURE(beta);
    CAPTURE(causal);
    REQUIRE(detail::takes_small_n(n, d));
    state_type x = testing::uniform_start(n, d, 7);
    std::vector<double> fast(n * d), plain(n * d);
    attention_kernel kernel(n, d);
    kernel.compute(x.data(), w, {beta, causal}, fast.data());
    CHECK(kernel.last_path() == attention_kernel::path::small_n);
    reference_attention(x.data(), n, d, w, {beta, causal}, plain.data());
    // Convex combinations of O(1) values (times the number of heads): 1e-12 absolute is
    // thousands of ulps, room for a different summation order, far below any real error.
    CHECK(testing::max_abs_difference(fast, plain) < 1e-12);
}

} // namespace

TEST_CASE("small-n path equals the naive loop: Gaussian Q, K, V, one and eight heads") {
    for (bool causal : {false, true}) {
        for (std::size_t heads : {1U, 8U}) {
            const attention_weights w = gaussian_heads(16, heads, 5 + heads);
            check_against_reference(64, 16, w, 4.0, causal);
            check_against_reference(128, 16, w, 4.0, causal); // the limit
        }
        // Sizes off the 32-key chunks and odd dimensions: the padding and the tails.
        check_against_reference(1, 3, gaussian_heads(3, 1, 2), 2.0, causal);
        check_against_reference(33, 5, gaussian_heads(5, 2, 3), 3.0, causal);
        check_against_reference(97, 64, gaussian_heads(64, 1, 4), 1.0, causal);
    }
}

TEST_CASE("small-n path: beta = 0 gives the mean of the values, beta = 1e4 the nearest key") {
    const std::size_t n = 40, d = 6;
    const attention_weights w = gaussian_heads(d, 1, 11);
    state_type x = testing::uniform_start(n, d, 3);
    const Eigen::Map<const matrix> tokens(x.data(), n, d);
    const matrix values = tokens * w.heads[0].V.transpose();
    std::vector<double> out(n * d);
    attention_kernel kernel(n, d);
    // beta = 0: every weight is exactly 1 / n, so A_k is the mean of the values.
    kernel.compute(x.data(), w, {0.0, false}, out.data());
    const Eigen::RowVectorXd mean = values.colwise().mean();
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            CHECK(std::abs(out[k * d + c] - mean(Eigen::Index(c))) < 1e-14);
    // beta = 1e4 with Q = I, K = 2 I: the largest logit of token k is its own (2 cos = 2),
    // uniform directions in d = 6 keep the other cosines below 1 - 1e-2 here (checked), so the
    // other weights are below e^{-200}: finite (log-sum-exp) and A_k = V theta_k to round-off.
    attention_weights sharp;
    sharp.heads[0].K = 2.0 * matrix::Identity(Eigen::Index(d), Eigen::Index(d));
    sharp.heads[0].V = w.heads[0].V;
    const matrix gram = tokens * tokens.transpose();
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t j = 0; j < n; ++j)
            if (j != k) REQUIRE(gram(Eigen::Index(k), Eigen::Index(j)) < 1.0 - 1e-2);
    kernel.compute(x.data(), sharp, {1e4, false}, out.data());
    CHECK(kernel.last_path() == attention_kernel::path::small_n);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c) {
            REQUIRE(std::isfinite(out[k * d + c]));
            CHECK(std::abs(out[k * d + c] - values(Eigen::Index(k), Eigen::Index(c))) < 1e-14);
        }
}

TEST_CASE("small-n path: row ranges are bitwise the full call") {
    // A range's rows fall into other pairs than the full call's, and its odd last row runs
    // alone: the pair loops must give each row a lone row's arithmetic, also in the values'
    // tail (n not a multiple of the four key streams) and off the fused 8-key logits (n = 45).
    for (const auto& shape :
         {std::pair<std::size_t, std::size_t>{64, 16}, {47, 16}, {46, 8}, {45, 16}, {42, 16}}) {
        const std::size_t n = shape.first, d = shape.second;
        CAPTURE(n);
        CAPTURE(d);
        const attention_weights w = gaussian_heads(d, 2, 9);
        state_type x = testing::uniform_start(n, d, 21);
        for (bool causal : {false, true}) {
            std::vector<double> full(n * d);
            attention_kernel whole(n, d);
            whole.compute(x.data(), w, {4.0, causal}, full.data());
            for (std::size_t first : {std::size_t{0}, std::size_t{5}, std::size_t{31}, n - 1}) {
                const std::size_t count = std::min<std::size_t>(n - first, 17);
                attention_kernel kernel(n, d);
                std::vector<double> rows(n * d, -1.0);
                kernel.compute_rows(x.data(), w, {4.0, causal}, first, count, rows.data());
                CHECK(std::memcmp(rows.data() + first * d, full.data() + first * d,
                                  count * d * sizeof(double)) == 0);
            }
        }
    }
}

TEST_CASE("small-n logits: the dot products, for any rows, the caller's padding untouched") {
    // small_n_logits() gives the frames' Gram pass and the attention observables their
    // logits: a range of rows is bitwise those rows of one call, and n = 45 is no whole
    // number of lanes (the keys' padding must not reach the caller's rows).
    for (const auto& shape : {std::pair<std::size_t, std::size_t>{64, 16}, {45, 16}, {33, 8}}) {
        const std::size_t n = shape.first, d = shape.second;
        CAPTURE(n);
        const state_type q = testing::uniform_start(n, d, 5), k = testing::uniform_start(n, d, 6);
        const double beta = 2.5;
        for (std::size_t first : {std::size_t{0}, std::size_t{3}}) {
            const std::size_t rows = n - first, leading = n + 3; // room beyond each row kept
            std::vector<double> together(rows * leading, -7.0), alone(rows * leading, -7.0);
            detail::small_n_logits(q.data(), k.data(), n, d, beta, first, rows, together.data(),
                                   leading);
            for (std::size_t i = 0; i < rows; ++i)
                detail::small_n_logits(q.data(), k.data(), n, d, beta, first + i, 1,
                                       alone.data() + i * leading, leading);
            CHECK(std::memcmp(together.data(), alone.data(), together.size() * sizeof(double)) ==
                  0);
            double worst = 0.0;
            for (std::size_t i = 0; i < rows; ++i)
                for (std::size_t j = 0; j < leading; ++j) {
                    if (j >= n) { // the padding is not the caller's
                        CHECK(together[i * leading + j] == -7.0);
                        continue;
                    }
                    double dot = 0.0;
                    for (std::size_t c = 0; c < d; ++c)
                        dot += q[(first + i) * d + c] * k[j * d + c];
                    worst = std::max(worst, std::abs(together[i * leading + j] - beta * dot));
                }
            CHECK(worst < 1e-14);
        }
    }
}

TEST_CASE("small-n path: results do not depend on the thread, with runs side by side") {
    const std::size_t n = 64, d = 16;
    const attention_weights w = gaussian_heads(d, 8, 13);
    std::vector<state_type> starts;
    std::vector<std::vector<double>> alone;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        starts.push_back(testing::uniform_start(n, d, seed));
        alone.emplace_back(n * d);
        attention_kernel kernel(n, d);
        kernel.compute(starts.back().data(), w, {4.0, false}, alone.back().data());
    }
    // Four threads at once, each its own kernel and a different start, many times over.
    std::vector<std::vector<double>> together(4, std::vector<double>(n * d));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            attention_kernel kernel(n, d);
            for (int repeat = 0; repeat < 50; ++repeat) {
                kernel.compute(starts[t].data(), w, {4.0, false}, together[t].data());
                if (std::memcmp(together[t].data(), alone[t].data(), n * d * sizeof(double)) != 0)
                    ++mismatches[t];
            }
        });
    for (std::thread& thread : threads)
        thread.join();
    for (std::size_t t = 0; t < 4; ++t)
        CHECK(mismatches[t] == 0);
}

TEST_CASE("small-n projection equals Eigen's product; other shapes are declined") {
    random_source source(17);
    for (std::size_t d : {8U, 16U, 32U, 64U}) {
        for (std::size_t n : {1U, 5U, 64U, 128U}) {
            CAPTURE(d);
            CAPTURE(n);
            REQUIRE(detail::takes_small_n_projection(n, d));
            const state_type x = testing::uniform_start(n, d, 4);
            const matrix m = testing::random_matrix(source, d, 1.0);
            const matrix m_t = m.transpose(); // row-major: row c holds M's column c
            matrix fast;
            detail::small_n_project_transposed(x.data(), n, d, m_t.data(), fast);
            const matrix plain =
                Eigen::Map<const matrix>(x.data(), Eigen::Index(n), Eigen::Index(d)) *
                m.transpose();
            // Sums of d products of O(1) terms: a few ulps of sqrt(d) apart at most.
            CHECK((fast - plain).cwiseAbs().maxCoeff() < 1e-13);
        }
    }
    CHECK_FALSE(detail::takes_small_n_projection(129, 16));
    CHECK_FALSE(detail::takes_small_n_projection(64, 12));
}

TEST_CASE("small-n path: Q folded into K when only one of them is given") {
    random_source source(23);
    const double scale = 1.0 / std::sqrt(16.0);
    attention_weights only_q, only_k;
    only_q.heads = {{testing::random_matrix(source, 16, scale), matrix(),
                     testing::random_matrix(source, 16, scale)}};
    only_k.heads = {{matrix(), testing::random_matrix(source, 16, scale), matrix()}};
    for (bool causal : {false, true}) {
        check_against_reference(64, 16, only_q, 4.0, causal);
        check_against_reference(40, 8, gaussian_heads(8, 2, 29), 4.0, causal);
        check_against_reference(64, 16, only_k, 4.0, causal);
    }
}

TEST_CASE("small-n weight cache: new weights in the same storage are seen, bitwise a fresh "
          "kernel's") {
    // The kernel keeps each head's maps transposed and K^T Q across calls; per-layer weights
    // are redrawn into the same matrices, so the cache must compare contents, not addresses.
    const std::size_t n = 64, d = 16;
    const state_type x = testing::uniform_start(n, d, 11);
    attention_weights w = gaussian_heads(d, 3, 31);
    const attention_weights other = gaussian_heads(d, 3, 37);
    attention_kernel reused(n, d), reused_float(n, d);
    attention_observables reused_observables(n, d);
    std::vector<double> out(n * d), fresh_out(n * d);
    attention_options single{4.0};
    single.arithmetic = precision::single_precision; // the float copies of the cache
    for (int round = 0; round < 4; ++round) {
        CAPTURE(round);
        if (round % 2 == 1)
            for (std::size_t h = 0; h < 3; ++h) // overwrite in place: same addresses
                w.heads[h].Q = other.heads[h].Q, w.heads[h].K = other.heads[h].K,
                w.heads[h].V = other.heads[h].V;
        else if (round > 0)
            w = gaussian_heads(d, 3, 31 + static_cast<std::uint64_t>(round));
        // One entry changed by one ulp is a new map too.
        if (round == 3) w.heads[1].K(2, 3) = std::nextafter(w.heads[1].K(2, 3), 1.0);
        reused.compute(x.data(), w, {4.0}, out.data());
        attention_kernel fresh(n, d);
        fresh.compute(x.data(), w, {4.0}, fresh_out.data());
        CHECK(std::memcmp(out.data(), fresh_out.data(), n * d * sizeof(double)) == 0);
        reused_float.compute(x.data(), w, single, out.data());
        attention_kernel fresh_float(n, d);
        fresh_float.compute(x.data(), w, single, fresh_out.data());
        CHECK(std::memcmp(out.data(), fresh_out.data(), n * d * sizeof(double)) == 0);
        attention_observables fresh_observables(n, d);
        const attention_summary a = reused_observables.compute(x.data(), w, {4.0});
        const attention_summary b = fresh_observables.compute(x.data(), w, {4.0});
        CHECK(a.attention_entropy == b.attention_entropy);
    }
}

TEST_CASE("frame entropy from the kernel's own logits is bitwise the observables' pass") {
    // A frame's attention entropy taken inside the step's evaluation (the observables' own
    // pass skipped) must be the very number that pass gives, and the evaluation's A must not
    // change by being observed.
    const double scale16 = 1.0 / std::sqrt(16.0);
    random_source source(41);
    attention_weights only_q;
    only_q.heads = {{testing::random_matrix(source, 16, scale16), matrix(), matrix()}};
    struct config {
        std::size_t n, d;
        attention_weights w;
        double beta;
        bool causal, qkv;
    };
    const std::vector<config> configs = {
        {64, 16, gaussian_heads(16, 1, 3), 4.0, false, false},
        {64, 16, gaussian_heads(16, 8, 5), 4.0, false, false},
        {72, 16, gaussian_heads(16, 2, 7), 4.0, false, false}, // a piece of 8 at the end
        {40, 8, gaussian_heads(8, 3, 9), 9.0, false, false},
        {64, 32, gaussian_heads(32, 2, 11), 4.0, false, false}, // single rows
        {45, 16, gaussian_heads(16, 2, 13), 4.0, false, false}, // n odd, not a multiple of 8
        {64, 16, gaussian_heads(16, 2, 15), 4.0, true, false},  // causal rows
        {64, 16, gaussian_heads(16, 2, 17), 4.0, false, true},  // QKV-Norm: no folding
        {64, 16, only_q, 4.0, false, false},
        {64, 16, gaussian_heads(16, 2, 19), 0.0, false, false}, // uniform rows: exactly 1
        {2, 8, gaussian_heads(8, 1, 21), 4.0, false, false},
        {128, 64, gaussian_heads(64, 1, 23), 4.0, false, false},
    };
    for (const config& c : configs) {
        CAPTURE(c.n);
        CAPTURE(c.d);
        CAPTURE(c.causal);
        CAPTURE(c.qkv);
        const state_type x = testing::uniform_start(c.n, c.d, 31);
        attention_options options{c.beta, c.causal};
        options.qkv_norm = c.qkv;
        attention_kernel kernel(c.n, c.d);
        std::vector<double> plain(c.n * c.d), observed(c.n * c.d);
        kernel.compute(x.data(), c.w, options, plain.data());
        CHECK_FALSE(kernel.observed_entropy().has_value());
        kernel.observe_next_call();
        kernel.compute(x.data(), c.w, options, observed.data());
        CHECK(std::memcmp(plain.data(), observed.data(), plain.size() * sizeof(double)) == 0);
        REQUIRE(kernel.observed_entropy().has_value());
        attention_observables pass(c.n, c.d);
        const double expected = pass.compute(x.data(), c.w, options).attention_entropy;
        CHECK(*kernel.observed_entropy() == expected);
        if (c.beta == 0.0) CHECK(expected == 1.0);
        // Only the call asked.
        kernel.compute(x.data(), c.w, options, observed.data());
        CHECK_FALSE(kernel.observed_entropy().has_value());
    }
}

TEST_CASE("frame entropy: the kernel declines where its path cannot give it") {
    const std::size_t n = 64, d = 16;
    const state_type x = testing::uniform_start(n, d, 33);
    std::vector<double> out(n * d);
    auto declines = [&](const attention_weights& w, const attention_options& options,
                        std::size_t first, std::size_t count) {
        attention_kernel kernel(n, d);
        kernel.observe_next_call();
        kernel.compute_rows(x.data(), w, options, first, count, out.data());
        return !kernel.observed_entropy().has_value();
    };
    const attention_weights w = gaussian_heads(d, 2, 43);
    CHECK(declines(attention_weights{}, {4.0}, 0, n)); // Q = K = I: the symmetric path
    CHECK(declines(w, {4.0}, 0, n / 2));               // some rows only (a shared run)
    attention_options single{4.0};
    single.arithmetic = precision::single_precision;
    CHECK(declines(w, single, 0, n));
    attention_options unnormalised{4.0};
    unnormalised.kind = attention_kind::unnormalized;
    CHECK(declines(w, unnormalised, 0, n));
    attention_weights noisy = w;
    noisy.heads[0].query_norm.assign(n, 1.1);
    CHECK(declines(noisy, {4.0}, 0, n));
    CHECK_FALSE(declines(w, {4.0}, 0, n));
}
