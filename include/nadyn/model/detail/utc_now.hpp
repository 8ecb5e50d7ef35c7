#pragma once
// The wall-clock time files record ("created", "finished"): UTC, ISO 8601, to the second.
#include <ctime>
#include <string>

namespace nadyn::detail {

inline std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return buffer;
}

} // namespace nadyn::detail
