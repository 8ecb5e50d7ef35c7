#include "nadyn/model/plateaus.hpp"

#include "nadyn/model/error.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

namespace nadyn {

namespace {

std::string show(double value) {
    std::ostringstream out;
    out.precision(17);
    out << value;
    return out.str();
}

} // namespace

std::vector<plateau> find_plateaus(std::span<const double> times, std::span<const double> counts,
                                   double min_length) {
    if (times.size() != counts.size())
        throw input_error("plateaus: " + std::to_string(times.size()) + " times but " +
                          std::to_string(counts.size()) + " counts; give one of each per frame");
    if (!std::isfinite(min_length) || min_length < 0.0)
        throw input_error("plateaus: the least length must be a finite number >= 0, got " +
                          show(min_length));
    for (std::size_t i = 0; i < times.size(); ++i) {
        if (!std::isfinite(times[i]) || (i > 0 && times[i] < times[i - 1]))
            throw input_error("plateaus: times[" + std::to_string(i) + "] = " + show(times[i]) +
                              " is not a finite time at or after the previous frame's");
        // A count is compared exactly below, so it must be a whole number.
        if (!(counts[i] >= 0.0) || counts[i] != std::floor(counts[i]) || counts[i] > 9.0e15)
            throw input_error("plateaus: counts[" + std::to_string(i) + "] = " + show(counts[i]) +
                              " is not a whole number >= 0");
    }
    std::vector<plateau> found;
    const std::size_t frames = times.size();
    for (std::size_t first = 0; first < frames;) {
        std::size_t next = first + 1; // the first frame at another count, or frames
        while (next < frames && counts[next] == counts[first])
            ++next;
        plateau p;
        p.start = times[first];
        p.censored = next == frames;
        p.end = p.censored ? times[frames - 1] : times[next];
        p.clusters = static_cast<std::int64_t>(counts[first]);
        if (p.length() >= min_length) found.push_back(p);
        first = next;
    }
    return found;
}

std::optional<plateau> longest_plateau(std::span<const plateau> plateaus) {
    std::optional<plateau> longest;
    for (const plateau& p : plateaus)
        if (!longest || p.length() > longest->length()) longest = p;
    return longest;
}

plateau_threshold plateau_threshold::parse(std::string_view text) {
    plateau_threshold threshold;
    threshold.percent = !text.empty() && text.back() == '%';
    const std::string_view number = threshold.percent ? text.substr(0, text.size() - 1) : text;
    const char* first = number.data();
    const char* last = first + number.size();
    if (first != last && *first == '+') ++first; // from_chars refuses a leading '+'
    const auto [end, error] = std::from_chars(first, last, threshold.value);
    const bool parsed = first != last && error == std::errc() && end == last;
    if (!parsed || !std::isfinite(threshold.value) || threshold.value < 0.0 ||
        (threshold.percent && threshold.value > 100.0))
        throw input_error("plateau-min must be a time >= 0 (e.g. 2.5) or a percentage of T from "
                          "0% to 100% (e.g. 5%), got '" +
                          std::string(text) + "'");
    return threshold;
}

std::string plateau_threshold::to_string() const {
    return show(value) + (percent ? "%" : "");
}

double plateau_threshold::time(double horizon) const {
    return percent ? value / 100.0 * horizon : value;
}

} // namespace nadyn
