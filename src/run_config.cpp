#include "nadyn/run_config.hpp"

#include "nadyn/error.hpp"
#include "nadyn/parameter_registry.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unistd.h>

namespace nadyn {

namespace {

void require(bool ok, const std::string& message) {
    if (!ok) throw input_error(message);
}

std::string gib(double bytes) {
    std::ostringstream out;
    out.precision(3);
    out << bytes / double(1 << 30);
    return out.str();
}

} // namespace

double run_config::switch_time() const {
    return t_switch.value_or(0.25 * integration.T);
}

std::int64_t run_config::frame_interval() const {
    if (integration.every > 0) return integration.every;
    const std::int64_t steps = step_count(integration.T, integration.dt);
    return std::max<std::int64_t>(1, (steps + 99) / 100);
}

bool run_config::observes(std::string_view name) const {
    for (const std::string& requested : observe)
        if (requested == name) return true;
    return false;
}

scheme_parameters run_config::scheme_settings() const {
    return {scheme_id, alpha, switch_time()};
}

integration_settings run_config::resolved_integration() const {
    integration_settings settings = integration;
    settings.every = frame_interval();
    return settings;
}

double available_memory_bytes() {
    const double page = double(sysconf(_SC_PAGE_SIZE));
    return std::max(0.0, double(sysconf(_SC_AVPHYS_PAGES)) * page);
}

double run_config::memory_bytes() const {
    // About a dozen n x d arrays (state, stages of the stepper, attention, initial
    // directions, projections) plus a logits block per thread.
    return 8.0 * (14.0 * double(n) * double(d) + 256.0 * double(n) * 8.0);
}

void run_config::validate() const {
    validate(available_memory_bytes());
}

void run_config::validate(double available) const {
    for (const parameter_spec& spec : parameter_registry())
        if (spec.check) spec.check(*this);
    // Refused before any allocation when the estimate exceeds the machine's physical memory.
    const double bytes = memory_bytes();
    static const double physical = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    require(physical <= 0 || bytes < physical,
            "n = " + std::to_string(n) + ", d = " + std::to_string(d) + " needs about " +
                gib(bytes) + " GiB, more than this machine's " + gib(physical) + " GiB of memory");
    require(ignore_memory_estimate || available <= 0 || bytes < available,
            "n = " + std::to_string(n) + ", d = " + std::to_string(d) + " needs about " +
                gib(bytes) + " GiB, more than the " + gib(available) +
                " GiB of memory available now (--force runs it anyway)");
}

parameter_list run_config::to_parameters() const {
    parameter_list p;
    for (const parameter_spec& spec : parameter_registry())
        p.set(std::string(spec.name), spec.record(*this));
    p.set("command_line", command_line);
    return p;
}

run_config run_config::from_parameters(const parameter_list& parameters) {
    run_config c;
    for (const parameter_spec& spec : parameter_registry()) {
        const parameter_value* value = parameters.find(std::string(spec.name));
        if (!value && spec.legacy.empty())
            throw input_error("the file's /parameters lack '" + std::string(spec.name) +
                              "'; it was not written by nadyn simulate");
        const std::string text = value ? to_display_string(*value) : std::string(spec.legacy);
        try {
            spec.assign(c, text);
        } catch (const input_error& e) {
            throw input_error("the file's /parameters/" + std::string(spec.name) +
                              " is malformed: " + e.what());
        }
    }
    c.command_line = parameters.text("command_line").value_or("");
    return c;
}

bool resume_may_change(const std::string& name) {
    if (name == "command_line") return true;
    const parameter_spec* spec = find_parameter(name);
    return spec && spec->resumable;
}

} // namespace nadyn
