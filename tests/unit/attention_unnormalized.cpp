// Unnormalised attention (docs/model.md §8), A_k = (1/n) sum_j exp(beta <Q theta_k, K theta_j>)
// V theta_j, in every path of the kernel (general, symmetric with GEMM tiles, symmetric for
// small d, single precision) against the plain loop; heads that take different paths in one
// call; independence of the thread count; and an overflow that comes out as Inf or NaN (which
// the right-hand side turns into a numerical fault), never as a wrapped finite number.
#include "test_support.hpp"

#include "../../src/model/kernel/call.hpp" // detail::worth_parallel
#include "nadyn/model/attention.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/system.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace nadyn;

namespace {

double largest_magnitude(const std::vector<double>& a) {
    double largest = 0.0;
    for (double v : a)
        largest = std::max(largest, std::abs(v));
    return largest;
}

struct comparison {
    double relative_difference;  // max |fast - plain| / max |plain|
    attention_kernel::path path; // of the last head
};

// The kernel against reference_attention on a uniform start; unnormalised outputs are not
// bounded by 1, so the difference is relative to the largest component.
comparison against_reference(std::size_t n, std::size_t d, std::size_t block,
                             const attention_weights& weights, attention_options options,
                             int threads = 0) {
    state_type x = testing::uniform_start(n, d, 29);
    std::vector<double> fast(n * d), plain(n * d);
    attention_kernel kernel(n, d, block);
    options.threads = threads;
    kernel.compute(x.data(), weights, options, fast.data());
    reference_attention(x.data(), n, d, weights, options, plain.data());
    return {testing::max_abs_difference(fast, plain) / largest_magnitude(plain),
            kernel.last_path()};
}

attention_weights random_heads(std::size_t d, std::size_t heads, bool shared_qk,
                               std::uint64_t seed) {
    random_source source(seed);
    attention_weights w;
    w.heads.clear(); // not the default identity head
    for (std::size_t h = 0; h < heads; ++h) {
        attention_head head;
        head.Q = testing::random_matrix(source, d, 1.0 / std::sqrt(static_cast<double>(d)));
        head.K = shared_qk
                     ? head.Q
                     : testing::random_matrix(source, d, 1.0 / std::sqrt(static_cast<double>(d)));
        head.V = testing::random_matrix(source, d, 1.0 / std::sqrt(static_cast<double>(d)));
        w.heads.push_back(head);
    }
    return w;
}

const attention_options unnormalized{3.0, false, precision::double_precision, 0,
                                     attention_kind::unnormalized};

} // namespace

TEST_CASE("attention kinds parse and print; an unknown one is refused naming the choices") {
    CHECK(parse_attention_kind("softmax") == attention_kind::softmax);
    CHECK(parse_attention_kind("unnormalized") == attention_kind::unnormalized);
    CHECK(to_string(attention_kind::unnormalized) == "unnormalized");
    CHECK_THROWS_WITH_AS(parse_attention_kind("unnormalised"),
                         "unknown attention 'unnormalised'; valid choices: softmax, unnormalized",
                         input_error);
}

TEST_CASE("reference: unnormalised weights are exp(beta <q, k>) / n, written out for n = 2") {
    // theta_0 = e_0, theta_1 = e_1 in d = 2, identity weights: A_0 = (e^beta e_0 + e_1) / 2.
    const std::vector<double> theta = {1.0, 0.0, 0.0, 1.0};
    std::vector<double> out(4);
    attention_weights identity;
    identity.heads.resize(1);
    reference_attention(theta.data(), 2, 2, identity,
                        {1.5, false, precision::double_precision, 0, attention_kind::unnormalized},
                        out.data());
    CHECK(out[0] == doctest::Approx(std::exp(1.5) / 2.0).epsilon(1e-15));
    CHECK(out[1] == doctest::Approx(0.5).epsilon(1e-15));
    // Causal: token 0 sees itself only, still divided by n.
    reference_attention(theta.data(), 2, 2, identity,
                        {1.5, true, precision::double_precision, 0, attention_kind::unnormalized},
                        out.data());
    CHECK(out[0] == doctest::Approx(std::exp(1.5) / 2.0).epsilon(1e-15));
    CHECK(out[1] == 0.0);
}

TEST_CASE("general path, unnormalised: equals the naive loop to 1e-12 (heads, causal, blocks)") {
    for (const std::size_t heads : {1, 3}) {
        for (const bool causal : {false, true}) {
            // n = 53, 200: not multiples of the blocks 16, 64 (or of the default block).
            for (const auto& [n, d, block] :
                 {std::tuple<std::size_t, std::size_t, std::size_t>{53, 5, 16},
                  {200, 24, 64},
                  {37, 3, 0}}) {
                CAPTURE(heads);
                CAPTURE(causal);
                CAPTURE(n);
                attention_options options = unnormalized;
                options.causal = causal;
                const comparison c =
                    against_reference(n, d, block, random_heads(d, heads, false, 5 + n), options);
                CHECK(c.relative_difference < 1e-12);
                CHECK(c.path == attention_kernel::path::general);
            }
        }
    }
}

TEST_CASE("symmetric paths, unnormalised: equal the naive loop to 1e-12 (tiles, small d)") {
    attention_weights identity;
    identity.heads.resize(1);
    // GEMM tiles (d > 16, tiles of 64 and the default), small-d sub-blocks (d = 2, 3, 8 and a
    // d without its own instantiation), the single small tile (n <= 64).
    for (const auto& [n, d, block] :
         {std::tuple<std::size_t, std::size_t, std::size_t>{300, 20, 64},
          {129, 17, 0},
          {301, 3, 64},
          {97, 2, 0},
          {150, 8, 32},
          {77, 11, 0},
          {40, 3, 0},
          {13, 5, 0}}) {
        CAPTURE(n);
        CAPTURE(d);
        for (const double beta : {0.0, 3.0, 40.0}) {
            CAPTURE(beta);
            attention_options options = unnormalized;
            options.beta = beta;
            const comparison c = against_reference(n, d, block, identity, options);
            CHECK(c.relative_difference < 1e-12);
            const attention_kernel::path expected = d <= 16
                                                        ? attention_kernel::path::symmetric_small_d
                                                        : attention_kernel::path::symmetric;
            CHECK(c.path == expected);
            const comparison shared =
                against_reference(n, d, block, random_heads(d, 2, true, 3 + n), options);
            CHECK(shared.relative_difference < 1e-12);
            CHECK(shared.path == expected);
        }
    }
}

TEST_CASE("float path, unnormalised: within 1e-5 relative of the naive loop in double") {
    for (const bool causal : {false, true}) {
        for (const bool shared : {false, true}) {
            CAPTURE(causal);
            CAPTURE(shared);
            attention_options options = unnormalized;
            options.causal = causal;
            options.arithmetic = precision::single_precision;
            const comparison c =
                against_reference(150, 12, 32, random_heads(12, 2, shared, 11), options);
            // beta <q, k> is a few units here: float's 6e-8 times a few, summed over 150 keys.
            CHECK(c.relative_difference < 1e-5);
            // Q = K without the mask: the symmetric path's float tiles (d = 12 <= 16).
            CHECK(c.path == (shared && !causal
                                 ? attention_kernel::path::single_precision_symmetric_small_d
                                 : attention_kernel::path::single_precision));
        }
    }
}

TEST_CASE("heads with and without Q = K in one call: each head its own path, equal to the loop") {
    // Head 0 shares Q = K (the symmetric path), head 1 does not (the general path), head 2 is
    // the identity (symmetric again): the sum equals the naive per-head loop, for softmax and
    // unnormalised weights, small d and GEMM tiles, and 1, 2, 3 threads give the same bits.
    for (const std::size_t d : {std::size_t{3}, std::size_t{24}}) {
        // n^2 (d + 16) > 4e6, so that the threads compared below really share the work.
        const std::size_t n = d <= 16 ? 480 : 400;
        REQUIRE(detail::worth_parallel(n, d));
        attention_weights mixed = random_heads(d, 1, true, 41);
        const attention_weights other = random_heads(d, 1, false, 43);
        mixed.heads.push_back(other.heads[0]);
        mixed.heads.emplace_back();
        for (const attention_kind kind : {attention_kind::softmax, attention_kind::unnormalized}) {
            CAPTURE(d);
            CAPTURE(to_string(kind));
            attention_options options{2.0, false, precision::double_precision, 0, kind};
            const comparison c = against_reference(n, d, 32, mixed, options);
            CHECK(c.relative_difference < 1e-12);
            // Which path each head took: the last head alone, then the mixed head order.
            const attention_kernel::path symmetric = d <= 16
                                                         ? attention_kernel::path::symmetric_small_d
                                                         : attention_kernel::path::symmetric;
            CHECK(c.path == symmetric);
            attention_weights general_last = mixed;
            std::swap(general_last.heads[1], general_last.heads[2]);
            CHECK(against_reference(n, d, 32, general_last, options).path ==
                  attention_kernel::path::general);
            attention_weights symmetric_alone;
            symmetric_alone.heads = {mixed.heads[0]};
            CHECK(against_reference(n, d, 32, symmetric_alone, options).path == symmetric);

            state_type x = testing::uniform_start(n, d, 7);
            std::vector<std::vector<double>> results;
            for (const int threads : {1, 2, 3}) {
                std::vector<double> out(n * d);
                attention_kernel kernel(n, d, 32);
                options.threads = threads;
                kernel.compute(x.data(), mixed, options, out.data());
                results.push_back(out);
            }
            CHECK(results[0] == results[1]);
            CHECK(results[0] == results[2]);
        }
    }
}

TEST_CASE("an overflowing exponential is Inf or NaN in A, in every path, never a finite value") {
    // Unit directions and identity weights: the logit of a token with itself is beta, and
    // exp(1000) / n overflows double; float overflows already at beta = 200.
    attention_weights identity;
    identity.heads.resize(1);
    auto all_finite = [](const std::vector<double>& a) {
        return std::all_of(a.begin(), a.end(), [](double v) { return std::isfinite(v); });
    };
    for (const auto& [n, d] : {std::pair<std::size_t, std::size_t>{50, 3}, {100, 20}, {20, 8}}) {
        state_type x = testing::uniform_start(n, d, 3);
        for (const bool causal : {false, true}) {
            for (const precision arithmetic :
                 {precision::double_precision, precision::single_precision}) {
                CAPTURE(n);
                CAPTURE(causal);
                const double beta = arithmetic == precision::double_precision ? 1000.0 : 200.0;
                std::vector<double> out(n * d);
                attention_kernel kernel(n, d);
                kernel.compute(x.data(), identity,
                               {beta, causal, arithmetic, 0, attention_kind::unnormalized},
                               out.data());
                CHECK(!all_finite(out));
            }
        }
        // Just below the double range the same configuration is finite.
        std::vector<double> out(n * d);
        attention_kernel kernel(n, d);
        kernel.compute(x.data(), identity,
                       {700.0, false, precision::double_precision, 0, attention_kind::unnormalized},
                       out.data());
        CHECK(all_finite(out));
    }
}

TEST_CASE("the right-hand side turns an overflow into a numerical fault naming time and token") {
    const std::size_t n = 12, d = 4;
    attention_system system({n,
                             d,
                             1000.0,
                             false,
                             {scheme::post_ln, 1.0, 1.0},
                             precision::double_precision,
                             0,
                             attention_kind::unnormalized},
                            attention_weights{});
    state_type x = testing::uniform_start(n, d, 5), dxdt(x.size());
    CHECK_THROWS_WITH_AS(system(x, dxdt, 0.25),
                         doctest::Contains("the unnormalized attention overflowed at t = 0.25 in "
                                           "token 0"),
                         numerical_fault);
    // The softmax at the same beta is finite (max subtraction).
    attention_system softmax({n, d, 1000.0, false, {scheme::post_ln, 1.0, 1.0}},
                             attention_weights{});
    CHECK_NOTHROW(softmax(x, dxdt, 0.25));
}
