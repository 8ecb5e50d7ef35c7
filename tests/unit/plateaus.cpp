// find_plateaus on constructed series whose plateaus follow from the definition in
// include/nadyn/model/plateaus.hpp: ties, the threshold's boundary, the censored end, one frame,
// none; and the --plateau-min threshold's two forms.
#include "nadyn/model/plateaus.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace nadyn;

namespace {

std::vector<double> grid(std::size_t frames, double dt) {
    std::vector<double> t(frames);
    for (std::size_t i = 0; i < frames; ++i)
        t[i] = double(i) * dt;
    return t;
}

} // namespace

TEST_CASE("maximal stretches of one count: start, end at the next count's first frame, censored "
          "last") {
    // Counts 5 5 3 3 3 3 1 1 at t = 0, 0.5, ..., 3.5.
    const auto t = grid(8, 0.5);
    const std::vector<double> c{5, 5, 3, 3, 3, 3, 1, 1};
    const auto all = find_plateaus(t, c, 0.0);
    REQUIRE(all.size() == 3);
    CHECK(all[0] == plateau{0.0, 1.0, 5, false});
    CHECK(all[1] == plateau{1.0, 3.0, 3, false});
    // The last stretch reaches the last frame: its end is that frame, and it is censored.
    CHECK(all[2] == plateau{3.0, 3.5, 1, true});
    // The stretches tile [t_0, t_last].
    CHECK(all[0].length() + all[1].length() + all[2].length() == 3.5);
    const auto longest = longest_plateau(all);
    REQUIRE(longest);
    CHECK(*longest == all[1]);
}

TEST_CASE("the threshold is inclusive: a stretch exactly min_length long is a plateau") {
    const auto t = grid(8, 0.5);
    const std::vector<double> c{5, 5, 3, 3, 3, 3, 1, 1};
    const auto at = find_plateaus(t, c, 1.0); // 5 lasts exactly 1.0
    REQUIRE(at.size() == 2);
    CHECK(at[0].clusters == 5);
    CHECK(at[1].clusters == 3);
    const auto above = find_plateaus(t, c, std::nextafter(1.0, 2.0));
    REQUIRE(above.size() == 1);
    CHECK(above[0].clusters == 3);
    // Longer than every stretch: none.
    CHECK(find_plateaus(t, c, 2.5).empty());
    CHECK_FALSE(longest_plateau(find_plateaus(t, c, 2.5)));
}

TEST_CASE("ties: a count that returns starts a new plateau; equal lengths give the earliest") {
    const auto t = grid(9, 1.0);
    // 4 for 2, 2 for 2, 4 for 2, 2 for 2 frame intervals, then the censored last frame.
    const std::vector<double> c{4, 4, 2, 2, 4, 4, 2, 2, 1};
    const auto all = find_plateaus(t, c, 2.0);
    REQUIRE(all.size() == 4);
    CHECK(all[0] == plateau{0.0, 2.0, 4, false});
    CHECK(all[2] == plateau{4.0, 6.0, 4, false});
    CHECK(all[3] == plateau{6.0, 8.0, 2, false});
    const auto longest = longest_plateau(all);
    REQUIRE(longest);
    CHECK(*longest == all[0]);
}

TEST_CASE("a censored stretch is judged by the length it has so far") {
    const auto t = grid(6, 1.0);
    const std::vector<double> c{3, 3, 1, 1, 1, 1}; // 1 from t = 2 to the last frame, t = 5
    const auto all = find_plateaus(t, c, 3.0);
    REQUIRE(all.size() == 1);
    CHECK(all[0] == plateau{2.0, 5.0, 1, true});
    CHECK(find_plateaus(t, c, 3.5).empty());
    // A constant series is one censored plateau over the whole run.
    const std::vector<double> same(6, 7.0);
    const auto whole = find_plateaus(t, same, 5.0);
    REQUIRE(whole.size() == 1);
    CHECK(whole[0] == plateau{0.0, 5.0, 7, true});
}

TEST_CASE("one frame, and no frame") {
    const std::vector<double> t{2.0}, c{4.0};
    const auto one = find_plateaus(t, c, 0.0);
    REQUIRE(one.size() == 1);
    CHECK(one[0] == plateau{2.0, 2.0, 4, true});
    CHECK(one[0].length() == 0.0);
    CHECK(find_plateaus(t, c, 1e-300).empty());
    CHECK(find_plateaus({}, {}, 0.0).empty());
    CHECK_FALSE(longest_plateau({}));
}

TEST_CASE("malformed series are refused, naming the entry") {
    const std::vector<double> t{0.0, 1.0, 2.0};
    CHECK_THROWS_AS(find_plateaus(t, std::vector<double>{1, 2}, 0.0), input_error);
    CHECK_THROWS_WITH(find_plateaus(t, std::vector<double>{1, 2.5, 2}, 0.0),
                      doctest::Contains("counts[1] = 2.5"));
    CHECK_THROWS_WITH(find_plateaus(t, std::vector<double>{1, NAN, 2}, 0.0),
                      doctest::Contains("counts[1]"));
    CHECK_THROWS_WITH(
        find_plateaus(std::vector<double>{0, 2, 1}, std::vector<double>{1, 1, 1}, 0.0),
        doctest::Contains("times[2]"));
    CHECK_THROWS_AS(find_plateaus(t, std::vector<double>{1, 1, 1}, -1.0), input_error);
    CHECK_THROWS_AS(find_plateaus(t, std::vector<double>{1, 1, 1}, INFINITY), input_error);
}

TEST_CASE("--plateau-min: a time, or a percentage of the horizon") {
    const plateau_threshold defaults;
    CHECK(defaults.to_string() == "5%");
    CHECK(defaults.time(40.0) == 2.0);
    const auto absolute = plateau_threshold::parse("2.5");
    CHECK_FALSE(absolute.percent);
    CHECK(absolute.time(1000.0) == 2.5);
    CHECK(absolute.to_string() == "2.5");
    const auto relative = plateau_threshold::parse("12.5%");
    CHECK(relative.percent);
    CHECK(relative.time(8.0) == 1.0);
    CHECK(plateau_threshold::parse(relative.to_string()).time(8.0) == 1.0);
    CHECK(plateau_threshold::parse("0").time(5.0) == 0.0);
    CHECK(plateau_threshold::parse("100%").time(5.0) == 5.0);
    for (const char* bad : {"", "%", "-1", "101%", "nan", "inf", "5 %", "5%%", "x", "1e400"})
        CHECK_THROWS_WITH(plateau_threshold::parse(bad), doctest::Contains("plateau-min"));
}
