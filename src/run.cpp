#include "nadyn/run.hpp"

#include "nadyn/detail/parallel.hpp"
#include "nadyn/error.hpp"
#include "nadyn/version.hpp"

#include <chrono>
#include <cmath>
#include <ctime>

namespace nadyn {

namespace {

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return buffer;
}

parameter_list statistics_of(const run_summary& s) {
    parameter_list stats;
    stats.set("rhs_evaluations", static_cast<std::int64_t>(s.statistics.rhs_evaluations));
    stats.set("accepted_steps", static_cast<std::int64_t>(s.statistics.accepted_steps));
    stats.set("rejected_steps", static_cast<std::int64_t>(s.statistics.rejected_steps));
    stats.set("wall_time_seconds", s.wall_seconds);
    stats.set("finished", utc_now());
    return stats;
}

} // namespace

simulation::simulation(run_config config) : m_config(std::move(config)) {
    m_config.validate();
    m_weights = make_weights(m_config.weights, m_config.d, m_config.seed,
                             m_config.weights.kind == weights_kind::random_per_layer ? 0 : -1);
    set_start(make_initial(m_config.init, m_config.n, m_config.d, m_config.seed, m_config.r0));
}

simulation::simulation(run_config config, const initial_state& start, attention_weights weights)
    : m_config(std::move(config)), m_weights(std::move(weights)) {
    m_config.validate();
    if (start.theta.size() != m_config.n * m_config.d || start.r.size() != m_config.n)
        throw input_error("initial state of the wrong size for n = " + std::to_string(m_config.n) +
                          ", d = " + std::to_string(m_config.d));
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
    if (config.weights.kind == weights_kind::random || config.weights.kind == weights_kind::file) {
        // The recorded matrices, not the generator or the original weights file (which may
        // have changed or gone).
        attention_head& head = weights.heads.front();
        for (auto [name, target] : {std::pair{"Q", &head.Q}, {"K", &head.K}, {"V", &head.V}}) {
            if (auto m = file.parameter_matrix(name, &rows, &cols)) {
                if (rows != config.d || cols != config.d)
                    throw input_error("'" + path + "': /parameters/" + name + " is not d x d");
                target->resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
                std::copy(m->begin(), m->end(), target->data());
            }
        }
    } else {
        weights = make_weights(config.weights, config.d, config.seed,
                               config.weights.kind == weights_kind::random_per_layer ? 0 : -1);
    }
    return simulation(std::move(config), start, std::move(weights));
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
    return p;
}

run_summary simulation::run(const frame_callback& on_frame, const std::atomic<bool>* stop,
                            const progress_callback& progress, const resume_point* resume) {
    const auto started = std::chrono::steady_clock::now();
    const run_config& c = m_config;
    const int threads = detail::resolve_threads(c.threads);
    model_parameters model{c.n, c.d, c.beta, c.causal, c.scheme_settings(), c.arithmetic, threads};
    attention_system system(model, m_weights, c.block);
    observables_calculator calculator(c.n, c.d, m_theta_initial, c.cluster_eps, 0, threads);
    run_summary summary;
    auto last_report = started;
    const double horizon = c.integration.T;

    frame_observer observer = [&](const state_type& x, const state_type& dxdt, double t,
                                  std::int64_t step) {
        summary.last = calculator.compute(directions(x), magnitudes(x, c.n, c.d), dxdt.data());
        summary.last.step_size = summary.statistics.next_step;
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
    if (c.weights.kind == weights_kind::random_per_layer) {
        layer_weights = [&c](std::int64_t layer) {
            return make_weights(c.weights, c.d, c.seed, layer);
        };
    }
    state_type x = m_state;
    summary.outcome = integrate(system, x, c.resolved_integration(), observer, summary.statistics,
                                stop, layer_weights, resume);
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

void simulation::write_header(trajectory_writer& writer) const {
    const run_config& c = m_config;
    writer.write_parameters(parameters());
    writer.write_parameter_matrix("theta0", c.n, c.d, m_theta_initial.data());
    writer.write_parameter_matrix("r_initial", c.n, 1, m_r_initial.data());
    if (c.weights.kind == weights_kind::random || c.weights.kind == weights_kind::file) {
        const attention_head& head = m_weights.heads.front();
        if (head.Q.size()) writer.write_parameter_matrix("Q", c.d, c.d, head.Q.data());
        if (head.K.size()) writer.write_parameter_matrix("K", c.d, c.d, head.K.data());
        if (head.V.size()) writer.write_parameter_matrix("V", c.d, c.d, head.V.data());
    }
}

run_summary
simulation::run_with_writer(trajectory_writer& writer, const std::atomic<bool>* stop,
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
        parameter_list stats = statistics_of(total);
        stats.set("frames", static_cast<std::int64_t>(writer.frames_written()));
        writer.finish(status, stats);
    };
    try {
        summary = run(
            [&](const state_type& x, double t, std::int64_t step, const frame_observables& o) {
                writer.write_frame(step, t, directions(x), magnitudes(x, c.n, c.d), o.values());
                if (after_frame) after_frame(t, step);
            },
            stop, progress, resume);
    } catch (const numerical_fault&) {
        finish(run_status::failed);
        throw;
    } catch (const io_error&) {
        // The file may be what failed: mark it when possible, report the first error.
        try {
            finish(run_status::failed);
        } catch (const std::exception&) {
        }
        throw;
    }
    finish(summary.outcome == integration_outcome::complete ? run_status::complete
                                                            : run_status::interrupted);
    return summary;
}

run_summary simulation::run_to_file(const std::string& path, bool overwrite,
                                    const std::atomic<bool>* stop,
                                    const progress_callback& progress,
                                    const std::function<void(double, std::int64_t)>& after_frame) {
    const run_config& c = m_config;
    trajectory_layout layout;
    layout.n = c.n;
    layout.d = c.d;
    layout.positions = c.positions;
    layout.compress = c.compress;
    layout.swmr = c.swmr;
    layout.scheme = std::string(info(c.scheme_id).name);
    for (auto name : observable_names)
        layout.observable_names.emplace_back(name);

    std::unique_ptr<trajectory_writer> writer;
    try {
        writer = std::make_unique<trajectory_writer>(path, layout, overwrite);
    } catch (const io_error& e) {
        throw input_error(e.what()); // an unwritable path is a bad input
    }
    write_header(*writer);
    return run_with_writer(*writer, stop, progress, nullptr, {}, after_frame);
}

run_summary simulation::resume_file(const std::string& path, std::optional<double> horizon,
                                    const std::atomic<bool>* stop,
                                    const progress_callback& progress,
                                    const std::function<void(double, std::int64_t)>& after_frame) {
    const run_config& c = m_config;
    resume_point from;
    std::size_t keep = 0;
    solver_statistics previous;
    {
        const trajectory_reader file(path);
        if (!file.has_positions())
            throw input_error("'" + path +
                              "' has no positions (--positions none): it cannot "
                              "be resumed");
        const std::size_t frames = file.frame_count();
        if (frames == 0) throw input_error("'" + path + "' has no frame to resume from");
        const auto steps = file.steps();
        const auto times = file.times();
        const auto step_sizes = file.observable("step_size");
        const std::size_t last = frames - 1;
        const double old_T = file.parameters().number("T").value_or(c.integration.T);
        if (file.status() == "complete" && !(horizon && *horizon > old_T))
            throw input_error("'" + path + "' is complete at T = " + std::to_string(old_T) +
                              "; pass a larger --T to extend it");
        const std::int64_t every = c.frame_interval();
        const double interval = double(every) * c.integration.dt;
        // A frame is on the cadence of an uninterrupted run with the (new) horizon when it is
        // a multiple of `every` steps (of the output interval for dopri5); an extended run
        // can only continue bit for bit from a horizon on that grid.
        auto on_cadence = [&](std::size_t f) {
            if (c.integration.kind == integrator_kind::dopri5) {
                const double j = std::round(times[f] / interval);
                return times[f] == j * interval;
            }
            return steps[f] % every == 0;
        };
        if (horizon && *horizon > old_T && !on_cadence(last) && file.status() == "complete")
            throw input_error("T = " + std::to_string(old_T) + " of '" + path +
                              "' is not a multiple of the frame interval (" +
                              std::to_string(interval) +
                              "), so a longer run would not pass through it; rerun with the "
                              "longer --T instead");
        from.step = steps[last];
        from.t = times[last];
        from.next_step = step_sizes.empty() ? c.integration.dt : step_sizes[last];
        keep = on_cadence(last) ? frames : frames - 1;
        from.frame_kept = keep == frames;
        const auto theta = file.positions(last);
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
    // Frames only the stop wrote are dropped; the resume state is kept in memory.
    auto writer = trajectory_writer::append(path, keep, c.swmr);
    parameter_list update;
    update.set("T", m_config.integration.T);
    update.set("resumed", utc_now());
    writer->write_parameters(update);
    return run_with_writer(*writer, stop, progress, &from, previous, after_frame);
}

} // namespace nadyn
