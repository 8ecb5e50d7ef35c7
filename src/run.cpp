#include "nadyn/run.hpp"

#include "nadyn/error.hpp"
#include "nadyn/version.hpp"

#include <omp.h>

#include <chrono>
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

} // namespace

simulation::simulation(run_config config) : m_config(std::move(config)) {
    m_config.validate();
    if (m_config.threads > 0) omp_set_num_threads(m_config.threads);
    initial_state start =
        make_initial(m_config.init, m_config.n, m_config.d, m_config.seed, m_config.r0);
    m_weights = make_weights(m_config.weights, m_config.d, m_config.seed,
                             m_config.weights.kind == weights_kind::random_per_layer ? 0 : -1);
    m_theta_initial = start.theta;
    m_r_initial = start.r;
    m_state.resize(state_size(m_config.n, m_config.d));
    std::copy(start.theta.begin(), start.theta.end(), m_state.begin());
    std::copy(start.r.begin(), start.r.end(),
              m_state.begin() + static_cast<std::ptrdiff_t>(m_config.n * m_config.d));
}

parameter_list simulation::parameters() const {
    parameter_list p = m_config.to_parameters();
    p.set("threads", static_cast<std::int64_t>(omp_get_max_threads()));
    p.set("nadyn_version", std::string(version()));
    p.set("git_commit", std::string(git_commit()));
    p.set("compiler", std::string(compiler()));
    p.set("build_type", std::string(build_type()));
    p.set("started", utc_now());
    return p;
}

run_summary simulation::run(const frame_callback& on_frame, const std::atomic<bool>* stop,
                            const progress_callback& progress) {
    const auto started = std::chrono::steady_clock::now();
    const run_config& c = m_config;
    model_parameters model{c.n, c.d, c.beta, c.causal, c.scheme_settings()};
    attention_system system(model, m_weights, c.block);
    observables_calculator calculator(c.n, c.d, m_theta_initial, c.cluster_eps);
    run_summary summary;
    auto last_report = started;
    const double horizon = c.integration.T;

    frame_observer observer = [&](const state_type& x, const state_type& dxdt, double t,
                                  std::int64_t step) {
        summary.last = calculator.compute(directions(x), magnitudes(x, c.n, c.d), dxdt.data());
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
                                stop, layer_weights);
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

run_summary simulation::run_to_file(const std::string& path, bool overwrite,
                                    const std::atomic<bool>* stop,
                                    const progress_callback& progress) {
    const run_config& c = m_config;
    trajectory_layout layout;
    layout.n = c.n;
    layout.d = c.d;
    layout.positions = c.positions;
    layout.compress = c.compress;
    layout.scheme = std::string(info(c.scheme_id).name);
    for (auto name : observable_names)
        layout.observable_names.emplace_back(name);

    std::unique_ptr<trajectory_writer> writer;
    try {
        writer = std::make_unique<trajectory_writer>(path, layout, overwrite);
    } catch (const io_error& e) {
        throw input_error(e.what()); // an unwritable path is a bad input
    }
    writer->write_parameters(parameters());
    writer->write_parameter_matrix("theta0", c.n, c.d, m_theta_initial.data());
    writer->write_parameter_matrix("r_initial", c.n, 1, m_r_initial.data());
    if (c.weights.kind == weights_kind::random || c.weights.kind == weights_kind::file) {
        const attention_head& head = m_weights.heads.front();
        if (head.Q.size()) writer->write_parameter_matrix("Q", c.d, c.d, head.Q.data());
        if (head.K.size()) writer->write_parameter_matrix("K", c.d, c.d, head.K.data());
        if (head.V.size()) writer->write_parameter_matrix("V", c.d, c.d, head.V.data());
    }

    auto statistics_of = [](const run_summary& s) {
        parameter_list stats;
        stats.set("rhs_evaluations", static_cast<std::int64_t>(s.statistics.rhs_evaluations));
        stats.set("accepted_steps", static_cast<std::int64_t>(s.statistics.accepted_steps));
        stats.set("rejected_steps", static_cast<std::int64_t>(s.statistics.rejected_steps));
        stats.set("wall_time_seconds", s.wall_seconds);
        stats.set("frames", static_cast<std::int64_t>(s.frames));
        stats.set("finished", utc_now());
        return stats;
    };
    run_summary summary;
    try {
        summary = run(
            [&](const state_type& x, double t, std::int64_t step, const frame_observables& o) {
                writer->write_frame(step, t, directions(x), magnitudes(x, c.n, c.d), o.values());
            },
            stop, progress);
    } catch (const numerical_fault&) {
        writer->finish(run_status::failed, statistics_of(summary));
        throw;
    } catch (const io_error&) {
        // The file may be what failed: mark it when possible, report the first error.
        try {
            writer->finish(run_status::failed, statistics_of(summary));
        } catch (const std::exception&) {
        }
        throw;
    }
    writer->finish(summary.outcome == integration_outcome::complete ? run_status::complete
                                                                    : run_status::interrupted,
                   statistics_of(summary));
    return summary;
}

} // namespace nadyn
