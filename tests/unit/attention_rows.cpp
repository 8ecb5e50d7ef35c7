// compute_rows(): rows of A computed alone are bitwise the rows of the full compute(), on
// every path (general, symmetric with GEMM tiles, symmetric small d with sub-blocks, the
// single tile, float, causal, unnormalised, several heads) and for ranges that cut tiles and
// blocks anywhere. This is what lets a run share its tokens among MPI ranks and still write
// the trajectory of one process.
#include "test_support.hpp"

#include "../../src/model/kernel/call.hpp" // detail::worth_parallel
#include "nadyn/model/attention.hpp"
#include "nadyn/model/weights.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

using namespace nadyn;

namespace {

// Splits n rows into `parts` ranges at uneven places (not multiples of any block or tile),
// computes each range with its own call on a fresh kernel, and compares the rows bit for bit
// with one compute() of all rows.
void check_rows(std::size_t n, std::size_t d, std::size_t block, const attention_weights& w,
                const attention_options& options, attention_kernel::path expected) {
    CAPTURE(n);
    CAPTURE(d);
    CAPTURE(block);
    state_type x = testing::uniform_start(n, d, 23);
    std::vector<double> full(n * d);
    attention_kernel whole(n, d, block);
    whole.compute(x.data(), w, options, full.data());
    CHECK(whole.last_path() == expected);
    for (std::size_t parts : {1U, 2U, 3U, 5U}) {
        CAPTURE(parts);
        std::size_t first = 0;
        for (std::size_t p = 0; p < parts; ++p) {
            // Uneven cuts: the first part is the shortest.
            const std::size_t end = p + 1 == parts ? n : n * (2 * p + 1) / (2 * parts) + 1;
            const std::size_t count = end > first ? end - first : 0;
            attention_kernel kernel(n, d, block);
            std::vector<double> rows(n * d, -1.0);
            kernel.compute_rows(x.data(), w, options, first, count, rows.data());
            CHECK(std::memcmp(rows.data() + first * d, full.data() + first * d,
                              count * d * sizeof(double)) == 0);
            first += count;
        }
        CHECK(first == n);
    }
}

} // namespace

TEST_CASE("compute_rows: each path's rows bitwise those of compute()") {
    const attention_weights identity;
    weights_spec gaussian;
    gaussian.family = weights_family::gaussian;
    const attention_weights general = make_weights(gaussian, 12, 5);
    weights_spec two_heads = gaussian;
    two_heads.heads = 2;
    const attention_weights heads = make_weights(two_heads, 12, 5);
    const attention_options plain{4.0, false};

    SUBCASE("general path, blocks of 16") {
        check_rows(150, 12, 16, general, plain, attention_kernel::path::general);
    }
    SUBCASE("general path, causal") {
        check_rows(150, 12, 16, general, {4.0, true}, attention_kernel::path::general);
    }
    SUBCASE("general path for a few tokens: the small-n loops, one and two heads, causal") {
        check_rows(100, 12, 0, general, plain, attention_kernel::path::small_n);
        check_rows(101, 12, 0, heads, plain, attention_kernel::path::small_n);
        check_rows(64, 12, 0, general, {4.0, true}, attention_kernel::path::small_n);
    }
    SUBCASE("general path, unnormalised, two heads") {
        attention_options o = plain;
        o.kind = attention_kind::unnormalized;
        check_rows(150, 12, 16, heads, o, attention_kernel::path::general);
    }
    SUBCASE("symmetric path, GEMM tiles of 32") {
        check_rows(200, 24, 32, identity, plain, attention_kernel::path::symmetric);
    }
    SUBCASE("symmetric path, unnormalised") {
        attention_options o = plain;
        o.kind = attention_kind::unnormalized;
        check_rows(200, 24, 32, identity, o, attention_kernel::path::symmetric);
    }
    SUBCASE("symmetric path, small d, tiles of 24, default tiles") {
        const auto path = attention_kernel::path::symmetric_small_d;
        check_rows(211, 3, 24, identity, plain, path);
        check_rows(700, 3, 0, identity, plain, path);
        check_rows(300, 8, 40, identity, plain, path);
    }
    SUBCASE("symmetric path, one tile") {
        check_rows(40, 3, 0, identity, plain, attention_kernel::path::symmetric_small_d);
    }
    SUBCASE("single precision") {
        attention_options o = plain;
        o.arithmetic = precision::single_precision;
        check_rows(150, 12, 16, general, o, attention_kernel::path::single_precision);
    }
    SUBCASE("single precision, symmetric (float tiles, small d and GEMM)") {
        attention_options o = plain;
        o.arithmetic = precision::single_precision;
        const auto path = attention_kernel::path::single_precision_symmetric_small_d;
        const auto gemm = attention_kernel::path::single_precision_symmetric;
        check_rows(211, 3, 24, identity, o, path);
        check_rows(700, 3, 0, identity, o, path);
        check_rows(300, 8, 40, identity, o, path);
        check_rows(40, 3, 0, identity, o, path);
        check_rows(200, 24, 32, identity, o, gemm); // GEMM tiles in float
        o.kind = attention_kind::unnormalized;
        check_rows(300, 5, 0, identity, o, path);
        check_rows(200, 24, 32, identity, o, gemm);
    }
    SUBCASE("threads do not matter") {
        // n^2 (d + 16) > 4e6: the tiles really go to two threads (below it, one thread).
        REQUIRE(detail::worth_parallel(400, 16));
        attention_options o = plain;
        o.threads = 2;
        check_rows(400, 16, 32, identity, o, attention_kernel::path::symmetric_small_d);
    }
}

TEST_CASE("compute_rows: a range beyond n is refused") {
    attention_kernel kernel(10, 3);
    std::vector<double> x(30, 0.5), out(30);
    CHECK_THROWS(kernel.compute_rows(x.data(), {}, {1.0, false}, 8, 3, out.data()));
    CHECK_NOTHROW(kernel.compute_rows(x.data(), {}, {1.0, false}, 10, 0, out.data()));
}
