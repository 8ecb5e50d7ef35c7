// Heads that share their values (one V for all heads, as identity values averaged over heads:
// simuformer's experiment) are summed before one value product on the small-n and the general
// paths (src/model/kernel/heads.cpp, issue 38): the summed route is taken where it applies,
// declined where it does not, and agrees with the per-head route and the naive loop to rounding;
// and the general paths fold Q into K (the logits from Q^T K directly).
#include "test_support.hpp"

#include "nadyn/model/attention.hpp"
#include "nadyn/model/attention_observables.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/weights.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace nadyn;
using path = attention_kernel::path;

namespace {

// `heads` heads with their own logits and one shared V: interaction-style (Q the identity,
// K a Gaussian B) or both Q and K Gaussian; V = s I or a Gaussian shared by all heads.
attention_weights shared_value_heads(std::size_t d, std::size_t heads, bool both_maps,
                                     const matrix& values, std::uint64_t seed) {
    random_source source(seed);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    attention_weights w;
    w.heads.clear();
    for (std::size_t h = 0; h < heads; ++h) {
        matrix q = both_maps ? testing::random_matrix(source, d, scale) : matrix();
        w.heads.push_back({q, testing::random_matrix(source, d, scale), values});
    }
    return w;
}

matrix scaled_identity(std::size_t d, double s) {
    return s * matrix::Identity(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
}

struct routes {
    std::vector<double> summed, per_head, reference;
    path summed_path, per_head_path;
    bool summed_taken, per_head_taken;
};

routes both_routes(std::size_t n, std::size_t d, const attention_weights& w,
                   const attention_options& options) {
    const state_type x = testing::uniform_start(n, d, 17);
    routes r{std::vector<double>(n * d),
             std::vector<double>(n * d),
             std::vector<double>(n * d),
             path::general,
             path::general,
             false,
             true};
    attention_kernel kernel(n, d);
    kernel.compute(x.data(), w, options, r.summed.data());
    r.summed_path = kernel.last_path();
    r.summed_taken = kernel.summed_values();
    kernel.sum_shared_values(false);
    kernel.compute(x.data(), w, options, r.per_head.data());
    r.per_head_path = kernel.last_path();
    r.per_head_taken = kernel.summed_values();
    reference_attention(x.data(), n, d, w, options, r.reference.data());
    return r;
}

} // namespace

TEST_CASE("heads sharing their values take the summed route, equal to the per-head route") {
    struct config {
        std::size_t n, d, heads;
        bool both_maps;
        double s; // V = s I; 0: a shared Gaussian V
        bool causal;
    };
    const std::vector<config> configs = {
        {64, 16, 8, false, 1.0 / 8, false}, // simuformer's shape: V = I / 8, Q = I, K = B
        {64, 16, 8, true, 0.0, false},      // Gaussian Q, K per head, one Gaussian V
        {64, 16, 3, true, 1.0 / 3, false},  // s not a power of two
        {64, 16, 4, false, 1.0 / 4, true},  // causal rows, one at a time
        {33, 5, 2, true, 0.0, false},       // no compiled loops: the any-d loops, Eigen's fold
        {45, 32, 2, false, 0.5, false},     // n odd: the last row alone
        {128, 64, 2, true, 1.0, false},     // the limit
        {64, 16, 11, true, 0.0, false},     // more heads than a block of 8: two blocks
        {40, 16, 9, false, 1.0 / 9, false}, // n not whole vectors of floats, two blocks
        // Beyond it, the general path's blocks (n > 128 or d > 64):
        {200, 16, 8, false, 1.0 / 8, false}, // simuformer's heads at n = 200
        {300, 16, 4, true, 0.0, true},       // causal, a shared Gaussian V, two blocks or more
        {150, 8, 3, true, 1.0 / 3, false},   // s not a power of two
        {64, 80, 2, true, 1.0, false},       // d beyond the small-n loops
    };
    for (const precision arithmetic : {precision::double_precision, precision::single_precision}) {
        const bool single = arithmetic == precision::single_precision;
        for (const config& c : configs) {
            CAPTURE(c.n);
            CAPTURE(c.d);
            CAPTURE(c.heads);
            CAPTURE(c.causal);
            CAPTURE(single);
            random_source source(c.n + c.d);
            const matrix values =
                c.s != 0.0 ? scaled_identity(c.d, c.s) : testing::random_matrix(source, c.d, 0.3);
            const attention_weights w =
                shared_value_heads(c.d, c.heads, c.both_maps, values, 5 + c.heads);
            attention_options options{4.0, c.causal};
            options.arithmetic = arithmetic;
            const routes r = both_routes(c.n, c.d, w, options);
            const bool small_n = c.n <= 128 && c.d <= 64;
            const path expected = small_n
                                      ? (single ? path::single_precision_small_n : path::small_n)
                                      : (single ? path::single_precision : path::general);
            CHECK(r.summed_taken);
            CHECK(r.summed_path == expected);
            CHECK_FALSE(r.per_head_taken);
            CHECK(r.per_head_path == expected);
            // Convex combinations of O(1) values: the two routes differ only in the order of
            // the roundings (double), or within float's error (beta * 1e-7 relative).
            const double tolerance = single ? 2e-5 : 1e-13;
            CHECK(testing::max_abs_difference(r.summed, r.per_head) < tolerance);
            CHECK(testing::max_abs_difference(r.summed, r.reference) < tolerance);
        }
    }
}

TEST_CASE("the summed route is declined where the heads do not share their values") {
    const std::size_t n = 64, d = 16;
    const state_type x = testing::uniform_start(n, d, 19);
    std::vector<double> out(n * d);
    random_source source(23);
    attention_weights w = shared_value_heads(d, 4, false, scaled_identity(d, 0.25), 29);
    auto summed = [&](const attention_weights& weights, attention_options options) {
        attention_kernel kernel(n, d);
        kernel.compute(x.data(), weights, options, out.data());
        return kernel.summed_values();
    };
    CHECK(summed(w, {4.0}));
    attention_weights other_value = w; // one head's V differs
    other_value.heads[2].V = testing::random_matrix(source, d, 0.3);
    CHECK_FALSE(summed(other_value, {4.0}));
    attention_weights value_noise = w; // the heads' values differ by their noise
    value_noise.heads[1].value_norm.assign(n, 1.1);
    CHECK_FALSE(summed(value_noise, {4.0}));
    attention_weights query_noise = w; // q shaped: Q is not folded into K
    query_noise.heads[0].query_norm.assign(n, 1.1);
    CHECK_FALSE(summed(query_noise, {4.0}));
    attention_options qkv{4.0};
    qkv.qkv_norm = true;
    CHECK_FALSE(summed(w, qkv));
    attention_weights one_head = w;
    one_head.heads.resize(1);
    CHECK_FALSE(summed(one_head, {4.0}));
    // Heads with Q = K take the symmetric paths, whose tiles build each row's denominator
    // with its numerator: one value product per head.
    attention_weights same_keys = w;
    for (attention_head& head : same_keys.heads)
        head.Q = head.K;
    CHECK_FALSE(summed(same_keys, {4.0}));
    // The unnormalised weights (the general path) and n beyond the small-n limit are summed
    // on the general path's blocks.
    CHECK(summed(w, {4.0, false, precision::double_precision, 0, attention_kind::unnormalized}));
    attention_kernel large(200, d);
    const state_type y = testing::uniform_start(200, d, 19);
    std::vector<double> large_out(200 * d), per_head(200 * d);
    large.compute(y.data(), w, {4.0}, large_out.data());
    CHECK(large.summed_values());
    CHECK(large.last_path() == path::general);
    large.sum_shared_values(false);
    large.compute(y.data(), w, {4.0}, per_head.data());
    CHECK(testing::max_abs_difference(large_out, per_head) < 1e-13);
}

TEST_CASE("general path's summed route: unnormalised weights, row ranges bitwise the full call") {
    const std::size_t n = 300, d = 16;
    const state_type x = testing::uniform_start(n, d, 59);
    random_source source(61);
    const attention_weights w =
        shared_value_heads(d, 5, true, testing::random_matrix(source, d, 0.3), 67);
    for (const precision arithmetic : {precision::double_precision, precision::single_precision}) {
        for (const attention_kind kind : {attention_kind::softmax, attention_kind::unnormalized}) {
            CAPTURE(arithmetic == precision::single_precision);
            CAPTURE(kind == attention_kind::unnormalized);
            attention_options options{2.0, false, arithmetic, 0, kind};
            attention_kernel kernel(n, d);
            std::vector<double> full(n * d), part(n * d), per_head(n * d), plain(n * d);
            kernel.compute(x.data(), w, options, full.data());
            REQUIRE(kernel.summed_values());
            for (const auto& [first, count] :
                 {std::pair<std::size_t, std::size_t>{0, 1}, {3, 70}, {150, 21}, {299, 1}}) {
                kernel.compute_rows(x.data(), w, options, first, count, part.data());
                CHECK(std::memcmp(full.data() + first * d, part.data() + first * d,
                                  count * d * sizeof(double)) == 0);
            }
            kernel.sum_shared_values(false);
            kernel.compute(x.data(), w, options, per_head.data());
            CHECK_FALSE(kernel.summed_values());
            reference_attention(x.data(), n, d, w, options, plain.data());
            const double tolerance = arithmetic == precision::single_precision ? 1e-4 : 1e-12;
            CHECK(testing::max_abs_difference(full, per_head) < tolerance);
            CHECK(testing::max_abs_difference(full, plain) < tolerance);
        }
    }
}

TEST_CASE("summed route: row ranges bitwise the full call, the frame's entropy the observables'") {
    const std::size_t n = 64, d = 16;
    const state_type x = testing::uniform_start(n, d, 37);
    for (const bool both_maps : {false, true}) {
        const attention_weights w =
            shared_value_heads(d, 8, both_maps, scaled_identity(d, 0.125), 41);
        for (const precision arithmetic :
             {precision::double_precision, precision::single_precision}) {
            attention_options options{4.0};
            options.arithmetic = arithmetic;
            attention_kernel kernel(n, d);
            std::vector<double> full(n * d), part(n * d);
            kernel.compute(x.data(), w, options, full.data());
            REQUIRE(kernel.summed_values());
            for (const auto& [first, count] :
                 {std::pair<std::size_t, std::size_t>{0, 1}, {3, 5}, {10, 21}, {63, 1}}) {
                kernel.compute_rows(x.data(), w, options, first, count, part.data());
                CHECK(std::memcmp(full.data() + first * d, part.data() + first * d,
                                  count * d * sizeof(double)) == 0);
            }
        }
        // At a frame: the same A, and the observables' own entropy, bitwise.
        attention_kernel kernel(n, d);
        std::vector<double> plain(n * d), observed(n * d);
        kernel.compute(x.data(), w, {4.0}, plain.data());
        kernel.observe_next_call();
        kernel.compute(x.data(), w, {4.0}, observed.data());
        REQUIRE(kernel.summed_values());
        CHECK(std::memcmp(plain.data(), observed.data(), plain.size() * sizeof(double)) == 0);
        REQUIRE(kernel.observed_entropy().has_value());
        attention_observables pass(n, d);
        CHECK(*kernel.observed_entropy() == pass.compute(x.data(), w, {4.0}).attention_entropy);
    }
}

TEST_CASE("general path: the logits depend on Q and K only through Q^T K, bitwise") {
    // With both maps given the general paths fold Q into K (issue 38): the queries are the
    // tokens times Q^T K, the keys the tokens, so (Q, K) and (Q', I) with Q'^T = Q^T K (I
    // given as a matrix, so that Q'^T I is Q^T K bit for bit) give the same bits. Two
    // projections, X Q^T against X K^T, would round differently.
    const std::size_t d = 16;
    random_source source(47);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    const matrix q = testing::random_matrix(source, d, scale);
    const matrix k = testing::random_matrix(source, d, scale);
    const matrix v = testing::random_matrix(source, d, scale);
    attention_weights given;
    given.heads = {{q, k, v}};
    const matrix b = q.transpose() * k; // as detail::small_n_weights::folded forms it
    attention_weights folded;
    folded.heads = {{matrix(b.transpose()), scaled_identity(d, 1.0), v}};
    for (const precision arithmetic : {precision::double_precision, precision::single_precision}) {
        for (const std::size_t n : {64U, 200U}) {
            CAPTURE(n);
            CAPTURE(arithmetic == precision::single_precision);
            const state_type x = testing::uniform_start(n, d, 53);
            const path general =
                arithmetic == precision::single_precision ? path::single_precision : path::general;
            attention_options options{4.0};
            options.arithmetic = arithmetic;
            attention_kernel kernel(n, d);
            kernel.force_path(general);
            std::vector<double> a(n * d), b(n * d), plain(n * d);
            kernel.compute(x.data(), given, options, a.data());
            CHECK(kernel.last_path() == general);
            kernel.compute(x.data(), folded, options, b.data());
            CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
            reference_attention(x.data(), n, d, given, options, plain.data());
            const double tolerance = arithmetic == precision::single_precision ? 2e-5 : 1e-12;
            CHECK(testing::max_abs_difference(a, plain) < tolerance);
        }
    }
}
