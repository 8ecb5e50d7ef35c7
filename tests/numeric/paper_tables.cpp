// The fits and the random-weights table as nadyn computes them (results/): the numbers where
// theory gives a number. (The terminal table is the study studies/terminal/, tested in
// tests/python/test_study.py.)
#include "nadyn/paper_tables.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace nadyn;

TEST_CASE("fits recover the parameters of exact laws") {
    std::vector<double> t, exp_v, poly_v, stretched_v;
    for (int i = 1; i <= 200; ++i) {
        const double x = 0.5 * i;
        t.push_back(x);
        exp_v.push_back(3.0 * std::exp(-2.0 * x));
        poly_v.push_back(7.0 / std::pow(x, 3.0));
        const double s = std::sqrt(x + 1.0);
        stretched_v.push_back(0.5 * std::exp(-4.0 * s) / s);
    }
    const fit_window window{5.0, 100.0, true};
    CHECK(fit_law(decay_law::exponential, t, exp_v, 5, 100).parameter ==
          doctest::Approx(2.0).epsilon(1e-12));
    CHECK(fit_law(decay_law::polynomial, t, poly_v, 5, 100).parameter ==
          doctest::Approx(3.0).epsilon(1e-12));
    CHECK(fit_law(decay_law::stretched, t, stretched_v, 5, 100).parameter ==
          doctest::Approx(4.0).epsilon(1e-12));
    CHECK(std::exp(fit_law(decay_law::polynomial, t, poly_v, 5, 100).log_prefactor) ==
          doctest::Approx(7.0).epsilon(1e-10));
    CHECK(rank_laws(t, exp_v, window).front().law == decay_law::exponential);
    CHECK(rank_laws(t, poly_v, window).front().law == decay_law::polynomial);
    CHECK(rank_laws(t, stretched_v, window).front().law == decay_law::stretched);
}

TEST_CASE("random weights: per-run clustering measures obey the identities they must") {
    random_table_settings s;
    s.n = 16;
    s.d = 16;
    s.layers = 20; // windows: layer 1, layers 1-5, first 10% = layers 1-2
    const auto windows = random_speed_windows(s.layers);
    REQUIRE(windows.size() == 3);
    CHECK(windows[0].last == 1);
    CHECK(windows[1].last == 5);
    CHECK(windows[2].last == 2);
    CHECK(random_speed_windows(200)[2].last == 20);

    const random_run_result post = random_weights_run(scheme::post_ln, s, 1);
    const random_run_result pre = random_weights_run(scheme::pre_ln, s, 1);
    const random_run_result mix = random_weights_run(scheme::mix_ln, s, 1);
    REQUIRE(post.mean_cos.size() == 21);
    REQUIRE(post.pair_change.size() == 20);
    // At r0 = 1 pre-ln's first layer, y = r theta + h A, is post-ln's, y = theta + h A.
    CHECK(pre.mean_cos[1] == post.mean_cos[1]);
    CHECK(pre.windows[0].gain == post.windows[0].gain);
    // mix-ln is post-ln before its switch (t_switch = T/4 = 5 layers).
    for (std::size_t l = 0; l <= 5; ++l)
        CHECK(mix.mean_cos[l] == post.mean_cos[l]);
    // Its first pre-ln layer (layer 5 -> 6) starts from r = 1, so it is post-ln's too; the
    // next one starts from r = |y| != 1 and differs.
    CHECK(mix.mean_cos[6] == post.mean_cos[6]);
    CHECK(mix.mean_cos[7] != post.mean_cos[7]);
    // The gain is the signed mean change of the pairwise cosines, so it cannot exceed the
    // mean absolute change; and it is the mean_cos difference over the window.
    for (const auto* run : {&post, &pre, &mix})
        for (std::size_t w = 0; w < windows.size(); ++w) {
            const auto& win = windows[w];
            CHECK(run->windows[w].pair_change >= std::abs(run->windows[w].gain) - 1e-15);
            CHECK(run->windows[w].gain ==
                  doctest::Approx((run->mean_cos[win.last] - run->mean_cos[win.first]) /
                                  double(win.last - win.first))
                      .epsilon(1e-12));
        }
    // At r0 = 2 the same layer takes half the relative step: pre-ln no longer equals post-ln.
    s.r0 = 2.0;
    CHECK(random_weights_run(scheme::pre_ln, s, 1).mean_cos[1] != post.mean_cos[1]);
}

TEST_CASE("random weights: verdicts are relative to the median over schemes") {
    std::vector<random_row> rows;
    // gains of layer 1 / 1-5 / first 10%: post-ln at the median, peri-ln 3x it, pre-ln 1/2.
    const double gains[][3] = {{1, 1, 1},   {0.5, 0.5, 0.5}, {1, 1, 1},
                               {3, 2, 1.2}, {3, 3, 3},       {0.1, 0.1, 0.1}};
    // The paper's six schemes (the first six rows of scheme_table; no-norm is not in its
    // random-weights check).
    for (std::size_t i = 0; i < std::size(gains); ++i) {
        random_row row{};
        row.id = scheme_table[i].id;
        for (double g : gains[i]) {
            row.gain.push_back({g, 0.0});
            row.pair_change.push_back({g, 0.0});
            row.angle.push_back({g, 0.0});
        }
        row.collapse_law = decay_law::polynomial;
        row.collapse_mean = 1.0;
        row.paper_early = i == 3 ? "fast" : i == 5 ? "-" : "moderate";
        row.paper_collapse = "slow";
        rows.push_back(row);
    }
    assign_random_verdicts(rows);
    // Medians over the six: layer 1 (0.1 0.5 1 1 3 3) -> 1; layers 1-5 -> 1; first 10% -> 1.
    CHECK(rows[0].ours_early == std::vector<std::string>{"moderate", "moderate", "moderate"});
    CHECK(rows[1].ours_early == std::vector<std::string>{"slow", "slow", "slow"});
    CHECK(rows[3].ours_early == std::vector<std::string>{"fast", "fast", "moderate"});
    CHECK(rows[3].verdict == "early agrees over layer 1 and layers 1-5 only; collapse agrees");
    CHECK(rows[0].verdict == "early agrees in every window; collapse agrees");
    CHECK(rows[1].verdict == "early disagrees in every window; collapse agrees");
    CHECK(rows[5].verdict == "n/a (not in the paper's table)");
}
