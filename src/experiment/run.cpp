#include "nadyn/experiment/run.hpp"

#include "experiment/frame_sink.hpp"
#include "files/sha256.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run_inputs.hpp"
#include "nadyn/files/input_files.hpp"
#include "nadyn/model/attention_observables.hpp"
#include "nadyn/model/detail/parallel.hpp"
#include "nadyn/model/detail/utc_now.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/version.hpp"

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <future>
#include <limits>
#include <new>
#include <system_error>
#include <unistd.h>

namespace nadyn {

namespace {

using detail::utc_now;

parameter_list statistics_of(const run_summary& s) {
    parameter_list stats;
    stats.set("rhs_evaluations", static_cast<std::int64_t>(s.statistics.rhs_evaluations));
    stats.set("accepted_steps", static_cast<std::int64_t>(s.statistics.accepted_steps));
    stats.set("rejected_steps", static_cast<std::int64_t>(s.statistics.rejected_steps));
    stats.set("wall_time_seconds", s.wall_seconds);
    stats.set("finished", utc_now());
    return stats;
}

std::string trimmed_number(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", value);
    return buffer;
}

} // namespace

std::string reserve_output_name(const run_config& c, const std::string& directory) {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &parts);
    // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on chains of + here.
    std::string file_stem(info(c.scheme_id).name);
    file_stem.append("_n").append(std::to_string(c.n)).append("_d").append(std::to_string(c.d));
    file_stem.append("_beta").append(trimmed_number(c.beta)).append("_").append(stamp);
    const std::string stem = (std::filesystem::path(directory) / file_stem).string();
    for (int counter = 1; counter < 100000; ++counter) {
        std::string name = stem;
        if (counter > 1) name.append("_").append(std::to_string(counter));
        name.append(".h5");
        const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            ::close(fd);
            return directory == "." && name.rfind("./", 0) == 0 ? name.substr(2) : name;
        }
        if (errno != EEXIST)
            throw input_error("cannot create an output file in '" + directory +
                              "': " + std::strerror(errno));
    }
    throw input_error("no free output name for '" + stem + ".h5'; pass --out");
}

namespace {

layer_norm_affine affine_of(const run_config& c) {
    return c.ln_params.empty() ? layer_norm_affine{} : read_layer_norm_affine(c.ln_params, c.d);
}

bool all_zero(const std::vector<double>& values) {
    return std::all_of(values.begin(), values.end(), [](double v) { return v == 0.0; });
}

// Whether layernorm's centring Pi leaves nothing of V b: (V b)_c all equal, to round-off.
bool centred_away(const matrix& V, const std::vector<double>& b) {
    const Eigen::Map<const Eigen::VectorXd> bias(b.data(), static_cast<Eigen::Index>(b.size()));
    const Eigen::VectorXd v = V.size() == 0 ? Eigen::VectorXd(bias) : Eigen::VectorXd(V * bias);
    const double largest = v.cwiseAbs().maxCoeff();
    return (v.array() - v.mean()).abs().maxCoeff() <= 1e-14 * largest;
}

// The schemes that divide by ‖A_k‖ (peri-ln, ngpt) cannot run when the parameters make the
// attention output zero for every state: every step would be 0 / 0. Refused before the run,
// rather than as a NaN "reduce --dt" cannot cure.
void refuse_zero_attention(const run_config& c, const attention_weights& weights,
                           const layer_norm_affine& affine) {
    const scheme_info& scheme = info(c.scheme_id);
    if (!scheme.uses_attention_norm || c.weights.per_layer) return; // later layers differ
    const std::string divides = std::string(scheme.name) + " divides by ‖A_k‖ (its speed " +
                                "divisor is " + std::string(scheme.speed) + ")";
    const bool zero_values =
        std::all_of(weights.heads.begin(), weights.heads.end(), [](const attention_head& h) {
            return h.V.size() != 0 && (h.V.array() == 0.0).all();
        });
    if (zero_values)
        throw input_error(std::string(scheme.name) +
                          " with V = 0: the attention output A_k (V times a weighted sum of the "
                          "tokens) is zero for every token, and " +
                          divides +
                          "; give a nonzero V or a scheme that does not normalise "
                          "A_k (post-ln, pre-ln, ...)");
    if (c.norm != norm_kind::layernorm || affine.gain.empty() || !all_zero(affine.gain)) return;
    // y_k = 0 theta_k + b = b for every token: A_k is a multiple of V b, whose centred part
    // is what the scheme normalises.
    const std::vector<double> bias =
        affine.bias.empty() ? std::vector<double>(c.d, 0.0) : affine.bias;
    const bool zero_output =
        std::all_of(weights.heads.begin(), weights.heads.end(),
                    [&](const attention_head& h) { return centred_away(h.V, bias); });
    if (zero_output)
        throw input_error(std::string(scheme.name) +
                          " with a zero LayerNorm gain: attention reads y_k = b for every token, "
                          "so A_k is a multiple of V b, which " +
                          (all_zero(bias) ? std::string("is zero (b = 0)")
                                          : std::string("layernorm's centring makes zero")) +
                          ", and " + divides + "; give --ln-params a nonzero gain");
}

} // namespace

void check_attention_output(const run_config& config, const attention_weights& weights,
                            const layer_norm_affine& affine) {
    refuse_zero_attention(config, weights, affine);
}

simulation::simulation(run_config config) : m_config(std::move(config)) {
    m_config.validate();
    try {
        read_input_files(m_config);
        m_weights = make_weights(m_config.weights, m_config.d, m_config.seed_for_weights(),
                                 m_config.weights.per_layer ? 0 : -1);
        m_affine = affine_of(m_config);
        set_start(make_initial(m_config.init, m_config.n, m_config.d, m_config.seed_for_init(),
                               m_config.r0, m_config.norm));
    } catch (const std::bad_alloc&) {
        throw out_of_memory(m_config.out_of_memory_message());
    }
    // Hashed after reading, so that a missing or malformed file gets the readers' message.
    for (const input_file& file : input_files(m_config))
        m_input_hashes.emplace_back(input_hash_name(file), input_file_sha256(file.path));
    check_attention_output(m_config, m_weights, m_affine);
}

simulation::simulation(run_config config, const initial_state& start, attention_weights weights)
    : simulation(config, start, std::move(weights), layer_norm_affine{}) {
    m_affine = affine_of(m_config);
    check_attention_output(m_config, m_weights, m_affine);
}

simulation::simulation(run_config config, const initial_state& start, attention_weights weights,
                       layer_norm_affine affine)
    : m_config(std::move(config)), m_weights(std::move(weights)), m_affine(std::move(affine)) {
    m_config.validate();
    const std::size_t d = m_config.d;
    if ((!m_affine.gain.empty() && m_affine.gain.size() != d) ||
        (!m_affine.bias.empty() && m_affine.bias.size() != d))
        throw input_error("layernorm gain and bias must have d = " + std::to_string(d) +
                          " entries each");
    if (!m_affine.identity() && m_config.norm != norm_kind::layernorm)
        throw input_error("a layernorm gain or bias needs --norm layernorm");
    if (start.theta.size() != m_config.n * m_config.d || start.r.size() != m_config.n)
        throw input_error("initial state of the wrong size for n = " + std::to_string(m_config.n) +
                          ", d = " + std::to_string(m_config.d));
    check_attention_output(m_config, m_weights, m_affine);
    set_start(start);
}

void simulation::set_start(const initial_state& start) {
    m_theta_initial = start.theta;
    m_r_initial = start.r;
    m_state.resize(state_size(m_config.n, m_config.d));
    std::copy(start.theta.begin(), start.theta.end(), m_state.begin());
    std::copy(start.r.begin(), start.r.end(),
              m_state.begin() + static_cast<std::ptrdiff_t>(m_config.n * m_config.d));
}

simulation simulation::from_file(const std::string& path) {
    const trajectory_reader file(path);
    run_config config = run_config::from_parameters(file.parameters());
    initial_state start;
    std::size_t rows = 0, cols = 0;
    auto theta0 = file.parameter_matrix("theta0", &rows, &cols);
    if (!theta0 || rows != config.n || cols != config.d)
        throw input_error("'" + path + "' lacks /parameters/theta0 (n x d)");
    start.theta = std::move(*theta0);
    auto r_initial = file.parameter_matrix("r_initial", &rows, &cols);
    if (!r_initial || rows * cols != config.n)
        throw input_error("'" + path + "' lacks /parameters/r_initial (n)");
    start.r = std::move(*r_initial);
    attention_weights weights;
    if (!config.weights.per_layer) {
        // The recorded matrices, not the generator or the original weights file (which may
        // have changed or gone): d x d for one head, H x d x d for H heads; an absent one is
        // the identity.
        weights.heads.assign(config.weights.heads, attention_head{});
        const std::size_t heads = config.weights.heads, d = config.d;
        for (const auto& [name, member] : {std::pair{"Q", &attention_head::Q},
                                           {"K", &attention_head::K},
                                           {"V", &attention_head::V}}) {
            std::size_t stack = 0;
            auto m = file.parameter_matrix(name, &rows, &cols, &stack);
            if (!m) continue;
            if (stack != (heads == 1 ? 0 : heads) || rows != heads * d || cols != d) {
                std::string shape =
                    heads == 1 ? std::string("d x d") : std::to_string(heads) + " x d x d";
                shape += " (d = " + std::to_string(d) + ")";
                throw input_error(std::string("'").append(path) + "': /parameters/" + name +
                                  " is not " + shape);
            }
            for (std::size_t h = 0; h < heads; ++h) {
                matrix& target = weights.heads[h].*member;
                target.resize(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
                std::copy(m->begin() + static_cast<std::ptrdiff_t>(h * d * d),
                          m->begin() + static_cast<std::ptrdiff_t>((h + 1) * d * d), target.data());
            }
        }
    } else {
        // Per-layer weights are regenerated from the seed, layer by layer.
        weights = make_weights(config.weights, config.d, config.seed_for_weights(), 0);
    }
    // Layernorm's gain and bias as recorded, not the --ln-params file (which may have changed
    // or gone).
    layer_norm_affine affine;
    if (!config.ln_params.empty()) {
        for (const auto& [name, member] :
             {std::pair{"gain", &layer_norm_affine::gain}, {"bias", &layer_norm_affine::bias}}) {
            auto m = file.parameter_matrix(name, &rows, &cols);
            if (!m) continue;
            if (rows * cols != config.d || (rows != 1 && cols != 1))
                throw input_error(std::string("'").append(path) + "': /parameters/" + name +
                                  " does not have d = " + std::to_string(config.d) + " entries");
            affine.*member = std::move(*m);
        }
        if (affine.identity())
            throw input_error("'" + path + "' was run with ln_params = file:" + config.ln_params +
                              " but lacks /parameters/gain and /parameters/bias");
    }
    std::vector<std::pair<std::string, std::string>> hashes;
    for (const input_file& input : input_files(config))
        if (auto recorded = file.parameters().text(input_hash_name(input)))
            hashes.emplace_back(input_hash_name(input), std::move(*recorded));
    simulation run(std::move(config), start, std::move(weights), std::move(affine));
    run.m_input_hashes = std::move(hashes);
    return run;
}

void simulation::check_inputs_unchanged(const std::string& path) const {
    for (const input_file& input : input_files(m_config)) {
        const auto recorded = std::find_if(
            m_input_hashes.begin(), m_input_hashes.end(),
            [name = input_hash_name(input)](const auto& h) { return h.first == name; });
        std::error_code missing;
        if (recorded == m_input_hashes.end() || !std::filesystem::exists(input.path, missing))
            continue;
        const std::string now = input_file_sha256(input.path);
        if (now != recorded->second)
            throw input_error(input.parameter + " file '" + input.path + "' changed since '" +
                              path + "' was started (SHA-256 " + now + ", recorded " +
                              recorded->second + "); restore it, or start a new run");
    }
}

std::string simulation::inputs_digest() const {
    detail::sha256 hash;
    // Piecewise: GCC 12 warns (-Wrestrict, a false positive) on "=" + string.
    const auto add_text = [&hash](std::string_view name, const std::string& value) {
        hash.update(name);
        hash.update("=");
        hash.update(value);
        hash.update("\n");
    };
    for (const parameter_spec& spec : parameter_registry())
        add_text(spec.name, to_display_string(spec.record(m_config)));
    for (const auto& [name, value] : m_input_hashes)
        add_text(name, value);
    const auto add = [&hash](const std::vector<double>& values) {
        hash.update(values.data(), values.size() * sizeof(double));
    };
    add(m_theta_initial);
    add(m_r_initial);
    add(m_state);
    for (const attention_head& head : m_weights.heads)
        for (const matrix* m : {&head.Q, &head.K, &head.V})
            hash.update(m->data(), static_cast<std::size_t>(m->size()) * sizeof(double));
    add(m_affine.gain);
    add(m_affine.bias);
    return hash.hex();
}

parameter_list simulation::parameters() const {
    parameter_list p = m_config.to_parameters();
    // The count a run uses (its own, never set on the process; 0 resolves to OpenMP's default).
    p.set("threads", static_cast<std::int64_t>(detail::resolve_threads(m_config.threads)));
    p.set("nadyn_version", std::string(version()));
    p.set("git_commit", std::string(git_commit()));
    p.set("compiler", std::string(compiler()));
    p.set("compiler_flags", std::string(compiler_flags()));
    p.set("simd", std::string(simd_level())); // bitwise reruns hold on the same level
    p.set("build_type", std::string(build_type()));
    p.set("started", utc_now());
    for (const auto& [name, value] : m_input_hashes)
        p.set(name, value);
    return p;
}

double simulation::attention_flops() const {
    const run_config& c = m_config;
    attention_weights weights = combine_heads(m_weights, c.combine, c.d);
    if (c.norm_noise > 0.0) draw_norm_noise(weights, c.n, c.norm_noise, c.seed_for_noise(), 0);
    return attention_system(c.model(1, m_affine), std::move(weights), c.block).attention_flops();
}

run_summary simulation::run(const frame_callback& on_frame, const std::atomic<bool>* stop,
                            const progress_callback& progress, const resume_point* resume) {
    const auto started = std::chrono::steady_clock::now();
    const run_config& c = m_config;
    const int threads = detail::resolve_threads(c.threads);
    attention_system system(c.model(threads, m_affine), combine_heads(m_weights, c.combine, c.d),
                            c.block);
    if (m_exchange) {
        // Every process stops at the same step: at the request of any, agreed in the exchange.
        system.share_tokens(m_exchange);
        m_exchange->watch_stop(stop);
        stop = m_exchange->stop_agreed();
    }
    // The writer's frames carry observables; a process that only steps its share skips them.
    const bool observes = !m_exchange || m_exchange->writes();
    observables_calculator calculator(c.n, c.d, m_theta_initial, c.cluster_eps, 0, threads);
    attention_observables attention_pass(c.n, c.d, c.block);
    // The observables the run records (the table's rows), and the passes they need.
    const std::vector<const observable*> rows = c.recorded_rows();
    std::vector<std::vector<double>> workspaces(rows.size()); // each row's own, across frames
    // The motion since the previous recorded frame; a resumed run's is the file's last kept
    // frame (read_resume), so its next frame measures what an uninterrupted run's does.
    const bool pair_change = c.observes("pair_change");
    const bool motion = c.needs(observable_pass::motion);
    if (motion && resume && m_resume_previous.size() == c.n * c.d)
        calculator.set_previous_frame(m_resume_previous.data());
    // What the Gram pass measures besides min_cos and clusters: pair_density is counted in
    // its blocks, and the modes summed there. With none of them it is skipped, its O(n^2 d).
    calculator.measure_pairs(c.observes("pair_density"));
    calculator.measure_displacement(c.records("displacement") || c.records("norm_error"));
    // The moments when a row records one; else only the last frame's, after the run, for the
    // summary line's mean_cos (its directions kept at each frame: a copy, not two passes).
    const bool moments =
        c.records("mean_cos") || c.records("gap") || c.records("velocity") || c.records("variance");
    calculator.measure_moments(moments);
    std::vector<double> last_directions;
    calculator.measure_modes(c.observes("modes") ? c.modes : 0);
    const bool clusters = c.records("clusters");
    calculator.measure_pairwise(c.records("min_cos"), clusters);
    const bool attention_observed = c.needs(observable_pass::attention);
    // The cluster history from each frame's components (no second pass over the pairs);
    // a resumed run's tracker continues from the file's last kept frame.
    cluster_tracker tracker(c.n);
    std::int64_t first_frame = 0;
    if (clusters && resume && m_resume_tracks_clusters) {
        tracker.restore(m_resume_labels, m_resume_merges, m_resume_times, m_resume_counts);
        first_frame = static_cast<std::int64_t>(m_resume_frames);
    }
    run_summary summary;
    auto last_report = started;
    const double horizon = c.integration.T;

    frame_observer observer = [&](const state_type& x, const state_type& dxdt, double t,
                                  std::int64_t step) {
        if (!observes) {
            summary.last_time = t;
            ++summary.frames;
            return;
        }
        summary.last = calculator.compute(directions(x), magnitudes(x, c.n, c.d), dxdt.data());
        if (!moments) last_directions.assign(directions(x), directions(x) + c.n * c.d);
        // The input the attention reads: theta_k, r_k theta_k (no-norm) or a ⊙ theta_k + b
        // (layernorm with gain and bias).
        const double* input = system.attention_input(x);
        if (attention_observed) {
            const std::optional<attention_summary> taken = system.frame_attention(t);
            const attention_summary attention =
                taken ? *taken
                      : attention_pass.compute(input, system.weights(), system.kernel_options());
            summary.last.argmax_flips = attention.argmax_flips;
            summary.last.attention_entropy = attention.attention_entropy;
        }
        if (!clusters) summary.last.clusters = std::numeric_limits<double>::quiet_NaN();
        if (motion) calculator.compute_motion(directions(x), pair_change, summary.last);
        // Each recorded observable's column, from the passes or its own computation (with
        // this frame's weights: per-layer runs set them on the system).
        const frame_context frame{.n = c.n,
                                  .d = c.d,
                                  .theta = directions(x),
                                  .r = magnitudes(x, c.n, c.d),
                                  .input = input,
                                  .weights = &system.weights(),
                                  .beta = c.logit_beta(),
                                  .threads = threads,
                                  .next_step = summary.statistics.next_step,
                                  .step_error = summary.statistics.step_error,
                                  .passes = &summary.last};
        std::vector<double>& values = summary.last.values;
        values.clear();
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const std::size_t start = values.size();
            values.resize(start + rows[i]->values_per_frame(c.modes));
            rows[i]->value(frame, workspaces[i], values.data() + start);
        }
        if (clusters) {
            tracker.update(calculator.components(),
                           first_frame + static_cast<std::int64_t>(summary.frames), step, t);
            summary.last.cluster_labels = tracker.labels();
            summary.last.merges = tracker.last_events();
            summary.last.clustering_times = tracker.clustering_times();
        }
        summary.last_time = t;
        ++summary.frames;
        on_frame(x, t, step, summary.last);
        if (progress) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last_report > std::chrono::milliseconds(200) || t >= horizon) {
                progress(horizon > 0 ? t / horizon : 1.0);
                last_report = now;
            }
        }
    };
    layer_weights_source layer_weights;
    if (c.weights.per_layer || c.norm_noise > 0.0) {
        // Norm noise is drawn per layer (per layer-time interval in the ODE integrators,
        // docs/model.md §11), with fixed or per-layer weights.
        layer_weights = [&c, fixed = system.weights()](std::int64_t layer) {
            attention_weights w =
                c.weights.per_layer
                    ? combine_heads(make_weights(c.weights, c.d, c.seed_for_weights(), layer),
                                    c.combine, c.d)
                    : fixed;
            draw_norm_noise(w, c.n, c.norm_noise, c.seed_for_noise(), layer);
            return w;
        };
    }
    state_type x = m_state;
    integration_settings settings = c.resolved_integration();
    settings.estimate_step_error = c.records("step_error");
    settings.frame_attention = attention_observed;
    settings.frame_velocity = moments;
    if (settings.warn && !resume)
        for (const std::string& warning :
             configuration_warnings(c.scheme_id, settings.T, settings.dt,
                                    c.scheme_settings().t_switch, settings.kind, c.beta))
            settings.warn(warning);
    summary.outcome =
        integrate(system, x, settings, observer, summary.statistics, stop, layer_weights, resume);
    if (!moments && !last_directions.empty()) {
        const frame_observables last = calculator.compute_moments(last_directions.data(), nullptr);
        summary.last.mean_cos = last.mean_cos;
        summary.last.gap = last.gap;
        summary.last.variance = last.variance;
    }
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

std::vector<std::pair<std::string, std::string>> parameter_descriptions() {
    std::vector<std::pair<std::string, std::string>> out;
    for (const parameter_spec& spec : parameter_registry()) {
        std::string text(spec.description);
        if (!spec.unit.empty()) text += " [" + std::string(spec.unit) + "]";
        if (spec.type == value_type::switch_) text += " (1: yes, 0: no)";
        out.emplace_back(std::string(spec.name), text);
    }
    const std::pair<const char*, const char*> provenance[] = {
        {"command_line", "the command line that made the file"},
        {"nadyn_version", "version of nadyn that wrote the file"},
        {"git_commit", "git commit nadyn was built from (-dirty: with local changes)"},
        {"compiler", "compiler that built nadyn"},
        {"compiler_flags", "compiler flags of the build (bitwise reruns need the same flags)"},
        {"build_type", "CMake build type"},
        {"simd", "instruction set level the build was compiled for (NADYN_SIMD); bitwise "
                 "reruns need the same level"},
        {"started", "UTC time the run started"},
        {"init_sha256", "SHA-256 of the init file's bytes when the run read it (sha256sum)"},
        {"weights_sha256", "SHA-256 of the weights file's bytes when the run read it"},
        {"ln_params_sha256", "SHA-256 of the ln-params file's bytes when the run read it"},
        {"finished", "UTC time the run ended"},
        {"resumed", "UTC time of the last --resume"},
        {"rhs_evaluations", "right-hand-side evaluations of the integrator"},
        {"accepted_steps", "accepted steps (or layers)"},
        {"rejected_steps", "steps dopri5 rejected"},
        {"wall_time_seconds", "wall-clock seconds of the run"},
        {"frames", "frames in the file"},
        {"theta0", "initial directions theta_k(0), n x d"},
        {"r_initial", "initial magnitudes r_k(0), n"},
        {"Q", "query matrix of the attention, d x d (absent: identity)"},
        {"K", "key matrix of the attention, d x d (absent: identity)"},
        {"V", "value matrix of the attention, d x d (absent: identity)"},
        {"gain", "layernorm gain a, d (absent: 1; docs/model.md section 10)"},
        {"bias", "layernorm bias b, d (absent: 0; docs/model.md section 10)"}};
    for (const auto& [name, text] : provenance)
        out.emplace_back(name, text);
    return out;
}

void simulation::write_header(trajectory_writer& writer, const parameter_list& parameters) const {
    const run_config& c = m_config;
    writer.write_parameters(parameters);
    writer.write_parameter_descriptions(parameter_descriptions());
    writer.write_parameter_matrix("theta0", c.n, c.d, m_theta_initial.data());
    writer.write_parameter_matrix("r_initial", c.n, 1, m_r_initial.data());
    // Layernorm's gain and bias as used, so that a rerun needs no --ln-params file.
    if (!m_affine.gain.empty()) writer.write_parameter_matrix("gain", c.d, 1, m_affine.gain.data());
    if (!m_affine.bias.empty()) writer.write_parameter_matrix("bias", c.d, 1, m_affine.bias.data());
    if (!c.weights.per_layer) {
        // Every head's matrix; per-layer weights are regenerated from the seed instead.
        const std::size_t heads = m_weights.heads.size();
        for (const stacked_matrix& m : stacked_weight_matrices(m_weights, c.d))
            writer.write_parameter_matrix(m.name, heads * c.d, c.d, m.values.data(),
                                          heads == 1 ? 0 : heads);
    }
}

void simulation::name_values(trajectory_writer& writer) const {
    const run_config& c = m_config;
    // A file from an older nadyn keeps its own series, under the names it gave them.
    const std::vector<const observable*> rows = c.recorded_rows();
    const std::vector<std::string> series = writer.series_names();
    std::vector<std::string> value_names;
    for (const observable* row : rows) {
        const bool legacy =
            !row->legacy_name.empty() &&
            std::find(series.begin(), series.end(), row->name) == series.end() &&
            std::find(series.begin(), series.end(), row->legacy_name) != series.end();
        value_names.emplace_back(legacy ? row->legacy_name : row->name);
    }
    writer.set_value_names(value_names, observable_widths(rows, c.modes));
}

std::unique_ptr<trajectory_writer> simulation::create_file(const std::string& path,
                                                           const trajectory_layout& layout,
                                                           bool overwrite,
                                                           const parameter_list& parameters) const {
    auto writer = std::make_unique<trajectory_writer>(path, layout, overwrite);
    try {
        write_header(*writer, parameters);
        name_values(*writer);
    } catch (const io_error&) {
        writer->discard(); // a header without its parameters is no use
        throw;
    } catch (const std::bad_alloc&) {
        writer->discard();
        throw out_of_memory(m_config.out_of_memory_message());
    }
    return writer;
}

run_summary
simulation::run_with_writer(detail::frame_sink& sink, const std::atomic<bool>* stop,
                            const progress_callback& progress, const resume_point* resume,
                            const solver_statistics& previous,
                            const std::function<void(double, std::int64_t)>& after_frame) {
    const run_config& c = m_config;
    run_summary summary;
    auto finish = [&](run_status status) {
        run_summary total = summary;
        total.statistics.rhs_evaluations += previous.rhs_evaluations;
        total.statistics.rejected_steps += previous.rejected_steps;
        if (c.integration.kind != integrator_kind::dopri5)
            total.statistics.accepted_steps += previous.accepted_steps;
        trajectory_writer& writer = sink.writer();
        parameter_list stats = statistics_of(total);
        stats.set("frames", static_cast<std::int64_t>(writer.frames_written()));
        writer.finish(status, stats, plateau_request{c.plateau_min, c.integration.T});
    };
    // A write that failed (a full disk): a file without a single frame is no use (its first
    // frame did not fit) and is removed; else it is marked failed when possible. The first
    // error is the one reported: the file's own, when it could not be made.
    auto io_failure = [&] {
        trajectory_writer& writer = sink.opened();
        if (writer.frames_written() == 0) {
            writer.discard();
            throw;
        }
        try {
            finish(run_status::failed);
        } catch (const std::exception&) {
        }
        throw;
    };
    // The frames held while the file was being made, handed to it in an error path: a
    // file that could not be made, or a held frame the disk refused, came first.
    auto hand_over_held = [&] {
        try {
            sink.writer();
        } catch (const io_error&) {
            io_failure();
        }
    };
    const bool clusters = c.records("clusters");
    try {
        summary = run(
            [&](const state_type& x, double t, std::int64_t step, const frame_observables& o) {
                const std::vector<double>& values = o.values;
                const cluster_record history{o.cluster_labels.data(), &o.merges,
                                             &o.clustering_times};
                sink.write_frame(step, t, directions(x), magnitudes(x, c.n, c.d), values,
                                 clusters ? &history : nullptr);
                if (after_frame) {
                    sink.writer().flush(); // the callback may read the frame from the file
                    after_frame(t, step);
                }
            },
            stop, progress, resume);
        // The frames held while the file was being made (a short run computes them all
        // before it is): a disk that refuses one fails the run here, as it would have at
        // that frame.
        sink.writer();
    } catch (const numerical_fault&) {
        hand_over_held();
        finish(run_status::failed);
        throw;
    } catch (const std::bad_alloc&) {
        try {
            hand_over_held();
        } catch (const std::bad_alloc&) {
            // Still out of memory: reported as such below.
        }
        // Marked failed as a numerical fault is: the frames so far are the run's.
        try {
            finish(run_status::failed);
        } catch (const std::exception&) {
        }
        throw out_of_memory(c.out_of_memory_message());
    } catch (const io_error&) {
        io_failure();
    }
    finish(summary.outcome == integration_outcome::complete ? run_status::complete
                                                            : run_status::interrupted);
    return summary;
}

bool simulation::frames_come_soon() const {
    // The attention's flops between two frames, at about 4 evaluations a step (RK4's; a frame
    // every `every` steps). Under 5e7 they take a few milliseconds even at the rates of small
    // shapes, so holding frames while the file is made delays the first frame on disk by
    // about that, and a file that cannot be made is found after that much work. A larger
    // run makes its file first: the 4 ms saved would not show in it.
    constexpr double flops_per_frame_limit = 5e7;
    const double steps =
        static_cast<double>(std::max<std::int64_t>(1, m_config.resolved_integration().every));
    return attention_flops() * 4.0 * steps <= flops_per_frame_limit;
}

run_summary simulation::run_to_file(const std::string& path, bool overwrite,
                                    const std::atomic<bool>* stop,
                                    const progress_callback& progress,
                                    const std::function<void(double, std::int64_t)>& after_frame) {
    const run_config& c = m_config;
    if (m_exchange && !m_exchange->writes()) {
        agree_on_file(false);
        return run([](const state_type&, double, std::int64_t, const frame_observables&) {}, stop,
                   progress);
    }
    trajectory_layout layout;
    layout.n = c.n;
    layout.d = c.d;
    layout.positions = c.positions;
    layout.compress = c.compress;
    layout.swmr = c.swmr;
    layout.scheme = std::string(info(c.scheme_id).name);
    for (const observable* row : c.recorded_rows())
        layout.observables.push_back({std::string(row->name), row->values_per_frame(c.modes), row});
    // The history follows the clusters series (its labels live in /observables/clusters).
    layout.cluster_history = c.records("clusters");

    auto replaced = [&c, path](trajectory_writer& writer) {
        if (writer.replaced_empty() && c.integration.warn)
            c.integration.warn("'" + path +
                               "' held no frame (left by a run stopped before its first frame); "
                               "replaced it");
    };
    // The record of the inputs, taken on this thread (the thread count it resolves is this
    // thread's OpenMP setting, the one the run uses).
    const parameter_list parameters = this->parameters();
    std::future<std::unique_ptr<trajectory_writer>> opening;
    if (!m_exchange && !after_frame && frames_come_soon()) {
        // A path that cannot be used fails now, before any step (the opening checks again,
        // when it claims the file).
        check_output_path(path, overwrite);
        try {
            // The file is made on another thread while the run takes its first steps
            // (src/experiment/frame_sink.hpp); simulation's members are only read meanwhile.
            opening = std::async(std::launch::async, [this, path, layout, overwrite, parameters] {
                return create_file(path, layout, overwrite, parameters);
            });
        } catch (const std::system_error&) {
            // No thread to be had (a limit on the process's threads): made first, below.
        }
    }
    if (opening.valid()) {
        detail::frame_sink sink(std::move(opening), replaced, c.n, c.d, c.positions);
        return run_with_writer(sink, stop, progress, nullptr, {}, after_frame);
    }
    // Made first: every process of a shared run learns whether it was (a collective), and
    // after_frame reads the file.
    std::unique_ptr<trajectory_writer> writer;
    try {
        writer = create_file(path, layout, overwrite, parameters);
    } catch (const std::exception&) {
        // A path that cannot be used is an input_error (the claim's checks); a disk that
        // cannot take the header is an io_error.
        agree_on_file(false);
        throw;
    }
    agree_on_file(true);
    replaced(*writer);
    detail::frame_sink sink(*writer);
    return run_with_writer(sink, stop, progress, nullptr, {}, after_frame);
}

run_summary simulation::resume_file(const std::string& path, std::optional<double> horizon,
                                    const std::atomic<bool>* stop,
                                    const progress_callback& progress,
                                    const std::function<void(double, std::int64_t)>& after_frame) {
    refuse_live_output(path); // before any read of a file being written
    std::size_t keep = 0;
    solver_statistics previous;
    const resume_point from = read_resume(path, horizon, keep, previous);
    if (m_exchange) {
        // Every process has read the file before the writer truncates and appends to it.
        m_exchange->synchronise();
        if (!m_exchange->writes()) {
            agree_on_file(false);
            return run([](const state_type&, double, std::int64_t, const frame_observables&) {},
                       stop, progress, &from);
        }
    }
    // Frames only the stop wrote are dropped; the resume state is kept in memory.
    std::unique_ptr<trajectory_writer> writer;
    try {
        writer = trajectory_writer::append(path, keep, m_config.swmr);
    } catch (const std::exception&) {
        agree_on_file(false);
        throw;
    }
    agree_on_file(true);
    parameter_list update;
    update.set("T", m_config.integration.T);
    update.set("resumed", utc_now());
    writer->write_parameters(update);
    name_values(*writer);
    detail::frame_sink sink(*writer);
    return run_with_writer(sink, stop, progress, &from, previous, after_frame);
}

resume_point simulation::read_resume(const std::string& path, std::optional<double> horizon,
                                     std::size_t& keep, solver_statistics& previous) {
    const run_config& c = m_config;
    resume_point from;
    {
        const std::string empty =
            "'" + path +
            "' holds no frame to resume from (its run was stopped before its first frame); run "
            "it again without --resume: a new run with this output replaces such a file";
        std::optional<trajectory_reader> opened;
        try {
            opened.emplace(path);
        } catch (const std::exception&) {
            if (holds_no_results(path)) throw input_error(empty);
            throw;
        }
        const trajectory_reader& file = *opened;
        if (!file.has_positions())
            throw input_error("'" + path +
                              "' has no positions (--positions none): it cannot "
                              "be resumed");
        const std::size_t frames = file.frame_count();
        if (frames == 0) throw input_error(empty);
        const auto steps = file.steps();
        const auto times = file.times();
        const auto step_sizes = file.observable("step_size");
        const std::size_t last = frames - 1;
        const double old_T = file.parameters().number("T").value_or(c.integration.T);
        // The library guards what the command line guards: a shorter horizon would leave the
        // fixed-step loop stepping past its end.
        if (horizon && !(std::isfinite(*horizon) && *horizon >= old_T))
            throw input_error("T = " + std::to_string(*horizon) + " cannot shorten the run in '" +
                              path + "' (T = " + std::to_string(old_T) + ")");
        check_inputs_unchanged(path);
        if (horizon) {
            // The longer horizon is checked as a new run's would be (T / dt below max_steps,
            // per-layer redraws), before the writer records it in the file.
            run_config extended = c;
            extended.integration.T = *horizon;
            extended.validate();
        }
        if (file.status() == "complete" && !(horizon && *horizon > old_T))
            throw input_error("'" + path + "' is complete at T = " + std::to_string(old_T) +
                              "; pass a larger --T to extend it");
        const std::int64_t every = c.frame_interval();
        const double interval = double(every) * c.integration.dt;
        // A frame is on the cadence of an uninterrupted run with the (new) horizon when it is
        // a multiple of `every` steps (of the output interval for dopri5); an extended run
        // can only continue bit for bit from a horizon on that grid.
        // Chosen frame times: the frames of an uninterrupted run are at output_times().
        const std::vector<double> chosen =
            c.integration.frame_times.empty() ? std::vector<double>{} : [&] {
                integration_settings s = c.integration;
                if (horizon) s.T = *horizon;
                return output_times(s);
            }();
        auto on_cadence = [&](std::size_t f) {
            if (!chosen.empty()) return std::binary_search(chosen.begin(), chosen.end(), times[f]);
            if (c.integration.kind == integrator_kind::dopri5) {
                const double j = std::round(times[f] / interval);
                return times[f] == j * interval;
            }
            return steps[f] % every == 0;
        };
        if (horizon && *horizon > old_T && !on_cadence(last) && file.status() == "complete")
            throw input_error("T = " + std::to_string(old_T) + " of '" + path +
                              (chosen.empty() ? "' is not a multiple of the frame interval (" +
                                                    std::to_string(interval) + ")"
                                              : std::string("' is not one of its frame times")) +
                              ", so a longer run would not pass through it; rerun with the "
                              "longer --T instead");
        from.step = steps[last];
        from.t = times[last];
        from.next_step = step_sizes.empty() ? c.integration.dt : step_sizes[last];
        keep = on_cadence(last) ? frames : frames - 1;
        from.frame_kept = keep == frames;
        const auto theta = file.positions(last);
        // The frame before the next one written: the last frame the file keeps (keep >= 1:
        // frame 0 is always on the cadence).
        m_resume_previous = keep == frames ? theta : file.positions(keep - 1);
        // The cluster history up to the last kept frame; a file from before cluster
        // histories has none, and its resumed run records none either.
        m_resume_tracks_clusters = file.has_cluster_history();
        if (m_resume_tracks_clusters) {
            m_resume_frames = keep;
            m_resume_labels = file.cluster_labels(keep - 1);
            m_resume_merges = file.merge_events(keep);
            m_resume_times.assign(times.begin(), times.begin() + std::ptrdiff_t(keep));
            m_resume_counts = file.observable("clusters");
            m_resume_counts.resize(keep);
        }
        const auto r = file.magnitudes(last);
        std::copy(theta.begin(), theta.end(), m_state.begin());
        std::copy(r.begin(), r.end(), m_state.begin() + static_cast<std::ptrdiff_t>(c.n * c.d));
        const parameter_list& p = file.parameters();
        previous.rhs_evaluations =
            static_cast<std::uint64_t>(p.integer("rhs_evaluations").value_or(0));
        previous.rejected_steps =
            static_cast<std::uint64_t>(p.integer("rejected_steps").value_or(0));
        // Fixed steps count from the resume step; dopri5 restores its count from the frame.
        previous.accepted_steps = c.integration.kind == integrator_kind::dopri5
                                      ? 0
                                      : static_cast<std::uint64_t>(from.step);
    }
    if (horizon) m_config.integration.T = *horizon;
    return from;
}

void simulation::agree_on_file(bool opened) const {
    if (!m_exchange) return;
    const int writer_opened = m_exchange->writer_value(opened ? 1 : 0);
    if (!m_exchange->writes() && writer_opened == 0)
        throw input_error("the writing rank could not open the output file");
}

} // namespace nadyn
