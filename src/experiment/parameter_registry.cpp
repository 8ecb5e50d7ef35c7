#include "nadyn/experiment/parameter_registry.hpp"

#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/observable_table.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/observables.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <span>
#include <sstream>

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

// A count too large to be one, in six digits (5e+19, not 50000000000000000000).
std::string show_count(double value) {
    std::ostringstream out;
    out.precision(6);
    out << value;
    return out.str();
}

std::string quoted(std::string_view text) {
    // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "'" + string.
    std::string out;
    out.reserve(text.size() + 2);
    out.push_back('\'');
    out.append(text);
    out.push_back('\'');
    return out;
}

std::int64_t integer(std::size_t value) {
    return static_cast<std::int64_t>(value);
}

std::size_t positive_size(std::string_view text, std::string_view what, std::int64_t least) {
    const std::int64_t value = parse_integer(text, what);
    require(value >= least, std::string(what) + " must be at least " + std::to_string(least) +
                                ", got " + std::string(text));
    return static_cast<std::size_t>(value);
}

// A comma-separated list of names from `table` ("none": none), in the table's order without
// repeats, so the record of a run does not depend on how it was spelled; an unknown name is
// an input_error listing `choices` (the keywords) and the table.
// A name of the `other` table (the other key's observables) is told where it belongs.
std::vector<std::string> parse_name_list(std::string_view text,
                                         std::span<const std::string_view> table,
                                         std::string_view key, std::string_view choices,
                                         std::string_view hint,
                                         std::span<const std::string_view> other,
                                         std::string_view other_key, std::string_view other_kind) {
    std::vector<bool> wanted(table.size(), false);
    if (text != "none") {
        std::size_t start = 0;
        for (;;) {
            const std::size_t comma = text.find(',', start);
            const std::string_view name =
                text.substr(start, comma == std::string_view::npos ? comma : comma - start);
            auto found = std::find(table.begin(), table.end(), name);
            // The name an observable had before it was renamed (energy: log_energy).
            if (const observable* row = find_observable(name);
                found == table.end() && row && row->legacy_name == name)
                found = std::find(table.begin(), table.end(), row->name);
            if (found == table.end()) {
                if (std::find(other.begin(), other.end(), name) != other.end())
                    throw input_error(quoted(name) + " is " + std::string(other_kind) +
                                      " observable: ask for it under " + std::string(other_key) +
                                      ", not " + std::string(key) + " (" + std::string(key) +
                                      " = " + quoted(text) + ")");
                std::string valid(choices);
                for (const auto known : table)
                    valid += ", " + std::string(known);
                throw input_error("unknown observable " + quoted(name) + " in " + std::string(key) +
                                  " = " + quoted(text) + "; valid choices: " + valid + " (" +
                                  std::string(hint) + ")");
            }
            wanted[static_cast<std::size_t>(found - table.begin())] = true;
            if (comma == std::string_view::npos) break;
            start = comma + 1;
        }
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < wanted.size(); ++i)
        if (wanted[i]) names.emplace_back(table[i]);
    return names;
}

// --observe's help, generated from the observables' table (observe_help()) once.
std::string_view observe_help_text() {
    static const std::string help = observe_help();
    return help;
}

// "none" or a comma-separated list of the table's optional observables (--observe).
std::vector<std::string> parse_observables(std::string_view text) {
    return parse_name_list(text, observable_names(true), "observe", "none",
                           "a comma-separated list", observable_names(false), "observables",
                           "a standard");
}

// "all", "none" or a comma-separated list of the standard observables (--observables).
std::vector<std::string> parse_standard_observables(std::string_view text) {
    if (text == "all") return all_standard_observables();
    return parse_name_list(text, observable_names(false), "observables", "all, none",
                           "a comma-separated list; optional observables go to observe",
                           observable_names(true), "observe", "an optional");
}

// The record of --observables: "all" for the whole set (what files before the parameter
// hold), "none", or the names.
std::string standard_observables_text(const std::vector<std::string>& names) {
    if (names.size() == observable_names(false).size()) return "all";
    std::string text;
    for (const std::string& name : names)
        text += (text.empty() ? "" : ",") + name;
    return text.empty() ? "none" : text;
}

// The largest K of --mode-count: a degree beyond it resolves angles below pi / 1024, finer than
// any clustering question asks, while the cost (O(n^2 K) per frame) keeps growing.
constexpr std::int64_t max_modes = 1024;

std::string observables_text(const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& name : names)
        text += (text.empty() ? "" : ",") + name;
    return text.empty() ? "none" : text;
}

// A seed is a whole number in [0, 2^63): /parameters stores it as a signed 64-bit attribute.
std::uint64_t parse_seed(std::string_view text, std::string_view what) {
    const std::int64_t value = parse_integer(text, what);
    require(value >= 0,
            std::string(what) + " must be a whole number >= 0, got " + std::string(text));
    return static_cast<std::uint64_t>(value);
}

// The rows of the seeds by purpose (init_seed, weights_seed, noise_seed): the text "seed"
// (also what a file written before they existed implies) unsets one, which then follows
// `seed`; the record is the seed the draw uses, so a rerun of any run draws the same.
template <std::optional<std::uint64_t> run_config::*Member, const char* Flag> struct purpose_seed {
    static void assign(run_config& c, std::string_view t) {
        c.*Member = t == "seed" ? std::nullopt : std::optional(parse_seed(t, Flag));
    }
    static parameter_value record(const run_config& c) {
        return static_cast<std::int64_t>((c.*Member).value_or(c.seed));
    }
};
constexpr char init_seed_flag[] = "init-seed";
constexpr char weights_seed_flag[] = "weights-seed";
constexpr char noise_seed_flag[] = "noise-seed";
using init_seed_row = purpose_seed<&run_config::init_seed, init_seed_flag>;
using weights_seed_row = purpose_seed<&run_config::weights_seed, weights_seed_flag>;
using noise_seed_row = purpose_seed<&run_config::noise_seed, noise_seed_flag>;

// --frame-times: "none", a comma-separated list of times, or linspace:A,B,N / logspace:A,B,N
// (the sweep axes' generators); sorted, without repeats.
std::vector<double> parse_frame_times(std::string_view text) {
    std::vector<double> times;
    if (text == "none") return times;
    std::vector<std::string_view> items;
    std::string_view list = text;
    std::string_view generator;
    for (const std::string_view g : {"linspace", "logspace"})
        if (text.starts_with(g) && text.substr(g.size()).starts_with(":")) {
            generator = g;
            list = text.substr(g.size() + 1);
        }
    for (std::size_t start = 0;;) {
        const std::size_t comma = list.find(',', start);
        items.push_back(
            list.substr(start, comma == std::string_view::npos ? comma : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    if (!generator.empty()) {
        require(items.size() == 3, "frame-times = " + quoted(text) + ": " + std::string(generator) +
                                       " takes first,last,count (e.g. " + std::string(generator) +
                                       ":0,5,11)");
        const double first = parse_number(items[0], "frame-times' first value");
        const double last = parse_number(items[1], "frame-times' last value");
        const std::int64_t count = parse_integer(items[2], "frame-times' count");
        try {
            times = spaced_values(generator, first, last, count);
        } catch (const input_error& e) {
            throw input_error("frame-times = " + quoted(text) + ": " + e.what());
        }
    } else {
        for (const std::string_view item : items)
            times.push_back(parse_number(item, "frame-times (none, a list 0.5,1,2.5, "
                                               "linspace:A,B,N or logspace:A,B,N)"));
    }
    for (const double t : times)
        require(std::isfinite(t),
                "frame-times = " + quoted(text) + " holds " + show(t) + ", not a finite time");
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    return times;
}

std::string frame_times_text(const std::vector<double>& times) {
    std::string text;
    for (const double t : times) {
        if (!text.empty()) text.push_back(',');
        // The shortest text that reads back to t (0.1, not 0.10000000000000001), appended
        // piecewise: GCC 12 warns (-Wrestrict) on "" + string.
        char buffer[32];
        const auto written = std::to_chars(buffer, buffer + sizeof buffer, t);
        text.append(buffer, written.ptr);
    }
    return text.empty() ? "none" : text;
}

void check_frame_times(const run_config& c) {
    const integration_settings& s = c.integration;
    if (s.frame_times.empty()) return;
    require(s.every == 0, "frame-times and every cannot be combined (frames are either at the "
                          "chosen times or every K steps); drop one of them");
    require(s.frame_times.front() >= 0.0 && s.frame_times.back() <= s.T,
            "frame-times must lie in [0, T] = [0, " + show(s.T) + "], got " +
                show(s.frame_times.front() < 0.0 ? s.frame_times.front() : s.frame_times.back()));
    if (s.kind != integrator_kind::layers) return;
    for (const double t : s.frame_times) {
        const grid_position p = locate_on_grid(t, s.dt);
        require(!p.between, "frame time " + show(t) + " is not a whole number of layers of h = " +
                                show(s.dt) + " (integrator layers); the nearest valid times are " +
                                show(static_cast<double>(p.index) * s.dt) + " and " +
                                show(static_cast<double>(p.index + 1) * s.dt));
    }
}

// Each row's functions are captureless lambdas: the table is plain data.
const std::array registry{
    parameter_spec{
        .name = "scheme",
        .flag = "--scheme",
        .type = value_type::name,
        .help = "Normalisation scheme (the speed regulator)",
        .description =
            "normalisation scheme: the transformer layer whose continuous-depth limit is "
            "integrated (docs/model.md section 2)",
        .assign = [](run_config& c, std::string_view t) { c.scheme_id = parse_scheme(t); },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(info(c.scheme_id).name);
        }},
    parameter_spec{
        .name = "n",
        .flag = "--n",
        .type = value_type::integer,
        .help = "Number of tokens (>= 1)",
        .description = "number of tokens (particles)",
        .assign = [](run_config& c, std::string_view t) { c.n = positive_size(t, "n", 1); },
        .record = [](const run_config& c) -> parameter_value { return integer(c.n); },
        .check =
            [](const run_config& c) {
                require(c.n >= 1,
                        "n must be at least 1 (number of tokens), got " + std::to_string(c.n));
            }},
    parameter_spec{
        .name = "d",
        .flag = "--d",
        .type = value_type::integer,
        .help = "Dimension (>= 2); tokens live on S^{d-1}",
        .description = "dimension of the token space; directions live on the sphere S^{d-1}",
        .assign = [](run_config& c, std::string_view t) { c.d = positive_size(t, "d", 2); },
        .record = [](const run_config& c) -> parameter_value { return integer(c.d); },
        .check =
            [](const run_config& c) {
                require(c.d >= 2, "d must be at least 2 (dimension of the sphere S^{d-1}), got " +
                                      std::to_string(c.d));
            }},
    parameter_spec{
        .name = "beta",
        .flag = "--beta",
        .type = value_type::number,
        .help = "Inverse temperature of the softmax",
        .description = "inverse temperature of the softmax: logits are beta <Q theta_k, K theta_j>",
        .assign = [](run_config& c, std::string_view t) { c.beta = parse_number(t, "beta"); },
        .record = [](const run_config& c) -> parameter_value { return c.beta; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.beta), "beta must be a finite number, got " + show(c.beta));
            }},
    parameter_spec{
        .name = "beta_log_n",
        .flag = "--beta-log-n",
        .type = value_type::switch_,
        .help = "Logits scaled by beta log n (beta is then gamma of beta_n = gamma log n)",
        .description =
            "long-context attention scaling: the logits use beta log n instead of beta (1), so "
            "that beta is the gamma of beta_n = gamma log n (docs/model.md section 14), or beta "
            "itself (0)",
        .switch_sets = "1",
        .legacy = "0",
        .assign = [](run_config& c,
                     std::string_view t) { c.beta_log_n = parse_switch(t, "beta-log-n"); },
        .record = [](const run_config& c) -> parameter_value {
            return std::int64_t{c.beta_log_n ? 1 : 0};
        }},
    parameter_spec{
        .name = "T",
        .flag = "--T",
        .type = value_type::number,
        .help = "Horizon (final time, continuous depth)",
        .description = "horizon: the final time (continuous depth; layers times the step h)",
        .unit = "time",
        .resumable = true,
        .assign = [](run_config& c, std::string_view t) { c.integration.T = parse_number(t, "T"); },
        .record = [](const run_config& c) -> parameter_value { return c.integration.T; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.integration.T) && c.integration.T >= 0.0,
                        "T must be a finite number >= 0, got " + show(c.integration.T));
            }},
    parameter_spec{
        .name = "dt",
        .flag = "--dt",
        .type = value_type::number,
        .help = "Step (fixed steppers, layers: h), initial step (dopri5)",
        .description =
            "step of the fixed-step integrators and of the layers (h); initial step of dopri5",
        .unit = "time",
        .assign = [](run_config& c,
                     std::string_view t) { c.integration.dt = parse_number(t, "dt"); },
        .record = [](const run_config& c) -> parameter_value { return c.integration.dt; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.integration.dt) && c.integration.dt > 0.0,
                        "dt must be a finite number > 0, got " + show(c.integration.dt));
                (void)step_count(c.integration.T, c.integration.dt); // throws past max_steps
            }},
    parameter_spec{
        .name = "integrator",
        .flag = "--integrator",
        .type = value_type::name,
        .help = "Integrator: rk4 | dopri5 | euler | layers",
        .description =
            "time integrator: rk4, dopri5 (adaptive), euler, or layers (the discrete transformer)",
        .assign = [](run_config& c,
                     std::string_view t) { c.integration.kind = parse_integrator(t); },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(to_string(c.integration.kind));
        }},
    parameter_spec{
        .name = "rtol",
        .flag = "--rtol",
        .type = value_type::number,
        .help = "Relative tolerance (dopri5)",
        .description = "relative tolerance of the adaptive integrator (dopri5)",
        .assign = [](run_config& c,
                     std::string_view t) { c.integration.rtol = parse_number(t, "rtol"); },
        .record = [](const run_config& c) -> parameter_value { return c.integration.rtol; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.integration.rtol) && c.integration.rtol > 0.0,
                        "rtol must be a finite number > 0, got " + show(c.integration.rtol));
            }},
    parameter_spec{
        .name = "atol",
        .flag = "--atol",
        .type = value_type::number,
        .help = "Absolute tolerance (dopri5)",
        .description = "absolute tolerance of the adaptive integrator (dopri5)",
        .assign = [](run_config& c,
                     std::string_view t) { c.integration.atol = parse_number(t, "atol"); },
        .record = [](const run_config& c) -> parameter_value { return c.integration.atol; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.integration.atol) && c.integration.atol >= 0.0,
                        "atol must be a finite number >= 0, got " + show(c.integration.atol));
            }},
    parameter_spec{
        .name = "init",
        .flag = "--init",
        .type = value_type::name,
        .help = "Initial directions: uniform | orthogonal | cap:EPS | caps:K,EPS[,DELTA] | "
                "perturbed:K,EPS | vonmises:Q,KAPPA | noise:EPS[,KMAX] (d = 2) | file:PATH",
        .description =
            "initial directions: uniform on the sphere, orthogonal (theta_k = e_k; with norm "
            "layernorm the Helmert basis of the hyperplane sum_c x_c = 0), a cap of angular radius "
            "EPS around a random pole, K such caps around centres 90 or 180 degrees apart or "
            "(caps:K,EPS,DELTA) at pairwise angle DELTA, i.i.d. from the density solver's "
            "densities 1 + EPS G_K(x_d) (perturbed) or sum_j exp(KAPPA (<x, c_j> - 1)) at Q "
            "centres c_j (vonmises) or the circle's white noise of the seed (noise), or read from "
            "an HDF5 file (with norm layernorm: in that "
            "hyperplane; docs/model.md section 10)",
        .assign = [](run_config& c,
                     std::string_view t) { c.init = initial_spec::parse(std::string(t)); },
        .record = [](const run_config& c) -> parameter_value { return c.init.to_string(); },
        .check =
            [](const run_config& c) {
                require(c.init.kind != initial_kind::orthogonal || c.norm == norm_kind::layernorm ||
                            c.n <= c.d,
                        "init 'orthogonal' needs n <= d (theta_k = e_k), got n = " +
                            std::to_string(c.n) + ", d = " + std::to_string(c.d));
                // docs/model.md §10: the Helmert basis of the hyperplane has d - 1 vectors.
                require(c.init.kind != initial_kind::orthogonal || c.norm != norm_kind::layernorm ||
                            c.n + 1 <= c.d,
                        "init 'orthogonal' with norm layernorm needs n <= d - 1 (the Helmert basis "
                        "of the hyperplane sum_c x_c = 0), got n = " +
                            std::to_string(c.n) + ", d = " + std::to_string(c.d));
                if (c.norm == norm_kind::layernorm &&
                    (c.init.kind == initial_kind::perturbed ||
                     c.init.kind == initial_kind::vonmises || c.init.kind == initial_kind::noise))
                    throw input_error(layernorm_density_start_refusal(c.init));
                require(c.init.kind != initial_kind::noise || c.d == 2,
                        "init '" + c.init.to_string() +
                            "': the noise start of particles is the circle's (d = 2), got d = " +
                            std::to_string(c.d) + "; on S^{d-1} take perturbed or vonmises");
            }},
    parameter_spec{
        .name = "weights",
        .flag = "--weights",
        .type = value_type::name,
        .help = "Attention weights: identity | gaussian | orthogonal | gpt2 | symmetric | "
                "interaction-product | interaction-symmetric | interaction-gpt2 (B = Q^T K drawn "
                "itself), each also NAME-per-layer (redrawn every layer); random (= gaussian), "
                "random-per-layer, file:PATH (datasets Q, K, V: d x d or H x d x d)",
        .description =
            "attention weights Q, K (and V with value = same): identity, gaussian (variance 1/d; "
            "random is its old name), orthogonal (Haar), gpt2 (variance 0.02^2), symmetric "
            "(K = Q gaussian); or the interaction matrix B = Q^T K itself (Q = I, K = B, V = I "
            "with value = same): interaction-product (B = G1 G2 / sqrt(d)), interaction-symmetric "
            "(B = (G + G^T) / sqrt(2)), interaction-gpt2 (variance 0.02^2); drawn from the "
            "weights' seed per head; NAME-per-layer redraws every layer (docs/model.md section 7); "
            "or read from an HDF5 file",
        .assign =
            [](run_config& c, std::string_view t) {
                weights_spec parsed = weights_spec::parse(std::string(t));
                parsed.heads = c.weights.heads;
                parsed.value = c.weights.value;
                c.weights = std::move(parsed);
            },
        .record = [](const run_config& c) -> parameter_value { return c.weights.to_string(); }},
    parameter_spec{
        .name = "layer_time",
        .flag = "--layer-time",
        .type = value_type::number,
        .help = "Per-layer weights and norm noise: each draw holds for this time tau (default: 1; "
                "layers: dt, a draw per layer)",
        .description =
            "per-layer weights and norm noise: the draw of layer l holds on [l tau, (l+1) tau) "
            "with tau = layer_time; rk4, euler and dopri5 end a step on each redraw, the layers "
            "integrator redraws at the first layer starting in each interval (tau = 10 dt: every "
            "10 layers); default 1, and dt (a draw per layer) for the layers integrator",
        .unit = "time",
        .legacy = "1",
        .assign =
            [](run_config& c, std::string_view t) {
                const double value = parse_number(t, "layer-time");
                require(std::isfinite(value) && value > 0.0,
                        "layer-time must be a finite number > 0, got " + std::string(t));
                c.integration.layer_time = value;
            },
        .record = [](const run_config& c) -> parameter_value {
            return redraw_period(c.resolved_integration());
        },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.integration.layer_time) && c.integration.layer_time >= 0.0,
                        "layer-time must be a finite number > 0, got " +
                            show(c.integration.layer_time));
                // Each redraw is a step boundary and a random stream of its own (below 2^40):
                // T / tau redraws are steps, bounded like T / dt.
                const double tau = redraw_period(c.resolved_integration());
                if ((c.weights.per_layer || c.norm_noise > 0.0) && tau > 0.0)
                    require(c.integration.T / tau < static_cast<double>(max_steps),
                            "T / layer-time is too large (" + show_count(c.integration.T / tau) +
                                " layers of weights; a run draws fewer than 2^40)");
            }},
    parameter_spec{
        .name = "heads",
        .flag = "--heads",
        .type = value_type::integer,
        .help = "Attention heads H (>= 1), each its own Q, K, V",
        .description =
            "number of attention heads; each head has its own Q, K, V (docs/model.md section 7)",
        .legacy = "1",
        .assign =
            [](run_config& c, std::string_view t) {
                const std::int64_t value = parse_integer(t, "heads");
                require(value >= 1 && value < (std::int64_t{1} << 20),
                        "heads must be a whole number from 1 to 2^20 - 1, got " + std::string(t));
                c.weights.heads = static_cast<std::size_t>(value);
            },
        .record = [](const run_config& c) -> parameter_value { return integer(c.weights.heads); },
        .check =
            [](const run_config& c) {
                require(c.weights.heads >= 1 && c.weights.heads < (std::size_t{1} << 20),
                        "heads must be a whole number from 1 to 2^20 - 1, got " +
                            std::to_string(c.weights.heads));
            }},
    parameter_spec{
        .name = "head_combine",
        .flag = "--head-combine",
        .type = value_type::name,
        .help = "How the heads' outputs combine: mean | sum",
        .description = "how the heads' attention outputs combine: their mean (one head: unchanged) "
                       "or their sum",
        .legacy = "mean",
        .assign = [](run_config& c, std::string_view t) { c.combine = parse_head_combine(t); },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(to_string(c.combine));
        }},
    parameter_spec{
        .name = "value",
        .flag = "--value",
        .type = value_type::name,
        .help = "Value matrix V: same (as --weights) | identity | minus-identity | gaussian | "
                "orthogonal | gpt2 | qk (Q^T K / ‖Q^T K‖_2) | minus-qk | interaction ((Q^T K)^T / "
                "sqrt(d)) | minus-interaction",
        .description =
            "family of the value matrix V of each head: same as the weights, identity, "
            "minus-identity, gaussian, orthogonal, gpt2, or tied to the head's query-key matrix "
            "(qk: V = Q^T K / ‖Q^T K‖_2; minus-qk: its negative; interaction: V = B^T / sqrt(d) "
            "with B = Q^T K, the peers' V = B / sqrt(d) for tokens as rows; minus-interaction: "
            "its negative)",
        .legacy = "same",
        .assign = [](run_config& c,
                     std::string_view t) { c.weights.value = parse_value_family(t); },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(to_string(c.weights.value));
        }},
    parameter_spec{
        .name = "qkv_norm",
        .flag = "--qkv-norm",
        .type = value_type::switch_,
        .help = "QKV-Norm: normalise q, k and v per token and head after the linear maps",
        .description = "QKV-Norm: each head's q_k = Q y_k / |Q y_k|, key_j = K y_j / |K y_j| and "
                       "v_j = V y_j / |V y_j| before the softmax (1), or the plain maps (0) "
                       "(docs/model.md section 11)",
        .switch_sets = "1",
        .legacy = "0",
        .assign = [](run_config& c,
                     std::string_view t) { c.qkv_norm = parse_switch(t, "qkv-norm"); },
        .record = [](const run_config& c) -> parameter_value {
            return std::int64_t{c.qkv_norm ? 1 : 0};
        },
        .check =
            [](const run_config& c) {
                require(!(c.qkv_norm && c.observes("unselectable")),
                        "observe unselectable reads the keys K y_j without QKV-Norm; drop "
                        "--qkv-norm or --observe unselectable");
                require(!(c.qkv_norm && c.observes("log_energy")),
                        "observe log_energy is the energy of the plain logits <Q y_i, K y_j>, "
                        "not QKV-Norm's; drop --qkv-norm or --observe log_energy");
            }},
    parameter_spec{
        .name = "norm_noise",
        .flag = "--norm-noise",
        .type = value_type::number,
        .help =
            "Noise on the norms: q, k, v norms times 1 + SIGMA xi, xi ~ N(0, 1) per token, head "
            "and layer (layer-time interval)",
        .description =
            "noise on the norms: the norms of each head's q_k, key_k and v_k are multiplied by "
            "1 + norm_noise xi, xi standard normal, independent per token, head and layer (per "
            "layer-time interval with rk4, euler, dopri5), drawn from the seed (docs/model.md "
            "section 11); 0: no noise",
        .legacy = "0",
        .assign = [](run_config& c,
                     std::string_view t) { c.norm_noise = parse_number(t, "norm-noise"); },
        .record = [](const run_config& c) -> parameter_value { return c.norm_noise; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.norm_noise) && c.norm_noise >= 0.0,
                        "norm-noise must be a finite number >= 0 (0: no noise), got " +
                            show(c.norm_noise));
                require(!(c.norm_noise > 0.0 && c.observes("unselectable")),
                        "observe unselectable reads the keys K y_j without norm noise; drop "
                        "--norm-noise or --observe unselectable");
                require(!(c.norm_noise > 0.0 && c.observes("log_energy")),
                        "observe log_energy is the energy of the noiseless logits <Q y_i, K y_j>; "
                        "drop --norm-noise or --observe log_energy");
            }},
    parameter_spec{
        .name = "seed",
        .flag = "--seed",
        .type = value_type::integer,
        .help = "Seed of every random draw (start, weights, noise) not given its own",
        .description =
            "seed of the random initial directions and weights (each draw has its own stream)",
        .assign = [](run_config& c, std::string_view t) { c.seed = parse_seed(t, "seed"); },
        .record = [](const run_config& c) -> parameter_value {
            return static_cast<std::int64_t>(c.seed);
        },
        .check =
            [](const run_config& c) {
                require(
                    c.seed < (std::uint64_t{1} << 63),
                    "seed must be below 2^63 (it is stored as a signed 64-bit attribute), got " +
                        std::to_string(c.seed));
            }},
    parameter_spec{.name = "init_seed",
                   .flag = "--init-seed",
                   .type = value_type::integer,
                   .help = "Seed of the initial condition (default: --seed)",
                   .description =
                       "seed of the random initial directions (set apart from seed: init_seed)",
                   .legacy = "seed",
                   .assign = init_seed_row::assign,
                   .record = init_seed_row::record},
    parameter_spec{.name = "weights_seed",
                   .flag = "--weights-seed",
                   .type = value_type::integer,
                   .help = "Seed of the random weights, every layer's and head's (default: --seed)",
                   .description =
                       "seed of the random weights Q, K, V (every head, every layer's redraw)",
                   .legacy = "seed",
                   .assign = weights_seed_row::assign,
                   .record = weights_seed_row::record},
    parameter_spec{.name = "noise_seed",
                   .flag = "--noise-seed",
                   .type = value_type::integer,
                   .help = "Seed of the norm noise (--norm-noise; default: --seed)",
                   .description = "seed of the noise on the norms of q, k, v (norm_noise)",
                   .legacy = "seed",
                   .assign = noise_seed_row::assign,
                   .record = noise_seed_row::record},
    parameter_spec{
        .name = "r0",
        .flag = "--r0",
        .type = value_type::number,
        .help = "Initial magnitude of every token",
        .description = "initial magnitude r_k(0) of every token",
        .assign = [](run_config& c, std::string_view t) { c.r0 = parse_number(t, "r0"); },
        .record = [](const run_config& c) -> parameter_value { return c.r0; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.r0) && c.r0 > 0.0,
                        "r0 must be a finite number > 0, got " + show(c.r0));
            }},
    parameter_spec{
        .name = "alpha",
        .flag = "--alpha",
        .type = value_type::number,
        .help = "nGPT step alpha",
        .description = "nGPT step size alpha (speed divisor ‖A_k‖ / alpha)",
        .assign = [](run_config& c, std::string_view t) { c.alpha = parse_number(t, "alpha"); },
        .record = [](const run_config& c) -> parameter_value { return c.alpha; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.alpha) && c.alpha > 0.0,
                        "alpha must be a finite number > 0, got " + show(c.alpha));
            }},
    parameter_spec{
        .name = "ngpt_layer",
        .flag = "--ngpt-layer",
        .type = value_type::name,
        .help = "ngpt's discrete layer (integrator layers): interpolate (nGPT: theta + h alpha "
                "(A/|A| - "
                "theta)) | add (theta + h alpha A/|A|, as simuformer); the ODE is the same",
        .description =
            "ngpt's discrete layer before LN: interpolate, nGPT's theta + h alpha (A/|A| - theta); "
            "add, theta + h alpha A/|A| (simuformer's); add with alpha equals interpolate with "
            "alpha / (1 + h alpha); the ODE integrators do not depend on it",
        .legacy = "interpolate",
        .assign = [](run_config& c, std::string_view t) { c.ngpt_step = parse_ngpt_layer(t); },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(to_string(c.ngpt_step));
        }},
    parameter_spec{
        .name = "t_switch",
        .flag = "--t-switch",
        .type = value_type::number,
        .help = "mix-ln switch time (default 0.25 T)",
        .description = "mix-ln: time of the switch from post-ln to pre-ln (default 0.25 T)",
        .unit = "time",
        .assign = [](run_config& c,
                     std::string_view t) { c.t_switch = parse_number(t, "t-switch"); },
        .record = [](const run_config& c) -> parameter_value { return c.switch_time(); },
        .check =
            [](const run_config& c) {
                if (c.t_switch)
                    require(std::isfinite(*c.t_switch) && *c.t_switch >= 0.0,
                            "t-switch must be a finite number >= 0, got " + show(*c.t_switch));
            }},
    parameter_spec{
        .name = "causal",
        .flag = "--causal",
        .type = value_type::switch_,
        .help = "Causal mask: token k attends to j <= k",
        .description =
            "causal mask: token k attends only to tokens j <= k (1) or to all tokens (0)",
        .switch_sets = "1",
        .assign = [](run_config& c, std::string_view t) { c.causal = parse_switch(t, "causal"); },
        .record = [](const run_config& c) -> parameter_value {
            return std::int64_t{c.causal ? 1 : 0};
        }},
    parameter_spec{
        .name = "precision",
        .flag = "--precision",
        .type = value_type::name,
        .help = "Arithmetic of the attention kernel: double | float (float: about beta * 1e-7 "
                "relative error in A, faster for large n and for n <= 128)",
        .description =
            "arithmetic of the attention kernel: double or float (state and integrator stay "
            "double)",
        .legacy = "double",
        .assign = [](run_config& c, std::string_view t) { c.arithmetic = parse_precision(t); },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(to_string(c.arithmetic));
        }},
    parameter_spec{
        .name = "attention",
        .flag = "--attention",
        .type = value_type::name,
        .help = "Attention weights: softmax | unnormalized (exp(beta <q_k, key_j>) / n, no softmax "
                "denominator; an overflow stops the run with exit 1)",
        .description =
            "normalisation of the attention weights: softmax (divided by the row's sum) or "
            "unnormalized (exp(beta <q_k, key_j>) / n, docs/model.md section 8)",
        .legacy = "softmax",
        .assign = [](run_config& c, std::string_view t) { c.attention = parse_attention_kind(t); },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(to_string(c.attention));
        }},
    parameter_spec{
        .name = "norm",
        .flag = "--norm",
        .type = value_type::name,
        .help =
            "Normalisation map LN: rms (x / ‖x‖, directions on S^{d-1}) | layernorm (centre, then "
            "scale: directions on the sphere of the hyperplane sum_c x_c = 0; needs d >= 3)",
        .description =
            "normalisation map LN of the layers: rms (LN(x) = x / ‖x‖, directions on the sphere) "
            "or layernorm (LN(x) = Pi x / ‖Pi x‖ with Pi x = x - mean(x) 1: directions on the "
            "sphere of the hyperplane sum_c x_c = 0, attention output centred; docs/model.md "
            "section 10)",
        .legacy = "rms",
        .assign = [](run_config& c, std::string_view t) { c.norm = parse_norm(t); },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(to_string(c.norm));
        },
        .check =
            [](const run_config& c) {
                if (c.norm != norm_kind::layernorm) return;
                require(c.d >= 3, "norm layernorm needs d >= 3 (the directions live on the "
                                  "(d-2)-sphere of the hyperplane sum_c x_c = 0), got d = " +
                                      std::to_string(c.d));
                require(c.scheme_id != scheme::no_norm,
                        "scheme 'no-norm' cannot run with norm layernorm: it has no normalisation, "
                        "so there is nothing to centre; use --norm rms");
            }},
    parameter_spec{
        .name = "ln_params",
        .flag = "--ln-params",
        .type = value_type::name,
        .help =
            "LayerNorm gain and bias (needs --norm layernorm): none | file:PATH (datasets gain, "
            "bias, each d numbers; attention reads gain ⊙ theta_k + bias)",
        .description =
            "layernorm's gain a and bias b: none (a = 1, b = 0) or read from an HDF5 file "
            "(datasets gain and bias, each of length d; recorded as /parameters/gain and "
            "/parameters/bias); attention reads a ⊙ theta_k + b (docs/model.md section 10)",
        .legacy = "none",
        .assign =
            [](run_config& c, std::string_view t) {
                if (t == "none") {
                    c.ln_params.clear();
                    return;
                }
                require(t.rfind("file:", 0) == 0 && t.size() > 5,
                        "unknown ln-params " + quoted(t) + "; valid choices: none, file:PATH");
                c.ln_params = std::string(t.substr(5));
            },
        .record = [](const run_config& c) -> parameter_value {
            return c.ln_params.empty() ? std::string("none") : "file:" + c.ln_params;
        },
        .check =
            [](const run_config& c) {
                require(c.ln_params.empty() || c.norm == norm_kind::layernorm,
                        "ln-params needs --norm layernorm (a gain and bias of the centred "
                        "directions), got norm = " +
                            std::string(to_string(c.norm)));
            }},
    parameter_spec{
        .name = "every",
        .flag = "--every",
        .type = value_type::integer,
        .help = "Write a frame every K steps (default: about 100 frames; not with --frame-times)",
        .description =
            "frame interval: a frame is written every `every` steps (dopri5: every `every` * dt "
            "in time); 0 when the frames are at frame_times",
        .sweepable = false,
        .assign =
            [](run_config& c, std::string_view t) {
                const std::int64_t value = parse_integer(t, "every");
                require(value >= 1,
                        "every must be at least 1 (omit it for about 100 frames), got " +
                            std::string(t));
                c.integration.every = value;
            },
        .record = // 0: the frames are at frame_times (from_parameters reads it back as unset).
        [](const run_config& c) -> parameter_value {
            return c.integration.frame_times.empty() ? c.frame_interval() : std::int64_t{0};
        },
        .check =
            [](const run_config& c) {
                require(c.integration.every >= 0,
                        "every must be >= 1 (or 0 for about 100 frames), got " +
                            std::to_string(c.integration.every));
            }},
    parameter_spec{
        .name = "frame_times",
        .flag = "--frame-times",
        .type = value_type::name,
        .help = "Frames at chosen times instead of --every: a list 0.5,1,2.5 or linspace:A,B,N or "
                "logspace:A,B,N (10^A .. 10^B), in [0, T]; frames at 0 and T are kept",
        .description =
            "chosen frame times (none: a frame every `every` steps): frames are written at t = 0, "
            "at each of these times and at T; the fixed-step integrators shorten the step before "
            "a time off their grid so that it ends there, dopri5 ends a step on each, and with "
            "layers each must be a whole number of layers",
        .unit = "time",
        .sweepable = false,
        .legacy = "none",
        .assign = [](run_config& c,
                     std::string_view t) { c.integration.frame_times = parse_frame_times(t); },
        .record = [](const run_config& c) -> parameter_value {
            return frame_times_text(c.integration.frame_times);
        },
        .check = check_frame_times},
    parameter_spec{
        .name = "positions",
        .flag = "--positions",
        .type = value_type::name,
        .help = "all | none (none: magnitudes and observables only, for large n)",
        .description =
            "which frames carry the positions theta_k: all, or none (observables and magnitudes "
            "only)",
        .sweepable = false,
        .assign =
            [](run_config& c, std::string_view t) {
                require(t == "all" || t == "none",
                        "unknown positions " + quoted(t) + "; valid choices: all, none");
                c.positions = t == "all";
            },
        .record = [](const run_config& c) -> parameter_value {
            return std::string(c.positions ? "all" : "none");
        }},
    parameter_spec{
        .name = "compress",
        .flag = "--compress",
        .type = value_type::switch_,
        .help = "Deflate + shuffle the positions (slower writes)",
        .description =
            "positions stored with deflate + shuffle compression (1) or uncompressed (0)",
        .switch_sets = "1",
        .sweepable = false,
        .assign = [](run_config& c,
                     std::string_view t) { c.compress = parse_switch(t, "compress"); },
        .record = [](const run_config& c) -> parameter_value {
            return std::int64_t{c.compress ? 1 : 0};
        }},
    parameter_spec{
        .name = "swmr",
        .flag = "--no-swmr",
        .type = value_type::switch_,
        .help = "Write without HDF5's single-writer/multiple-reader mode (for file systems without "
                "the locking it needs; the file then uses the HDF5 1.8 format)",
        .description =
            "written in HDF5's single-writer/multiple-reader mode, readable while it grows (1), "
            "or not (0)",
        .switch_sets = "0",
        .resumable = true,
        .sweepable = false,
        .legacy = "0",
        .assign = [](run_config& c, std::string_view t) { c.swmr = parse_switch(t, "swmr"); },
        .record = [](const run_config& c) -> parameter_value {
            return std::int64_t{c.swmr ? 1 : 0};
        }},
    parameter_spec{
        .name = "cluster_eps",
        .flag = "--cluster-eps",
        .type = value_type::number,
        .help = "Tokens with cosine >= 1 - eps are in one cluster (single linkage)",
        .description =
            "clusters observable: tokens whose cosine is >= 1 - cluster_eps are linked (single "
            "linkage)",
        .assign = [](run_config& c,
                     std::string_view t) { c.cluster_eps = parse_number(t, "cluster-eps"); },
        .record = [](const run_config& c) -> parameter_value { return c.cluster_eps; },
        .check =
            [](const run_config& c) {
                require(std::isfinite(c.cluster_eps) && c.cluster_eps > 0.0 && c.cluster_eps <= 2.0,
                        "cluster-eps must be in (0, 2], got " + show(c.cluster_eps));
            }},
    parameter_spec{
        .name = "observe",
        .flag = "--observe",
        .type = value_type::name,
        .help = observe_help_text(),
        .description =
            "optional observables computed at every frame besides the standard ones (none, or a "
            "comma-separated list: unselectable = fraction of keys in the convex hull of the "
            "other keys, docs/model.md section 12; pair_change = mean change of the pairwise "
            "cosines and angle = mean angle a token moved since the previous recorded frame, "
            "docs/model.md section 5; log_energy = the interaction energy E as (1/beta) log of the "
            "mean of exp(beta <Q y_i, K y_j>), docs/model.md section 5.1 (energy: its older name); "
            "effective_rank = exp of the "
            "entropy of the normalised singular values of the directions; pair_density = fraction "
            "of pairs with cosine >= 1 - cluster_eps; modes = the spectral modes m_1 .. m_K of the "
            "empirical measure)",
        .sweepable = false,
        .legacy = "none",
        .assign = [](run_config& c, std::string_view t) { c.observe = parse_observables(t); },
        .record = [](const run_config& c) -> parameter_value {
            return observables_text(c.observe);
        }},
    parameter_spec{
        .name = "observables",
        .flag = "--observables",
        .type = value_type::name,
        .help = "Standard observables computed and recorded at frames, comma-separated names of "
                "the table in docs/file-format.md | all | none (step_size is always recorded; "
                "--observe adds optional ones)",
        .description =
            "standard observables computed and recorded at every frame (all, none, or a "
            "comma-separated list of mean_cos, gap, velocity, variance, displacement, r_mean, "
            "r_min, r_max, min_cos, clusters, norm_error, step_size, step_error, argmax_flips, "
            "attention_entropy); step_size is recorded whatever the choice (resume continues from "
            "it). A frame costs what it records: min_cos and clusters need a Gram pass (O(n^2 d)), "
            "argmax_flips and attention_entropy an attention pass (O(H n^2 d)), step_error three "
            "steps every 20 steps (and its warning); the others O(n d). Without clusters the file "
            "has no cluster history and no /plateaus",
        .sweepable = false,
        .legacy = "all",
        .assign = [](run_config& c,
                     std::string_view t) { c.observables = parse_standard_observables(t); },
        .record = [](const run_config& c) -> parameter_value {
            return standard_observables_text(c.observables);
        }},
    parameter_spec{
        .name = // Not named `modes`: a sweep over it would be an axis dataset /modes beside the
                // observable's /modes.
        "mode_count",
        .flag = "--mode-count",
        .type = value_type::integer,
        .help = "Number K of spectral modes m_1 .. m_K (--observe modes; 1 to 1024)",
        .description =
            "number K of spectral modes m_k, k = 1..K, that the optional observable modes records "
            "per frame (docs/model.md section 5)",
        .legacy = "8",
        .assign =
            [](run_config& c, std::string_view t) {
                const std::int64_t value = parse_integer(t, "mode-count");
                require(value >= 1 && value <= max_modes,
                        "mode-count must be in 1.." + std::to_string(max_modes) +
                            " (the number K of spectral modes), got " + std::string(t));
                c.modes = static_cast<std::size_t>(value);
            },
        .record = [](const run_config& c) -> parameter_value { return integer(c.modes); },
        .check =
            [](const run_config& c) {
                require(c.modes >= 1 && c.modes <= std::size_t{max_modes},
                        "mode-count must be in 1.." + std::to_string(max_modes) +
                            " (the number K of spectral modes), got " + std::to_string(c.modes));
            }},
    parameter_spec{
        .name = "plateau_min",
        .flag = "--plateau-min",
        .type = value_type::name,
        .help = "Least length of a metastable plateau of the cluster count: a time (2.5) or a "
                "percentage of T (5%)",
        .description =
            "least length of a metastable plateau (a maximal stretch of frames with one cluster "
            "count; the table /plateaus and the sweep's plateau_length, plateau_clusters): a time, "
            "or a percentage of the horizon T when it ends in % (docs/model.md section 5.3)",
        .legacy = "5%",
        .assign = [](run_config& c,
                     std::string_view t) { c.plateau_min = plateau_threshold::parse(t); },
        .record = [](const run_config& c) -> parameter_value { return c.plateau_min.to_string(); },
        .check =
            [](const run_config& c) {
                // Re-parsing the recorded text checks a value set in code as the flag's would be.
                (void)plateau_threshold::parse(c.plateau_min.to_string());
            }},
    parameter_spec{
        .name = "threads",
        .flag = "--threads",
        .type = value_type::integer,
        .help = "OpenMP threads of the run (0: all cores)",
        .description =
            "OpenMP threads the run asked for (0: all cores); results do not depend on it",
        .resumable = true,
        .sweepable = false,
        .assign =
            [](run_config& c, std::string_view t) {
                const std::int64_t value = parse_integer(t, "threads");
                require(value >= 0, "threads must be >= 0 (0: all cores), got " + std::string(t));
                require(value <= 4096, "threads = " + std::string(t) +
                                           " is out of range (0: all cores, at most 4096)");
                c.threads = static_cast<int>(value);
            },
        .record = [](const run_config& c) -> parameter_value { return std::int64_t{c.threads}; },
        .check =
            [](const run_config& c) {
                require(c.threads >= 0,
                        "threads must be >= 0 (0: all cores), got " + std::to_string(c.threads));
            }},
    parameter_spec{
        .name = "block",
        .flag = "--block",
        .type = value_type::integer,
        .help = "Query rows per attention block, 1 to n (0: chosen from n; results depend on it "
                "in the last bits)",
        .description = "query rows per block of the attention kernel, 1 to n (0: chosen from n)",
        .sweepable = false,
        .legacy = "0",
        .assign = [](run_config& c, std::string_view t) { c.block = positive_size(t, "block", 0); },
        .record = [](const run_config& c) -> parameter_value { return integer(c.block); },
        .check =
            [](const run_config& c) {
                // A block is a block x n workspace of logits per thread: more rows than tokens
                // would only allocate memory no row uses.
                require(c.block <= c.n, "block must be between 1 and n = " + std::to_string(c.n) +
                                            " (query rows per attention block; 0 chooses it "
                                            "from n), got " +
                                            std::to_string(c.block));
            }},
};

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char& ch : out)
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    return out;
}

} // namespace

bool is_seed_parameter(std::string_view name) {
    return name == "seed" || name == "init_seed" || name == "weights_seed" || name == "noise_seed";
}

std::span<const parameter_spec> parameter_registry() {
    return registry;
}

const parameter_spec* find_parameter(std::string_view name) {
    for (const auto& spec : registry)
        if (spec.name == name) return &spec;
    return nullptr;
}

std::string parameter_names() {
    std::string names;
    for (const auto& spec : registry)
        names += (names.empty() ? "" : ", ") + std::string(spec.name);
    return names;
}

const parameter_spec& parameter(std::string_view name) {
    if (const parameter_spec* spec = find_parameter(name)) return *spec;
    throw input_error("unknown parameter " + quoted(name) +
                      "; valid parameters: " + parameter_names());
}

void assign_parameter(run_config& config, std::string_view name, std::string_view text) {
    parameter(name).assign(config, text);
}

std::string parameter_text(const run_config& config, const parameter_spec& spec) {
    return to_display_string(spec.record(config));
}

std::string default_text(const parameter_spec& spec) {
    const run_config defaults;
    // Defaults resolved from other parameters have no value of their own (the help says).
    if (spec.name == "t_switch" || spec.name == "every" ||
        (spec.name != "seed" && is_seed_parameter(spec.name)))
        return "";
    return parameter_text(defaults, spec);
}

void check_resume_agreement(const run_config& recorded, const run_config& given,
                            const std::vector<std::string>& given_names, const std::string& file) {
    for (const std::string& name : given_names) {
        const parameter_spec& spec = parameter(name);
        if (spec.name == "T") {
            require(std::isfinite(given.integration.T) &&
                        given.integration.T >= recorded.integration.T,
                    "T = " + show(given.integration.T) + " cannot shorten the run in '" + file +
                        "' (T = " + show(recorded.integration.T) + ")");
            continue;
        }
        if (spec.resumable) continue;
        const std::string want = parameter_text(given, spec);
        const std::string have = parameter_text(recorded, spec);
        require(want == have, std::string(spec.name) + " = " + want + " disagrees with '" + file +
                                  "', which was run with " + std::string(spec.name) + " = " + have +
                                  " (a resumed run may only extend T)");
    }
}

std::int64_t parse_integer(std::string_view text, std::string_view what) {
    std::int64_t value = 0;
    const char* last = text.data() + text.size();
    const auto [end, error] = std::from_chars(text.data(), last, value);
    if (error == std::errc::result_out_of_range)
        throw input_error(std::string(what) + " = " + quoted(text) + " is out of range");
    require(!text.empty() && error == std::errc() && end == last,
            std::string(what) + " = " + quoted(text) + " is not a whole number");
    return value;
}

double parse_number(std::string_view text, std::string_view what) {
    double value = 0.0;
    const char* first = text.data();
    const char* last = first + text.size();
    if (first != last && *first == '+') ++first; // from_chars refuses a leading '+'
    const auto [end, error] = std::from_chars(first, last, value);
    if (error == std::errc::result_out_of_range)
        throw input_error(std::string(what) + " = " + quoted(text) +
                          " is out of the range of a double");
    require(first != last && error == std::errc() && end == last,
            std::string(what) + " must be a number, got " + quoted(text));
    return value;
}

bool parse_switch(std::string_view text, std::string_view what) {
    const std::string t = lowercase(text);
    if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
    if (t == "0" || t == "false" || t == "no" || t == "off") return false;
    throw input_error(std::string(what) + " must be true or false (or 1, 0), got " + quoted(text));
}

} // namespace nadyn
