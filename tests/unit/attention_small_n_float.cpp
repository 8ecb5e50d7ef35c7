// The float small-n path (attention_kernel::path::single_precision_small_n, --precision float
// with n <= 128, d <= 64, softmax) against the plain double definition (reference_attention):
// n on and off its four-row groups and sixteen-key vectors, d with its compiled rows (16, 32,
// 64) and without (1, 3, 8), beta from the mean (0) to nearly the argmax (1e3), heads with
// Q != K (Q folded into K), Q the identity, V the identity and random. Also that the kernel
// chooses it unforced, and that a range of rows is bitwise the full call's.
#include "../../src/model/kernel/exp.hpp"
#include "test_support.hpp"

#include "nadyn/model/attention.hpp"
#include "nadyn/model/random.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace nadyn;
using path = attention_kernel::path;

namespace {

constexpr double float_epsilon = 0x1p-24; // unit round-off of float

// The heads of one case: two heads of random Q != K and random V; Q the identity with a random
// K and V the identity; random Q != K with V the identity (simuformer's heads).
std::vector<attention_weights> head_sets(std::size_t d, std::uint64_t seed) {
    random_source source(seed);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    auto draw = [&] { return testing::random_matrix(source, d, scale); };
    attention_weights random_qkv;
    random_qkv.heads = {{draw(), draw(), draw()}, {draw(), draw(), draw()}};
    attention_weights identity_q;
    identity_q.heads = {{matrix(), draw(), matrix()}};
    attention_weights identity_v;
    identity_v.heads = {{draw(), draw(), matrix()}, {draw(), draw(), matrix()}};
    return {random_qkv, identity_q, identity_v};
}

// The error budget relative to max |A|: the logits beta <q_k, x_j> carry a float rounding of
// about sqrt(d) eps |q| |x| (|q| ~ 1 for these draws), which the weights inherit relatively
// (d w / w = d logit), plus a few eps from the tokens, projections, exp and the weighted sum;
// per head. At beta <= 1 this is about 1e-6, at beta = 15 up to 1e-5, at beta = 1e3 (nearly
// the argmax: a logit's rounding moves the weights by beta times it) up to 5e-4. Measured:
// up to half of it at beta <= 1, 12x and 40x below it at beta = 15 and 1e3 (the bound's
// sqrt(d) |q| |x| is a worst case there); a wrong weight or a dropped key costs 1e-3 or more.
double budget(std::size_t d, double beta, std::size_t heads) {
    return (4.0 * beta * std::sqrt(static_cast<double>(d)) + 16.0) * static_cast<double>(heads) *
           float_epsilon;
}

// max |got - reference| / max |reference|, the reference attention in double with `options`
// otherwise unchanged.
double relative_to_reference(const std::vector<double>& got, const state_type& x, std::size_t n,
                             std::size_t d, const attention_weights& w, attention_options options) {
    options.arithmetic = precision::double_precision;
    std::vector<double> exact(n * d);
    reference_attention(x.data(), n, d, w, options, exact.data());
    double scale = 0.0;
    for (const double v : exact)
        scale = std::max(scale, std::abs(v));
    return testing::max_abs_difference(got, exact) / scale;
}

} // namespace

TEST_CASE("float small-n path equals the double definition within float round-off") {
    for (const std::size_t d : {1U, 3U, 8U, 16U, 32U, 64U}) {
        for (const attention_weights& w : head_sets(d, 7 + d)) {
            for (const std::size_t n : {1U, 7U, 64U, 100U, 128U}) {
                const state_type x = testing::uniform_start(n, d, 11 + n);
                for (const double beta : {0.0, 1.0, 15.0, 1e3}) {
                    CAPTURE(n);
                    CAPTURE(d);
                    CAPTURE(beta);
                    CAPTURE(w.heads.size());
                    CAPTURE(w.heads[0].Q.size());
                    CAPTURE(w.heads[0].V.size());
                    const attention_options options{beta, false, precision::single_precision};
                    std::vector<double> fast(n * d);
                    attention_kernel kernel(n, d);
                    kernel.compute(x.data(), w, options, fast.data()); // chosen, not forced
                    REQUIRE(kernel.last_path() == path::single_precision_small_n);
                    const double error = relative_to_reference(fast, x, n, d, w, options);
                    CHECK(error < budget(d, beta, w.heads.size()));
                    // It computed in float (tokens of d = 1 are +-1, exact in float).
                    if (d > 1) CHECK(error > 1e-10);
                }
            }
        }
    }
}

TEST_CASE("float small-n path: the causal mask, and rows alone bitwise the full call's") {
    for (const std::size_t d : {3U, 16U, 32U}) {
        const attention_weights w = head_sets(d, 5)[2];
        for (const std::size_t n : {7U, 64U, 101U}) {
            CAPTURE(n);
            CAPTURE(d);
            const state_type x = testing::uniform_start(n, d, 3);
            for (const bool causal : {false, true}) {
                CAPTURE(causal);
                attention_options options{4.0, causal, precision::single_precision};
                attention_kernel kernel(n, d);
                std::vector<double> full(n * d), part(n * d);
                kernel.compute(x.data(), w, options, full.data());
                CHECK(kernel.last_path() == path::single_precision_small_n);
                // Rows 3 .. n - 2: groups of four rows start elsewhere than in the full call.
                kernel.compute_rows(x.data(), w, options, 3, n - 4, part.data());
                for (std::size_t i = 3 * d; i < (n - 1) * d; ++i)
                    CHECK(part[i] == full[i]);
                CHECK(relative_to_reference(full, x, n, d, w, options) <
                      budget(d, 4.0, w.heads.size()));
            }
        }
    }
}

TEST_CASE("the softmax's float exp is exp_groups bit for bit on its arguments (x <= 0)") {
    using kernel::float_group_vector;
    // A fine grid over [-100, 0] (across the flush to 0 at -87), and the edges: -0, -87 and
    // just above, a huge negative number and -inf (a causal row's padding).
    std::vector<float> x;
    for (int i = 0; i <= 200000; ++i)
        x.push_back(-100.0f * static_cast<float>(i) / 200000.0f);
    for (const float edge : {-0.0f, -87.0f, std::nextafter(-87.0f, 0.0f), -1e30f,
                             -std::numeric_limits<float>::infinity()})
        x.push_back(edge);
    x.resize((x.size() + 63) / 64 * 64, 0.0f);
    std::size_t zeros = 0;
    for (std::size_t at = 0; at < x.size(); at += 64) {
        float_group_vector a[4], b[4];
        std::memcpy(a, x.data() + at, sizeof a);
        std::memcpy(b, x.data() + at, sizeof b);
        kernel::exp_groups(a);
        kernel::exp_groups_nonpositive(b);
        REQUIRE(std::memcmp(a, b, sizeof a) == 0);
        for (std::size_t v = 0; v < 4; ++v)
            for (std::size_t l = 0; l < 16; ++l)
                zeros += b[v][l] == 0.0f;
    }
    // Every argument below -87 gives 0, and only those: the grid's 26000 points below it,
    // -1e30 and -inf (the padding of zeros to whole groups is exp(0) = 1).
    CHECK(zeros == 26002);
    float_group_vector nan[1] = {};
    nan[0][3] = std::numeric_limits<float>::quiet_NaN();
    kernel::exp_groups_nonpositive(nan);
    CHECK(std::isnan(nan[0][3]));
    CHECK(nan[0][0] == 1.0f); // exp(0) = 1 exactly
}

TEST_CASE("float small-n path: values V = s I (heads averaged) take the tokens, scaled by s") {
    // V = s I is applied as s times each row's 1 / denominator on the tokens, not projected.
    // For s = 1/8 (8 heads' mean) every product and sum scales exactly, so the result is the
    // identity values' divided by 8 bit for bit; for s = 1/3 it is the definition's within
    // float round-off (a lost or doubled s would be off by a factor).
    const std::size_t d = 16;
    random_source source(31);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    attention_weights identity;
    for (int h = 0; h < 2; ++h)
        identity.heads.push_back({testing::random_matrix(source, d, scale),
                                  testing::random_matrix(source, d, scale), matrix()});
    for (const std::size_t n : {7U, 64U, 100U}) {
        CAPTURE(n);
        const state_type x = testing::uniform_start(n, d, 5 + n);
        for (const bool causal : {false, true}) {
            CAPTURE(causal);
            const attention_options options{2.0, causal, precision::single_precision};
            attention_kernel kernel(n, d);
            std::vector<double> plain_values(n * d), eighth(n * d), third(n * d);
            kernel.compute(x.data(), identity, options, plain_values.data());
            REQUIRE(kernel.last_path() == path::single_precision_small_n);
            attention_weights scaled = identity;
            for (attention_head& head : scaled.heads)
                head.V =
                    matrix::Identity(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d)) /
                    8.0;
            kernel.compute(x.data(), scaled, options, eighth.data());
            REQUIRE(kernel.last_path() == path::single_precision_small_n);
            for (std::size_t i = 0; i < n * d; ++i)
                CHECK(eighth[i] == plain_values[i] / 8.0);
            for (attention_head& head : scaled.heads)
                head.V =
                    matrix::Identity(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d)) /
                    3.0;
            kernel.compute(x.data(), scaled, options, third.data());
            CHECK(relative_to_reference(third, x, n, d, scaled, options) <
                  budget(d, 2.0, scaled.heads.size()));
        }
    }
}
