// Every concrete path of the attention kernel (attention_kernel::path), forced with
// attention_kernel::force_path(), against the plain definition (reference_attention) across
// shapes each path supports: n on and off the blocks, tiles and groups, d with and without
// its own compiled loops, one and four heads, the causal mask, unnormalised weights and
// QKV-Norm where the path takes them. Each forced call is checked to have run the forced
// path (last_path()), so no comparison silently tests another. Also the choice itself
// (which path each shape takes when nothing is forced) and the refusals of a forced path
// that cannot take a head.
#include "test_support.hpp"

#include "nadyn/model/attention.hpp"
#include "nadyn/model/random.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace nadyn;
using path = attention_kernel::path;

namespace {

constexpr path all_paths[] = {path::general,
                              path::small_n,
                              path::symmetric,
                              path::symmetric_small_d,
                              path::single_precision,
                              path::single_precision_small_n,
                              path::single_precision_symmetric,
                              path::single_precision_symmetric_small_d};

bool in_float(path p) {
    return p == path::single_precision || p == path::single_precision_small_n ||
           p == path::single_precision_symmetric || p == path::single_precision_symmetric_small_d;
}

bool symmetric(path p) {
    return p == path::symmetric || p == path::symmetric_small_d ||
           p == path::single_precision_symmetric || p == path::single_precision_symmetric_small_d;
}

// `heads` heads of Gaussian maps (Kaiming scale, |M theta| ~ 1); with shared_qk each head's
// K is its Q (the symmetric paths' heads), else every map its own.
attention_weights gaussian_heads(std::size_t d, std::size_t heads, bool shared_qk,
                                 std::uint64_t seed) {
    random_source source(seed);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    attention_weights w;
    w.heads.clear();
    for (std::size_t h = 0; h < heads; ++h) {
        attention_head head;
        head.Q = testing::random_matrix(source, d, scale);
        head.K = shared_qk ? head.Q : testing::random_matrix(source, d, scale);
        head.V = testing::random_matrix(source, d, scale);
        w.heads.push_back(head);
    }
    return w;
}

struct shape {
    std::size_t n, d, block; // block 0: the kernel's own
};

// The kernel forced onto p against reference_attention (in double), relative to max |A|:
// round-off of the double paths is far below 1e-12; the float paths are held to a budget of
// float round-off (attention_float.cpp derives it) and must differ from double at all, which
// shows they computed in float.
void check_forced(path p, const shape& s, const attention_weights& w, attention_options options) {
    CAPTURE(to_string(p));
    CAPTURE(s.n);
    CAPTURE(s.d);
    CAPTURE(s.block);
    CAPTURE(w.heads.size());
    CAPTURE(options.beta);
    CAPTURE(options.causal);
    CAPTURE(to_string(options.kind));
    CAPTURE(options.qkv_norm);
    options.arithmetic = in_float(p) ? precision::single_precision : precision::double_precision;
    const state_type x = testing::uniform_start(s.n, s.d, 13 + s.n);
    std::vector<double> fast(s.n * s.d), plain(s.n * s.d);
    attention_kernel kernel(s.n, s.d, s.block);
    kernel.force_path(p);
    REQUIRE(kernel.forced_path() == p);
    kernel.compute(x.data(), w, options, fast.data());
    REQUIRE(kernel.last_path() == p);
    attention_options exact = options;
    exact.arithmetic = precision::double_precision;
    reference_attention(x.data(), s.n, s.d, w, exact, plain.data());
    double scale = 0.0;
    for (const double v : plain)
        scale = std::max(scale, std::abs(v));
    REQUIRE(scale > 0.0);
    const double error = testing::max_abs_difference(fast, plain) / scale;
    if (in_float(p)) {
        const double budget = (options.beta * 4.0 * (static_cast<double>(s.d) + 4.0) + 16.0) *
                              static_cast<double>(w.heads.size()) * 0x1p-24;
        CHECK(error < budget);
        CHECK(error > 1e-10);
    } else {
        CHECK(error < 1e-12);
    }
}

// The shapes of a path: the general ones everywhere, the small-n loops up to their limit
// (n <= 128, d <= 64), the register tiles up to d = 16; n across blocks and tiles (block 8,
// 32 and the default), d with its own loops (2, 3, 8, 16, 64) and without (5, 12, 24).
std::vector<shape> shapes_of(path p) {
    switch (p) {
    case path::small_n:
        return {{1, 3, 0}, {7, 2, 0}, {37, 5, 0}, {64, 16, 0}, {100, 8, 0}, {128, 64, 0}};
    case path::single_precision_small_n: // also its compiled rows (16, 32, 64) off four rows
        return {{1, 3, 0},   {7, 2, 0},   {37, 5, 0},  {64, 16, 0},
                {33, 16, 0}, {66, 32, 0}, {100, 8, 0}, {128, 64, 0}};
    case path::symmetric_small_d:
    case path::single_precision_symmetric_small_d:
        return {{1, 3, 0}, {37, 3, 8}, {64, 2, 0}, {65, 5, 0}, {211, 16, 32}, {300, 8, 0}};
    case path::general:
    case path::symmetric:
    case path::single_precision:
    case path::single_precision_symmetric:
        return {{1, 3, 0}, {37, 3, 8}, {64, 16, 0}, {130, 12, 32}, {211, 24, 0}, {150, 64, 64}};
    }
    return {};
}

} // namespace

TEST_CASE("every path, forced, equals the naive loop across shapes, heads and options") {
    for (const path p : all_paths) {
        for (const shape& s : shapes_of(p)) {
            for (const std::size_t heads : {std::size_t{1}, std::size_t{4}}) {
                const attention_weights w = gaussian_heads(s.d, heads, symmetric(p), 3 + s.n);
                attention_options options;
                options.beta = 3.0;
                check_forced(p, s, w, options);
                if (symmetric(p)) {
                    // The identity head (Q = K = V = I), and beta = 0 (the mean).
                    check_forced(p, s, attention_weights{}, options);
                    options.beta = 0.0;
                    check_forced(p, s, w, options);
                    options.beta = 3.0;
                } else {
                    options.causal = true;
                    check_forced(p, s, w, options);
                    options.causal = false;
                    options.qkv_norm = true;
                    check_forced(p, s, w, options);
                    options.qkv_norm = false;
                }
                // The small-n loops take the softmax only.
                if (p != path::small_n && p != path::single_precision_small_n) {
                    options.kind = attention_kind::unnormalized;
                    check_forced(p, s, w, options);
                }
            }
        }
    }
}

TEST_CASE("a forced path that cannot take a head is refused, not replaced") {
    const std::size_t n = 40, d = 24;
    const state_type x = testing::uniform_start(n, d, 5);
    std::vector<double> out(n * d);
    const attention_weights distinct = gaussian_heads(d, 2, false, 7);
    const attention_weights shared = gaussian_heads(d, 2, true, 7);
    attention_options in_double;
    attention_options in_single;
    in_single.arithmetic = precision::single_precision;
    attention_options unnormalized;
    unnormalized.kind = attention_kind::unnormalized;
    auto refused = [&](path p, std::size_t rows, std::size_t dimension, const attention_weights& w,
                       const attention_options& options) {
        CAPTURE(to_string(p));
        attention_kernel kernel(rows, dimension);
        kernel.force_path(p);
        const state_type y = testing::uniform_start(rows, dimension, 5);
        std::vector<double> result(rows * dimension);
        CHECK_THROWS_AS(kernel.compute(y.data(), w, options, result.data()), std::invalid_argument);
    };
    // The arithmetic: a double path under --precision float and the other way round.
    for (const path p : all_paths)
        refused(p, n, d, shared, in_float(p) ? in_double : in_single);
    // The symmetric paths need Q = K, no causal mask, beta >= 0; the register tiles d <= 16.
    for (const path p : {path::symmetric, path::single_precision_symmetric}) {
        const attention_options& base = in_float(p) ? in_single : in_double;
        refused(p, n, d, distinct, base);
        attention_options masked = base;
        masked.causal = true;
        refused(p, n, d, shared, masked);
        attention_options below = base;
        below.beta = -1.0;
        refused(p, n, d, shared, below);
    }
    refused(path::symmetric_small_d, n, d, shared, in_double);
    refused(path::single_precision_symmetric_small_d, n, d, shared, in_single);
    // The small-n loops: n <= 128, d <= 64, softmax.
    refused(path::small_n, 129, 8, gaussian_heads(8, 1, false, 3), in_double);
    refused(path::small_n, 20, 65, gaussian_heads(65, 1, false, 3), in_double);
    refused(path::small_n, n, d, distinct, unnormalized);
    refused(path::single_precision_small_n, 129, 8, gaussian_heads(8, 1, false, 3), in_single);
    refused(path::single_precision_small_n, 20, 65, gaussian_heads(65, 1, false, 3), in_single);
    attention_options unnormalized_single = unnormalized;
    unnormalized_single.arithmetic = precision::single_precision;
    refused(path::single_precision_small_n, n, d, distinct, unnormalized_single);
    // Back to the choice: nothing forced.
    attention_kernel kernel(n, d);
    kernel.force_path(path::general);
    kernel.force_path(std::nullopt);
    CHECK_FALSE(kernel.forced_path().has_value());
    kernel.compute(x.data(), distinct, in_double, out.data());
    CHECK(kernel.last_path() == path::small_n);
}

TEST_CASE("the chosen path of each shape, and the symmetric paths' run-time decline") {
    struct expectation {
        std::size_t n, d;
        bool shared_qk, causal, single, unnormalized;
        path expected;
    };
    const expectation cases[] = {
        {64, 3, true, false, false, false, path::symmetric_small_d},
        {300, 16, true, false, false, false, path::symmetric_small_d},
        {300, 17, true, false, false, false, path::symmetric},
        {64, 64, true, false, false, false, path::symmetric},
        {64, 3, true, true, false, false, path::small_n}, // the mask: not symmetric
        {64, 16, false, false, false, false, path::small_n},
        {128, 64, false, false, false, false, path::small_n},
        {129, 16, false, false, false, false, path::general},
        {64, 65, false, false, false, false, path::general},
        {64, 16, false, false, false, true, path::general}, // unnormalised: the blocks
        {300, 8, true, false, true, false, path::single_precision_symmetric_small_d},
        {300, 24, true, false, true, false, path::single_precision_symmetric},
        {64, 16, false, false, true, false, path::single_precision_small_n},
        {128, 64, false, false, true, false, path::single_precision_small_n},
        {64, 3, true, true, true, false, path::single_precision_small_n}, // the mask
        {129, 16, false, false, true, false, path::single_precision},
        {64, 65, false, false, true, false, path::single_precision},
        {64, 16, false, false, true, true, path::single_precision}, // unnormalised
        {300, 24, true, true, true, false, path::single_precision},
    };
    for (const expectation& c : cases) {
        CAPTURE(c.n);
        CAPTURE(c.d);
        CAPTURE(c.shared_qk);
        CAPTURE(c.causal);
        CAPTURE(c.single);
        CAPTURE(c.unnormalized);
        const state_type x = testing::uniform_start(c.n, c.d, 3);
        std::vector<double> out(c.n * c.d);
        attention_options options;
        options.causal = c.causal;
        if (c.single) options.arithmetic = precision::single_precision;
        if (c.unnormalized) {
            options.kind = attention_kind::unnormalized;
            options.beta = 0.5;
        }
        attention_kernel kernel(c.n, c.d);
        kernel.compute(x.data(), gaussian_heads(c.d, 1, c.shared_qk, 9), options, out.data());
        CHECK(to_string(kernel.last_path()) == to_string(c.expected));
    }
    // Q = K = 3 I on tokens of different lengths spreads beta |q_k|^2 / 2 beyond the shared
    // shift: the symmetric path declines the head, which takes the path it would take with
    // distinct queries and keys, forced or not; last_path() says which.
    const std::size_t n = 50, d = 6;
    state_type x = testing::uniform_start(n, d, 3);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            x[k * d + c] *= 1.0 + static_cast<double>(k % 5) * 0.2;
    attention_weights wide;
    wide.heads[0].Q = 3.0 * matrix::Identity(6, 6);
    wide.heads[0].K = wide.heads[0].Q;
    std::vector<double> fast(n * d), plain(n * d);
    for (const path forced : {path::symmetric, path::symmetric_small_d}) {
        attention_kernel kernel(n, d);
        kernel.force_path(forced);
        kernel.compute(x.data(), wide, {100.0, false}, fast.data());
        CHECK(kernel.last_path() == path::small_n);
        reference_attention(x.data(), n, d, wide, {100.0, false}, plain.data());
        CHECK(testing::max_abs_difference(fast, plain) < 1e-12);
    }
    for (const path forced :
         {path::single_precision_symmetric, path::single_precision_symmetric_small_d}) {
        attention_kernel kernel(n, d);
        kernel.force_path(forced);
        kernel.compute(x.data(), wide, {100.0, false, precision::single_precision}, fast.data());
        CHECK(kernel.last_path() == path::single_precision_small_n);
    }
}

TEST_CASE("path names") {
    for (const path p : all_paths)
        CHECK_FALSE(std::string(to_string(p)).empty());
    CHECK(to_string(path::symmetric_small_d) == "symmetric_small_d");
    CHECK(to_string(path::single_precision) == "single_precision");
    CHECK(to_string(path::single_precision_small_n) == "single_precision_small_n");
}
