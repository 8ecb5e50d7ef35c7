// The terminal laws' fits (fit.hpp) recover the parameters of exact laws. (The tables that
// use them are the studies studies/terminal/ and studies/random_weights/, tested in
// tests/python/test_study.py.)
#include "nadyn/model/fit.hpp"

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
