#pragma once
// Suggestions for a misspelt name, as the command line makes them for flags: the closest
// valid name by edit distance (insertions, deletions, substitutions and swaps of adjacent
// characters), when it is close.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

// The edit distance of `a` and `b` (optimal string alignment: each adjacent swap costs 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` within an edit distance of 2 (the first of equals), or
// empty when none is that close.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

} // namespace nadyn
