#pragma once
// Metastable plateaus of a run (docs/model.md §5.3): the maximal stretches of frames with one
// cluster count that last at least a threshold.
//
// Frames i = 0..F-1 at times t_i carry counts c_i. A maximal run a..b of equal counts
// (c_{a-1} != c_a or a = 0, c_{b+1} != c_b or b = F-1) spans
//
//     start = t_a                                   (its first frame)
//     end   = t_{b+1} if b + 1 < F                  (the first frame at another count)
//             t_{F-1} otherwise, marked censored    (the run ended while it lasted)
//     length = end - start
//
// so the runs tile [t_0, t_{F-1}] and a length is within one frame interval of the time the
// count really stayed put (the change happened somewhere in (t_b, t_{b+1}]). A censored run's
// length is a lower bound. A run is a plateau when length >= min_length (inclusive); a
// censored run is judged by the length it has so far.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

struct plateau {
    double start = 0.0; // time of its first frame
    double end = 0.0;   // time of the first frame at another count (censored: the last frame)
    std::int64_t clusters = 0;
    bool censored = false; // reaches the run's last frame: end is where the run stopped
    [[nodiscard]] double length() const { return end - start; }
    bool operator==(const plateau&) const = default;
};

// The plateaus of the series, in time order. `counts` must hold whole numbers >= 0 and
// `times` finite nondecreasing numbers, one per frame (the same size); `min_length` must be
// finite and >= 0. input_error names the first offending entry. Empty series: none.
std::vector<plateau> find_plateaus(std::span<const double> times, std::span<const double> counts,
                                   double min_length);

// The longest plateau (the earliest of equally long ones); nullopt when there is none.
std::optional<plateau> longest_plateau(std::span<const plateau> plateaus);

// The threshold of --plateau-min: a time ("2.5"), or a fraction of the run's horizon T
// ("5%"). The default, 5% of T, lets a run show up to 20 plateaus and, at nadyn's default of
// about 100 frames, asks a plateau to span at least 5 frame intervals: longer than the few
// frames a merge cascade spends passing through intermediate counts (docs/model.md §5.3).
struct plateau_threshold {
    double value = 5.0;  // a time, or a percentage of T
    bool percent = true; // value is a percentage of the horizon
    // "NUMBER" (a time >= 0) or "NUMBER%" (0 to 100); input_error otherwise.
    static plateau_threshold parse(std::string_view text);
    // The text parse() reads back exactly ("5%", "2.5").
    [[nodiscard]] std::string to_string() const;
    // The threshold as a time for a run of horizon T.
    [[nodiscard]] double time(double horizon) const;
};

} // namespace nadyn
