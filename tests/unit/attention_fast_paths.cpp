// Every fast path of the attention kernel against the plain definition (reference_attention):
// the vectorised exp, the symmetric path for Q = K (tiles, lanes, its fall-back to the
// general path, the small-d sub-blocks and single tile), and their independence of the
// thread count; and the right-hand side's per-token loop (chunks of tokens) against rates().
// No timing here: speed is measured by bench/ (scripts/benchmark.sh).
#include "test_support.hpp"

// The portable exp (kernel::exp_lanes, which detail::exp_in_place() is built from), compared
// with the build's in every build.
#include "../../src/model/kernel/exp.hpp"

#include "nadyn/model/attention.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/system.hpp"

#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

using namespace nadyn;

namespace {

// The kernel against the reference, and the path it took.
attention_kernel::path check_against_reference(std::size_t n, std::size_t d, std::size_t block,
                                               const attention_weights& weights, double beta,
                                               double tolerance = 1e-12) {
    CAPTURE(n);
    CAPTURE(d);
    CAPTURE(block);
    CAPTURE(beta);
    state_type x = testing::uniform_start(n, d, 17);
    std::vector<double> fast(n * d), plain(n * d);
    attention_kernel kernel(n, d, block);
    kernel.compute(x.data(), weights, {beta, false}, fast.data());
    reference_attention(x.data(), n, d, weights, {beta, false}, plain.data());
    CHECK(testing::max_abs_difference(fast, plain) < tolerance);
    return kernel.last_path();
}

} // namespace

TEST_CASE("vectorised exp: within 1e-15 relative of std::exp on [-708, 709], 0 below") {
    random_source source(8);
    std::vector<double> x;
    for (int i = 0; i < 200000; ++i)
        x.push_back(-708.0 + 1417.0 * source.uniform());
    for (int i = 0; i < 20000; ++i)
        x.push_back(1e-3 * source.normal()); // near 0, where softmax arguments cluster
    for (double special : {0.0, -0.0, -1e-300, 1e-300, -0.5 * std::log(2.0), std::log(2.0), -707.9,
                           708.9, -1.0, 1.0})
        x.push_back(special);
    std::vector<double> y = x;
    detail::exp_in_place(y.data(), y.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double exact = std::exp(x[i]);
        worst = std::max(worst, std::abs(y[i] - exact) / exact);
    }
    CHECK(worst < 1e-15);
    std::vector<double> edge = {0.0, -709.0, -1e4, -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN()};
    detail::exp_in_place(edge.data(), edge.size());
    CHECK(edge[0] == 1.0);
    CHECK(edge[1] == 0.0); // below -708: flushed, so no subnormal reaches the GEMMs
    CHECK(edge[2] == 0.0);
    CHECK(edge[3] == 0.0);
    CHECK(std::isnan(edge[4]));
}

TEST_CASE("symmetric path (Q = K) equals the naive loop across tiles and lanes") {
    const attention_weights identity;
    // One tile, a partial second tile, many tiles (more pairs than lanes), uneven ends.
    CHECK(check_against_reference(5, 4, 0, identity, 1.0) ==
          attention_kernel::path::symmetric_small_d);
    CHECK(check_against_reference(37, 3, 8, identity, 4.0) ==
          attention_kernel::path::symmetric_small_d);
    CHECK(check_against_reference(300, 16, 64, identity, 2.0) ==
          attention_kernel::path::symmetric_small_d);
    CHECK(check_against_reference(129, 7, 0, identity, 4.0) ==
          attention_kernel::path::symmetric_small_d);
    CHECK(check_against_reference(600, 5, 0, identity, 9.0) ==
          attention_kernel::path::symmetric_small_d);
    CHECK(check_against_reference(64, 64, 16, identity, 8.0) == attention_kernel::path::symmetric);

    random_source source(5);
    attention_weights shared; // Q = K given (random), V random
    shared.heads[0].Q = testing::random_matrix(source, 12, 0.3);
    shared.heads[0].K = shared.heads[0].Q;
    shared.heads[0].V = testing::random_matrix(source, 12, 0.3);
    CHECK(check_against_reference(101, 12, 16, shared, 3.0) ==
          attention_kernel::path::symmetric_small_d);
    attention_weights shared_identity_values = shared; // V = I
    shared_identity_values.heads[0].V = matrix();
    CHECK(check_against_reference(70, 12, 32, shared_identity_values, 3.0) ==
          attention_kernel::path::symmetric_small_d);
    // Two heads, the second general (Q != K): the heads' outputs add up.
    attention_weights two = shared;
    two.heads.push_back(
        {testing::random_matrix(source, 12, 0.3), testing::random_matrix(source, 12, 0.3), {}});
    CHECK(check_against_reference(90, 12, 16, two, 3.0) == attention_kernel::path::small_n);
}

TEST_CASE("symmetric path: beta = 0 is the mean, beta = 1e4 the hard maximum") {
    const std::size_t n = 40, d = 16;
    state_type x = testing::uniform_start(n, d, 5);
    std::vector<double> out(n * d);
    attention_kernel kernel(n, d, 16);
    kernel.compute(x.data(), attention_weights{}, {1e4, false}, out.data());
    REQUIRE(kernel.last_path() == attention_kernel::path::symmetric_small_d);
    double worst = 0.0;
    for (std::size_t i = 0; i < n * d; ++i) {
        REQUIRE(std::isfinite(out[i]));
        worst = std::max(worst, std::abs(out[i] - x[i]));
    }
    CHECK(worst < 1e-14);

    kernel.compute(x.data(), attention_weights{}, {0.0, false}, out.data());
    for (std::size_t c = 0; c < d; ++c) {
        double mean = 0.0;
        for (std::size_t k = 0; k < n; ++k)
            mean += x[k * d + c] / static_cast<double>(n);
        for (std::size_t k = 0; k < n; ++k)
            CHECK(std::abs(out[k * d + c] - mean) < 1e-15);
    }
}

TEST_CASE("symmetric path falls back to the general one when the shared shift could underflow") {
    // Q = K = 3 I scales |q_k|^2 to 9 for unit tokens; rows of very different length then
    // spread beta |q_k|^2 / 2 over more than the symmetric path allows.
    const std::size_t n = 50, d = 6;
    state_type x = testing::uniform_start(n, d, 3);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t c = 0; c < d; ++c)
            x[k * d + c] *= 1.0 + static_cast<double>(k % 5) * 0.2;
    attention_weights wide;
    wide.heads[0].Q = 3.0 * matrix::Identity(6, 6);
    wide.heads[0].K = wide.heads[0].Q;
    std::vector<double> fast(n * d), plain(n * d);
    attention_kernel kernel(n, d, 16);
    for (double beta : {2.0, 100.0}) {
        CAPTURE(beta);
        kernel.compute(x.data(), wide, {beta, false}, fast.data());
        reference_attention(x.data(), n, d, wide, {beta, false}, plain.data());
        CHECK(testing::max_abs_difference(fast, plain) < 1e-12);
        CHECK(kernel.last_path() == (beta < 10.0 ? attention_kernel::path::symmetric_small_d
                                                 : attention_kernel::path::small_n));
    }
    // Negative beta and the causal mask take the general path (its register loops at n = 50).
    kernel.compute(x.data(), attention_weights{}, {-1.0, false}, fast.data());
    CHECK(kernel.last_path() == attention_kernel::path::small_n);
    reference_attention(x.data(), n, d, attention_weights{}, {-1.0, false}, plain.data());
    CHECK(testing::max_abs_difference(fast, plain) < 1e-12);
    kernel.compute(x.data(), attention_weights{}, {2.0, true}, fast.data());
    CHECK(kernel.last_path() == attention_kernel::path::small_n);
}

TEST_CASE("both paths give bitwise the same result with one and with two threads") {
    // The thread count is the call's own (attention_options::threads), whatever
    // OMP_NUM_THREADS says, and the process's setting is left as it was.
    const int process_threads = omp_get_max_threads();
    random_source source(9);
    attention_weights general;
    general.heads[0] = {
        testing::random_matrix(source, 9, 0.4), testing::random_matrix(source, 9, 0.4), {}};
    const attention_weights identity;
    for (const attention_weights* weights : {&std::as_const(general), &identity}) {
        const attention_weights& w = *weights;
        const std::size_t n = 517, d = 9;
        state_type x = testing::uniform_start(n, d, 4);
        std::vector<double> one(n * d), two(n * d);
        attention_kernel kernel(n, d, 48); // 11 tiles a side: 66 pairs over the lanes
        kernel.compute(x.data(), w, {3.0, false, precision::double_precision, 1}, one.data());
        kernel.compute(x.data(), w, {3.0, false, precision::double_precision, 2}, two.data());
        CHECK(one == two);
        // Repeated calls reuse the workspaces: the same result again.
        kernel.compute(x.data(), w, {3.0, false, precision::double_precision, 1}, one.data());
        CHECK(one == two);
    }
    CHECK(omp_get_max_threads() == process_threads);
}

TEST_CASE("small d, one tile: every n around the groups of 8 and the single-tile limit") {
    const attention_weights identity;
    // d = 5 and 7 take the runtime-dimension code, the others a compile-time one.
    for (std::size_t d : {1, 2, 3, 4, 5, 7, 8, 16})
        for (std::size_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 47, 63, 64, 65, 70})
            CHECK(check_against_reference(n, d, 0, identity, 4.0) ==
                  attention_kernel::path::symmetric_small_d);
    // Large beta: most of E underflows to 0 (exponents below -708), the diagonal stays 1.
    for (double beta : {60.0, 1e3, 1e4})
        CHECK(check_against_reference(37, 3, 0, identity, beta) ==
              attention_kernel::path::symmetric_small_d);
    random_source source(12);
    attention_weights shared; // Q = K given, V random: the weighted values are not the queries
    shared.heads[0].Q = testing::random_matrix(source, 3, 0.5);
    shared.heads[0].K = shared.heads[0].Q;
    shared.heads[0].V = testing::random_matrix(source, 3, 0.5);
    CHECK(check_against_reference(29, 3, 0, shared, 2.0) ==
          attention_kernel::path::symmetric_small_d);
}

TEST_CASE("small d, many tiles: tiles that are not whole groups of 8, and off-diagonal tiles") {
    const attention_weights identity;
    for (std::size_t block : {1, 3, 5, 8, 12, 20, 33})
        for (std::size_t d : {2, 3, 6})
            CHECK(check_against_reference(71, d, block, identity, 3.0) ==
                  attention_kernel::path::symmetric_small_d);
    CHECK(check_against_reference(200, 3, 0, identity, 5.0) ==
          attention_kernel::path::symmetric_small_d);
}

TEST_CASE("small d: bitwise the same result with one, two and three threads") {
    const attention_weights identity;
    for (std::size_t n : {40, 700}) { // one tile; many tiles, lanes, and a parallel region
        CAPTURE(n);
        const std::size_t d = 3;
        state_type x = testing::uniform_start(n, d, 6);
        std::vector<double> one(n * d), other(n * d);
        attention_kernel kernel(n, d, 64);
        kernel.compute(x.data(), identity, {4.0, false, precision::double_precision, 1},
                       one.data());
        for (int threads : {2, 3}) {
            kernel.compute(x.data(), identity, {4.0, false, precision::double_precision, threads},
                           other.data());
            CHECK(one == other);
        }
    }
}

TEST_CASE("right-hand side in chunks of tokens equals the per-token rates of every scheme") {
    // n = 70 crosses a chunk of 64 tokens; d = 3 and 4 take compile-time dimensions, 5 not.
    for (std::size_t d : {3, 4, 5}) {
        for (const scheme_info& row : scheme_table) {
            CAPTURE(d);
            CAPTURE(row.name);
            const std::size_t n = 70;
            model_parameters model;
            model.n = n;
            model.d = d;
            model.beta = 3.0;
            model.scheme = {row.id, 0.7, 0.2};
            attention_system system(model, attention_weights{});
            state_type x = testing::uniform_start(n, d, 8, 1.5);
            double* r = magnitudes(x, n, d);
            for (std::size_t k = 0; k < n; ++k)
                r[k] += 0.01 * static_cast<double>(k);
            state_type dxdt(x.size());
            system.begin_step(0.1);
            system(x, dxdt, 0.3);
            const std::vector<double>& a = system.attention();
            double worst = 0.0;
            for (std::size_t k = 0; k < n; ++k) {
                double along = 0.0, norm2 = 0.0;
                for (std::size_t c = 0; c < d; ++c) {
                    along += x[k * d + c] * a[k * d + c];
                    norm2 += a[k * d + c] * a[k * d + c];
                }
                const token_rates rate =
                    rates(model.scheme, 0.3, 0.1, r[k], along, std::sqrt(norm2));
                for (std::size_t c = 0; c < d; ++c) {
                    const double expected =
                        (a[k * d + c] - along * x[k * d + c]) * rate.inverse_speed;
                    worst = std::max(worst, std::abs(dxdt[k * d + c] - expected));
                }
                worst = std::max(worst, std::abs(dxdt[n * d + k] - rate.radial_rate));
            }
            CHECK(worst < 1e-15);
        }
    }
}

TEST_CASE("exp of this build and the portable exp agree with std::exp and each other") {
    random_source source(21);
    std::vector<double> x;
    for (int i = 0; i < 200000; ++i)
        x.push_back(-708.0 + 1417.0 * source.uniform());
    for (int i = 0; i < 20000; ++i)
        x.push_back(1e-2 * source.normal());
    // Around the multiples of ln2/16 and ln2/2, where the reductions switch k.
    for (int k = -16350; k <= 16360; k += 7)
        for (double offset : {-1e-12, 0.0, 1e-12})
            x.push_back(k * std::log(2.0) / 32.0 + offset);
    for (double special : {0.0, -0.0, -708.0, -707.99, 709.0, 1e-300, -1e-300})
        x.push_back(special);
    std::vector<double> build = x, portable = x;
    detail::exp_in_place(build.data(), build.size());
    kernel::exp_lanes(portable.data(), portable.size());
    double worst_build = 0.0, worst_portable = 0.0, worst_between = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double exact = std::exp(x[i]);
        worst_build = std::max(worst_build, std::abs(build[i] - exact) / exact);
        worst_portable = std::max(worst_portable, std::abs(portable[i] - exact) / exact);
        worst_between = std::max(worst_between, std::abs(build[i] - portable[i]) / exact);
    }
    CHECK(worst_build < 1e-15);
    CHECK(worst_portable < 1e-15);
    CHECK(worst_between < 1e-15);
    const auto portable_exp = [](double* values, std::size_t count) {
        kernel::exp_lanes(values, count);
    };
    for (void (*exp)(double*, std::size_t) :
         {static_cast<void (*)(double*, std::size_t)>(&detail::exp_in_place),
          static_cast<void (*)(double*, std::size_t)>(portable_exp)}) {
        std::vector<double> edge = {0.0,
                                    -0.0,
                                    -708.5,
                                    -1e4,
                                    -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN(),
                                    -std::numeric_limits<double>::quiet_NaN()};
        exp(edge.data(), edge.size());
        CHECK(edge[0] == 1.0);
        CHECK(edge[1] == 1.0);
        CHECK(edge[2] == 0.0);
        CHECK(edge[3] == 0.0);
        CHECK(edge[4] == 0.0);
        CHECK(std::isnan(edge[5]));
        CHECK(std::isnan(edge[6]));
    }
    // Any count (whole blocks of 32 values, then the rest): every value within 1e-15 of exp,
    // nothing written past the end.
    for (std::size_t count = 0; count <= 70; ++count) {
        CAPTURE(count);
        std::vector<double> part(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(count));
        part.push_back(-5.0); // a guard past the end
        detail::exp_in_place(part.data(), count);
        CHECK(part[count] == -5.0);
        double worst = 0.0;
        for (std::size_t i = 0; i < count; ++i)
            worst = std::max(worst, std::abs(part[i] - std::exp(x[i])) / std::exp(x[i]));
        CHECK(worst < 1e-15);
    }
}

TEST_CASE("small-d sub-blocks exponentiated in registers: single tile and tiles, any beta") {
    const attention_weights identity;
    // Single tiles (n <= 64) and tiles of 8, 24 and 40 tokens with partial groups, d = 1 .. 5;
    // beta up to 1e3, where most of E is flushed to 0.
    for (double beta : {0.0, 0.5, 4.0, 60.0, 1e3})
        for (std::size_t d : {1, 2, 3, 4, 5})
            for (std::size_t n : {1, 2, 9, 17, 31, 32, 33, 64})
                for (std::size_t block : {std::size_t{0}, std::size_t{8}, std::size_t{24}})
                    CHECK(check_against_reference(n, d, block, identity, beta) ==
                          attention_kernel::path::symmetric_small_d);
}
