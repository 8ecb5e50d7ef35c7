// The blocked, parallel attention kernel against the plain O(n^2 d) definition.
#include "test_support.hpp"

#include "nadyn/model/attention.hpp"
#include "nadyn/model/random.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

using namespace nadyn;

namespace {

void check_against_reference(std::size_t n, std::size_t d, std::size_t block,
                             const attention_weights& weights, double beta, bool causal) {
    CAPTURE(n);
    CAPTURE(d);
    CAPTURE(block);
    CAPTURE(causal);
    state_type x = testing::uniform_start(n, d, 11);
    std::vector<double> fast(n * d), plain(n * d);
    attention_kernel kernel(n, d, block);
    kernel.compute(x.data(), weights, {beta, causal}, fast.data());
    reference_attention(x.data(), n, d, weights, {beta, causal}, plain.data());
    // Entries are convex combinations of O(1) values: 1e-12 absolute is ~1e4 ulps, room
    // for the different summation order of the GEMMs.
    CHECK(testing::max_abs_difference(fast, plain) < 1e-12);
}

} // namespace

TEST_CASE("blocked kernel equals the naive loop: identity weights, across block boundaries") {
    const attention_weights identity;
    for (bool causal : {false, true}) {
        check_against_reference(37, 3, 8, identity, 4.0, causal);    // 37 = 4 * 8 + 5
        check_against_reference(300, 16, 64, identity, 2.0, causal); // 300 = 4 * 64 + 44
        check_against_reference(5, 4, 0, identity, 1.0, causal);     // one partial block
    }
}

TEST_CASE("blocked kernel equals the naive loop: random Q, K, V and several heads") {
    random_source source(3);
    attention_weights one;
    one.heads[0] = {testing::random_matrix(source, 12, 0.3),
                    testing::random_matrix(source, 12, 0.3),
                    testing::random_matrix(source, 12, 0.3)};
    attention_weights partial; // only K given: Q and V stay the identity
    partial.heads[0].K = testing::random_matrix(source, 12, 0.3);
    attention_weights two = one;
    two.heads.push_back(
        {testing::random_matrix(source, 12, 0.3), {}, testing::random_matrix(source, 12, 0.3)});
    for (bool causal : {false, true}) {
        check_against_reference(101, 12, 16, one, 3.0, causal);
        check_against_reference(101, 12, 16, partial, 3.0, causal);
        check_against_reference(70, 12, 32, two, 3.0, causal);
    }
}

TEST_CASE("softmax stays finite at beta = 1e4 and tends to the hard maximum") {
    const std::size_t n = 40, d = 16;
    state_type x = testing::uniform_start(n, d, 5);
    std::vector<double> out(n * d);
    attention_kernel kernel(n, d, 16);
    kernel.compute(x.data(), attention_weights{}, {1e4, false}, out.data());
    // With Q = K = I the largest logit of token k is its own (cos = 1); uniform directions
    // in d = 16 keep every other cosine below 1 - 1e-2, so the other weights are below
    // e^{-100}: A_k = theta_k to round-off.
    double worst = 0.0;
    for (std::size_t i = 0; i < n * d; ++i) {
        REQUIRE(std::isfinite(out[i]));
        worst = std::max(worst, std::abs(out[i] - x[i]));
    }
    CHECK(worst < 1e-14);
}

TEST_CASE("causal mask: the first token attends only to itself") {
    const std::size_t n = 9, d = 3;
    state_type x = testing::uniform_start(n, d, 2);
    std::vector<double> out(n * d);
    attention_kernel kernel(n, d, 4);
    kernel.compute(x.data(), attention_weights{}, {2.0, true}, out.data());
    for (std::size_t c = 0; c < d; ++c)
        CHECK(out[c] == doctest::Approx(x[c]).epsilon(1e-15));
}

TEST_CASE("a copied, copy-assigned or moved kernel gives bitwise the original's A") {
    // The workspaces sit behind a pointer: a copy gets its own, a moved-from kernel new ones.
    const std::size_t n = 300, d = 32; // the symmetric tiles, several lanes
    state_type x = testing::uniform_start(n, d, 5);
    const attention_weights identity;
    const attention_options options{2.0};
    std::vector<double> original(n * d), copied(n * d), assigned(n * d), moved(n * d),
        reused(n * d);
    attention_kernel kernel(n, d);
    kernel.compute(x.data(), identity, options, original.data());
    attention_kernel copy(kernel);
    copy.compute(x.data(), identity, options, copied.data());
    attention_kernel other(n, d);
    other = kernel;
    other.compute(x.data(), identity, options, assigned.data());
    attention_kernel target(std::move(kernel));
    target.compute(x.data(), identity, options, moved.data());
    kernel = attention_kernel(n, d); // a moved-from kernel is assigned a new one and reused
    kernel.compute(x.data(), identity, options, reused.data());
    CHECK(copy.last_path() == attention_kernel::path::symmetric);
    CHECK(copied == original);
    CHECK(assigned == original);
    CHECK(moved == original);
    CHECK(reused == original);
}
