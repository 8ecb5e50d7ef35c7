#pragma once
// The statistics every table reports over its seeds: the mean and the sample standard
// deviation (0 for one seed, where no spread is measured).
#include <cmath>
#include <numeric>
#include <vector>

namespace nadyn::tables {

inline double mean_of(const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

inline double spread_of(const std::vector<double>& v) {
    if (v.size() < 2) return 0.0;
    const double m = mean_of(v);
    double s = 0.0;
    for (double x : v)
        s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size() - 1));
}

} // namespace nadyn::tables
