#include "nadyn/run_config.hpp"

#include "nadyn/error.hpp"

#include <cmath>
#include <sstream>
#include <unistd.h>

namespace nadyn {

namespace {

void require(bool ok, const std::string& message) {
    if (!ok) throw input_error(message);
}

std::string show(double value) {
    std::ostringstream out;
    out.precision(17);
    out << value;
    return out.str();
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

scheme_parameters run_config::scheme_settings() const {
    return {scheme_id, alpha, switch_time()};
}

integration_settings run_config::resolved_integration() const {
    integration_settings settings = integration;
    settings.every = frame_interval();
    return settings;
}

void run_config::validate() const {
    require(n >= 1, "n must be at least 1 (number of tokens), got " + std::to_string(n));
    require(d >= 2,
            "d must be at least 2 (dimension of the sphere S^{d-1}), got " + std::to_string(d));
    require(std::isfinite(beta), "beta must be a finite number, got " + show(beta));
    require(std::isfinite(integration.T) && integration.T >= 0.0,
            "T must be a finite number >= 0, got " + show(integration.T));
    require(std::isfinite(integration.dt) && integration.dt > 0.0,
            "dt must be a finite number > 0, got " + show(integration.dt));
    require(step_count(integration.T, integration.dt) < (std::int64_t{1} << 40),
            "T / dt is too large (" + show(integration.T / integration.dt) + " steps)");
    require(std::isfinite(r0) && r0 > 0.0, "r0 must be a finite number > 0, got " + show(r0));
    require(std::isfinite(alpha) && alpha > 0.0,
            "alpha must be a finite number > 0, got " + show(alpha));
    if (t_switch)
        require(std::isfinite(*t_switch) && *t_switch >= 0.0,
                "t-switch must be a finite number >= 0, got " + show(*t_switch));
    require(std::isfinite(integration.rtol) && integration.rtol > 0.0,
            "rtol must be a finite number > 0, got " + show(integration.rtol));
    require(std::isfinite(integration.atol) && integration.atol >= 0.0,
            "atol must be a finite number >= 0, got " + show(integration.atol));
    require(integration.every >= 0, "every must be >= 1 (or 0 for about 100 frames), got " +
                                        std::to_string(integration.every));
    require(std::isfinite(cluster_eps) && cluster_eps > 0.0 && cluster_eps <= 2.0,
            "cluster-eps must be in (0, 2], got " + show(cluster_eps));
    // Memory of a run: about a dozen n x d arrays (state, stages of the stepper, attention,
    // initial directions, projections) plus a logits block per thread; refused before any
    // allocation when it exceeds the machine's physical memory.
    const double bytes = 8.0 * (14.0 * double(n) * double(d) + 256.0 * double(n) * 8.0);
    const double page = double(sysconf(_SC_PAGE_SIZE));
    const double physical = double(sysconf(_SC_PHYS_PAGES)) * page;
    const double available = double(sysconf(_SC_AVPHYS_PAGES)) * page;
    require(physical <= 0 || bytes < physical,
            "n = " + std::to_string(n) + ", d = " + std::to_string(d) + " needs about " +
                gib(bytes) + " GiB, more than this machine's " + gib(physical) + " GiB of memory");
    require(ignore_memory_estimate || available <= 0 || bytes < available,
            "n = " + std::to_string(n) + ", d = " + std::to_string(d) + " needs about " +
                gib(bytes) + " GiB, more than the " + gib(available) +
                " GiB of memory available now (--force runs it anyway)");
    require(seed < (std::uint64_t{1} << 63),
            "seed must be below 2^63 (it is stored as a signed 64-bit attribute), got " +
                std::to_string(seed));
    require(threads >= 0, "threads must be >= 0 (0: all cores), got " + std::to_string(threads));
    require(weights.kind != weights_kind::random_per_layer ||
                integration.kind == integrator_kind::layers,
            "weights 'random-per-layer' needs --integrator layers (the ODE has one set of "
            "weights); use 'random' with rk4, dopri5 or euler");
    require(init.kind != initial_kind::orthogonal || n <= d,
            "init 'orthogonal' needs n <= d (theta_k = e_k), got n = " + std::to_string(n) +
                ", d = " + std::to_string(d));
}

parameter_list run_config::to_parameters() const {
    parameter_list p;
    auto integer = [](auto value) { return static_cast<std::int64_t>(value); };
    p.set("scheme", std::string(info(scheme_id).name));
    p.set("n", integer(n));
    p.set("d", integer(d));
    p.set("beta", beta);
    p.set("T", integration.T);
    p.set("dt", integration.dt);
    p.set("integrator", std::string(to_string(integration.kind)));
    p.set("rtol", integration.rtol);
    p.set("atol", integration.atol);
    p.set("init", init.to_string());
    p.set("weights", weights.to_string());
    p.set("seed", integer(seed));
    p.set("r0", r0);
    p.set("alpha", alpha);
    p.set("t_switch", switch_time());
    p.set("causal", integer(causal ? 1 : 0));
    p.set("precision", std::string(to_string(arithmetic)));
    p.set("every", integer(frame_interval()));
    p.set("positions", std::string(positions ? "all" : "none"));
    p.set("compress", integer(compress ? 1 : 0));
    p.set("swmr", integer(swmr ? 1 : 0));
    p.set("cluster_eps", cluster_eps);
    p.set("threads", integer(threads));
    p.set("block", integer(block));
    p.set("command_line", command_line);
    return p;
}

} // namespace nadyn

namespace nadyn {

namespace {

template <class T> T required(const std::optional<T>& value, const char* name) {
    if (!value)
        throw input_error(std::string("the file's /parameters lack '") + name +
                          "' (or it has the wrong type); it was not written by nadyn simulate");
    return *value;
}

} // namespace

run_config run_config::from_parameters(const parameter_list& p) {
    run_config c;
    c.scheme_id = parse_scheme(required(p.text("scheme"), "scheme"));
    const std::int64_t n = required(p.integer("n"), "n"), d = required(p.integer("d"), "d");
    if (n < 1 || d < 2) throw input_error("the file's parameters n, d are out of range");
    c.n = static_cast<std::size_t>(n);
    c.d = static_cast<std::size_t>(d);
    c.beta = required(p.number("beta"), "beta");
    c.integration.T = required(p.number("T"), "T");
    c.integration.dt = required(p.number("dt"), "dt");
    c.integration.kind = parse_integrator(required(p.text("integrator"), "integrator"));
    c.integration.rtol = required(p.number("rtol"), "rtol");
    c.integration.atol = required(p.number("atol"), "atol");
    c.integration.every = required(p.integer("every"), "every");
    c.init = initial_spec::parse(required(p.text("init"), "init"));
    c.weights = weights_spec::parse(required(p.text("weights"), "weights"));
    c.seed = static_cast<std::uint64_t>(required(p.integer("seed"), "seed"));
    c.r0 = required(p.number("r0"), "r0");
    c.alpha = required(p.number("alpha"), "alpha");
    c.t_switch = required(p.number("t_switch"), "t_switch");
    c.causal = required(p.integer("causal"), "causal") != 0;
    // Files written before --precision existed were computed in double.
    c.arithmetic = parse_precision(p.text("precision").value_or("double"));
    c.positions = required(p.text("positions"), "positions") == "all";
    c.compress = required(p.integer("compress"), "compress") != 0;
    c.swmr = p.integer("swmr").value_or(0) != 0;
    c.cluster_eps = required(p.number("cluster_eps"), "cluster_eps");
    c.block = static_cast<std::size_t>(required(p.integer("block"), "block"));
    c.command_line = p.text("command_line").value_or("");
    return c;
}

bool resume_may_change(const std::string& parameter) {
    return parameter == "T" || parameter == "threads" || parameter == "command_line" ||
           parameter == "swmr";
}

} // namespace nadyn
