#include "nadyn/experiment/run_config.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/model/detail/parallel.hpp"
#include "nadyn/model/error.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>
#include <utility>

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

bool run_config::records(std::string_view name) const {
    if (name == "step_size") return true;
    for (const std::string& chosen : observables)
        if (chosen == name) return true;
    return false;
}

double run_config::energy_from_log_energy(double log_energy) const {
    const double b = logit_beta();
    if (b == 0.0) return std::numeric_limits<double>::quiet_NaN();
    const double c = combine == head_combine::sum
                         ? static_cast<double>(std::max<std::size_t>(weights.heads, 1))
                         : 1.0;
    return c * std::exp(b * log_energy) / (2.0 * b);
}

std::vector<std::string> all_standard_observables() {
    std::vector<std::string> names;
    for (const std::string_view name : observable_names(false))
        names.emplace_back(name);
    return names;
}

std::vector<std::string> run_config::recorded_observables() const {
    std::vector<std::string> names;
    for (const observable* row : recorded_rows())
        names.emplace_back(row->name);
    return names;
}

std::vector<const observable*> run_config::recorded_rows() const {
    std::vector<const observable*> rows;
    for (const observable* row : observable_table())
        if (row->optional ? observes(row->name) : records(row->name)) rows.push_back(row);
    return rows;
}

bool run_config::needs(observable_pass pass) const {
    for (const observable* row : recorded_rows())
        if (row->pass == pass) return true;
    return false;
}

scheme_parameters run_config::scheme_settings() const {
    return {scheme_id, alpha, switch_time(), ngpt_step};
}

model_parameters run_config::model(int threads, layer_norm_affine affine) const {
    model_parameters model{.n = n,
                           .d = d,
                           .beta = logit_beta(),
                           .causal = causal,
                           .scheme = scheme_settings(),
                           .arithmetic = arithmetic,
                           .threads = threads,
                           .attention = attention,
                           .norm = norm,
                           .affine = std::move(affine),
                           .qkv_norm = qkv_norm};
    // The heads' mean folds 1/H into each V (combine_heads); QKV-Norm's values keep it.
    if (combine == head_combine::mean && weights.heads > 1)
        model.value_norm = 1.0 / static_cast<double>(weights.heads);
    return model;
}

double run_config::logit_beta() const {
    // log 1 = 0: a single token's logits vanish, as its softmax weight is 1 whatever beta.
    return beta_log_n ? beta * std::log(static_cast<double>(n)) : beta;
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
    const double N = double(n), D = double(d), H = double(weights.heads);
    const double threads = double(detail::resolve_threads(this->threads));
    // The n x d arrays: the state, the stepper's stages (rk4 keeps 5, dopri5 8), the
    // right-hand side, the attention, the initial directions, a head's projections q, k, v.
    const double stages = integration.kind == integrator_kind::dopri5 ? 20.0
                          : integration.kind == integrator_kind::rk4  ? 14.0
                                                                      : 10.0;
    double doubles = stages * N * D;
    // Per thread, a block of logits (about 4 MiB, at most 256 rows of n;
    // src/model/kernel/general.hpp) and a 128-row block of the observables' Gram matrix.
    const double rows = block ? double(block) : std::clamp(double(1 << 19) / N, 16.0, 256.0);
    doubles += threads * (rows + 128.0) * N;
    // The weights, H heads of d x d matrices: Q, K, V for a family other than the identity, V
    // alone when only the value family draws. They are held by the run and copied into its
    // system (the heads' mean folds 1/H into V) and into the file's record, or, redrawn per
    // layer, the next layer's draw and its copy besides.
    const double matrices = weights.family != weights_family::identity ? 3.0
                            : weights.value != value_family::same      ? 1.0
                                                                       : 0.0;
    const double copies = weights.per_layer ? 5.0 : 3.0;
    doubles += copies * matrices * H * D * D;
    return 8.0 * doubles;
}

std::string run_config::out_of_memory_message() const {
    std::string text = "out of memory: an allocation failed; n = " + std::to_string(n) +
                       ", d = " + std::to_string(d) + " needs about " + gib(memory_bytes()) +
                       " GiB";
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        text += " within an address-space limit (ulimit -v) of " + gib(double(limit.rlim_cur)) +
                " GiB";
    text += "; reduce n or d";
    if (block != 0) text += " (or --block: block x n logits per thread)";
    return text + ", or raise the limit";
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
    const std::string what = "n = " + std::to_string(n) + ", d = " + std::to_string(d) +
                             (weights.family == weights_family::identity
                                  ? std::string()
                                  : ", " + std::to_string(weights.heads) + " head(s) of " +
                                        weights.to_string() + " weights");
    require(physical <= 0 || bytes < physical, what + " needs about " + gib(bytes) +
                                                   " GiB, more than this machine's " +
                                                   gib(physical) + " GiB of memory");
    require(ignore_memory_estimate || available <= 0 || bytes < available,
            what + " needs about " + gib(bytes) + " GiB, more than the " + gib(available) +
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
        // every = 0 is the record of a run with frame_times: its every stays unset.
        if (spec.name == "every" && text == "0") continue;
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

} // namespace nadyn
