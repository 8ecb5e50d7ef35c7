#include "nadyn/meanfield/density_run.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/files/input_files.hpp"
#include "nadyn/meanfield/circle.hpp"
#include "nadyn/meanfield/circle_kinetic.hpp"
#include "nadyn/meanfield/sphere_factory.hpp"
#include "nadyn/meanfield/zonal.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/funk_hecke.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/version.hpp"

#include <boost/numeric/odeint.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <omp.h>

namespace nadyn::meanfield {

geometry_kind parse_geometry(const std::string& text) {
    if (text == "auto") return geometry_kind::automatic;
    if (text == "circle") return geometry_kind::circle;
    if (text == "sphere") return geometry_kind::sphere;
    if (text == "zonal") return geometry_kind::zonal;
    throw input_error("--geometry: unknown geometry '" + text +
                      "' (valid: auto, circle, sphere, zonal)");
}

std::string to_string(geometry_kind kind) {
    switch (kind) {
    case geometry_kind::automatic:
        return "auto";
    case geometry_kind::circle:
        return "circle";
    case geometry_kind::sphere:
        return "sphere";
    case geometry_kind::zonal:
        return "zonal";
    }
    return "auto";
}

const char* to_string(density_outcome outcome) {
    switch (outcome) {
    case density_outcome::complete:
        return "complete";
    case density_outcome::interrupted:
        return "interrupted";
    case density_outcome::unresolved:
        return "unresolved";
    }
    return "complete";
}

geometry_kind meanfield_config::resolved_geometry() const {
    if (geometry != geometry_kind::automatic) return geometry;
    return d == 2 ? geometry_kind::circle : d == 3 ? geometry_kind::sphere : geometry_kind::zonal;
}

void meanfield_config::validate() const {
    const geometry_kind g = resolved_geometry();
    if (d < 2 || d > 512) throw input_error("--d must be from 2 to 512, got " + std::to_string(d));
    if (g == geometry_kind::circle && d != 2)
        throw input_error("--geometry circle needs --d 2, got " + std::to_string(d));
    if (g == geometry_kind::sphere && d != 3)
        throw input_error("--geometry sphere needs --d 3, got " + std::to_string(d) +
                          " (take --geometry zonal for zonal densities in any d)");
    if (!(beta > 0.0) || !std::isfinite(beta))
        throw input_error("--beta must be a finite number > 0 for the density solver, got " +
                          std::to_string(beta));
    switch (scheme.id) {
    case scheme::post_ln:
    case scheme::sqrt_scaling:
    case scheme::ngpt:
        break;
    case scheme::mix_ln:
        if (!t_switch || *t_switch < T)
            throw input_error(
                "--scheme mix-ln: the density solver follows mix-ln only up to its switch "
                "(after it, pre-ln's speed reads each token's magnitude, which a density on the "
                "sphere does not carry); give --t-switch >= T");
        break;
    case scheme::pre_ln:
    case scheme::peri_ln:
        // The kinetic form (docs/model.md §16.7): on the circle, with identity weights.
        if (g != geometry_kind::circle || weights.family != weights_family::identity)
            throw input_error(
                "--scheme " + std::string(info(scheme.id).name) +
                ": its speed reads each token's magnitude, so its mean-field state is a measure "
                "in (direction, magnitude); the solver has that kinetic form on the circle "
                "(--d 2) with identity weights only");
        break;
    case scheme::no_norm:
        throw input_error("--scheme no-norm: its attention reads r_k theta_k, so the field is not "
                          "a function of the directions' density; valid: post-ln, sqrt-scaling, "
                          "ngpt, pre-ln and peri-ln (circle), mix-ln (up to its switch)");
    }
    if (!(r0 > 0.0) || !std::isfinite(r0)) throw input_error("--r0 must be a finite number > 0");
    if (scheme.id == scheme::ngpt && (!(scheme.alpha > 0.0) || !std::isfinite(scheme.alpha)))
        throw input_error("--alpha must be a finite number > 0");
    if (!(T >= 0.0) || !std::isfinite(T)) throw input_error("--T must be a finite number >= 0");
    if (!(dt > 0.0) || !std::isfinite(dt)) throw input_error("--dt must be a finite number > 0");
    if (every < 1) throw input_error("--every must be >= 1");
    const double frames = T / (static_cast<double>(every) * dt);
    if (!(frames < 1e7))
        throw input_error("T / (every dt) = " + std::to_string(frames) +
                          " frames is too many (at most 10^7); raise --every or --dt");
    if (!(rtol > 0.0) || !(atol > 0.0) || !std::isfinite(rtol) || !std::isfinite(atol))
        throw input_error("--rtol and --atol must be finite numbers > 0");
    if (modes < 1 || modes > 1024)
        throw input_error("--mode-count must be from 1 to 1024, got " + std::to_string(modes));
    if (!(resolution_tol > 0.0) || !(resolution_tol < 1.0))
        throw input_error("--resolution-tol must be in (0, 1)");
    if (!std::isfinite(peak_floor)) throw input_error("--peak-floor must be finite");
    if (g != geometry_kind::circle && !(weights.family == weights_family::identity))
        throw input_error("--weights: the " + to_string(g) +
                          " geometry takes identity weights only (the attention is then "
                          "diagonal in its harmonics); general weights: --d 2 (the circle)");
    if (weights.per_layer)
        throw input_error("--weights: per-layer weights have no mean-field meaning here "
                          "(they change the field at every layer); take fixed weights");
    if (g == geometry_kind::circle && (points < 8 || points % 2 || points > (1u << 24)))
        throw input_error("--points must be an even number from 8 to 16777216, got " +
                          std::to_string(points));
    if (g != geometry_kind::circle && (degree < 2 || degree > 4096))
        throw input_error("--degree must be from 2 to 4096, got " + std::to_string(degree));
    if (threads < 0) throw input_error("--threads must be >= 0");
    // The grid must resolve the kernel itself: the velocity field carries the kernel's
    // multipliers w_k / w_0 (about exp(-k^2 / (2 beta))), and where they are still above the
    // resolution tolerance at the top third of the grid, the field alone makes the density's
    // tail fail the check. Required: w_k / w_0 <= tol / 100 from two thirds of the top degree.
    const std::size_t top = g == geometry_kind::circle ? points / 2 - 1 : degree;
    const auto ratios = kernel_ratios(beta, d, 4 * top + 64);
    std::size_t needed = 0;
    while (needed + 1 < ratios.size() && ratios[needed] > resolution_tol / 100.0)
        ++needed;
    if (3 * needed > 2 * top + 2) {
        const std::size_t least = (3 * needed + 1) / 2;
        throw input_error("the grid is too small for beta = " + std::to_string(beta) +
                          ": the kernel's multipliers reach resolution_tol / 100 only at degree " +
                          std::to_string(needed) + "; raise " +
                          (g == geometry_kind::circle
                               ? "--points to at least " + std::to_string(2 * least + 2)
                               : "--degree to at least " + std::to_string(least)));
    }
}

parameter_list meanfield_config::to_parameters() const {
    parameter_list p;
    p.set("model", std::string("meanfield"));
    p.set("geometry", to_string(resolved_geometry()));
    p.set("d", static_cast<std::int64_t>(d));
    p.set("points", static_cast<std::int64_t>(points));
    p.set("degree", static_cast<std::int64_t>(degree));
    p.set("beta", beta);
    p.set("r0", r0);
    p.set("scheme", std::string(info(scheme.id).name));
    p.set("alpha", scheme.alpha);
    p.set("t_switch", t_switch ? *t_switch : std::nan(""));
    p.set("T", T);
    p.set("dt", dt);
    p.set("every", every);
    p.set("rtol", rtol);
    p.set("atol", atol);
    p.set("init", init.to_string());
    p.set("weights", weights.to_string());
    p.set("heads", static_cast<std::int64_t>(weights.heads));
    p.set("value", std::string(nadyn::to_string(weights.value)));
    p.set("head_combine", std::string(nadyn::to_string(combine)));
    p.set("seed", static_cast<std::int64_t>(seed));
    p.set("mode_count", static_cast<std::int64_t>(modes));
    p.set("resolution_tol", resolution_tol);
    p.set("peak_floor", peak_floor);
    p.set("threads", static_cast<std::int64_t>(threads));
    p.set("command_line", command_line);
    p.set("nadyn_version", std::string(nadyn::version()));
    p.set("git_commit", std::string(git_commit()));
    return p;
}

meanfield_config meanfield_config::from_parameters(const parameter_list& p) {
    auto number = [&](const char* name) {
        const auto v = p.number(name);
        if (!v) throw input_error(std::string("the file's /parameters has no '") + name + "'");
        return *v;
    };
    auto integer = [&](const char* name) {
        const auto v = p.integer(name);
        if (!v) throw input_error(std::string("the file's /parameters has no '") + name + "'");
        return *v;
    };
    auto text = [&](const char* name) {
        const auto v = p.text(name);
        if (!v) throw input_error(std::string("the file's /parameters has no '") + name + "'");
        return *v;
    };
    if (p.text("model").value_or("") != "meanfield")
        throw input_error("not a density file of nadyn meanfield (its /parameters has no "
                          "model = \"meanfield\")");
    meanfield_config c;
    c.geometry = parse_geometry(text("geometry"));
    c.d = static_cast<std::size_t>(integer("d"));
    c.points = static_cast<std::size_t>(integer("points"));
    c.degree = static_cast<std::size_t>(integer("degree"));
    c.beta = number("beta");
    c.r0 = p.number("r0").value_or(1.0);
    c.scheme.id = parse_scheme(text("scheme"));
    c.scheme.alpha = number("alpha");
    const double ts = number("t_switch");
    if (!std::isnan(ts)) c.t_switch = ts;
    c.T = number("T");
    c.dt = number("dt");
    c.every = integer("every");
    c.rtol = number("rtol");
    c.atol = number("atol");
    c.init = density_init::parse(text("init"));
    c.weights = weights_spec::parse(text("weights"));
    c.weights.heads = static_cast<std::size_t>(integer("heads"));
    c.weights.value = parse_value_family(text("value"));
    c.combine = parse_head_combine(text("head_combine"));
    c.seed = static_cast<std::uint64_t>(integer("seed"));
    c.modes = static_cast<std::size_t>(integer("mode_count"));
    c.resolution_tol = number("resolution_tol");
    c.peak_floor = number("peak_floor");
    c.threads = static_cast<int>(integer("threads"));
    c.command_line = text("command_line");
    return c;
}

namespace {

field_parameters field_of(const meanfield_config& c) {
    field_parameters f;
    f.beta = c.beta;
    f.scheme = c.scheme;
    if (c.t_switch) f.scheme.t_switch = *c.t_switch;
    return f;
}

// log w_0 = log(Gamma(d/2) (2/beta)^nu I_nu(beta)); I_nu through its exponentially scaled
// large-argument series where it overflows (beta > 700).
double log_kernel_mass(double beta, std::size_t d) {
    const double nu = 0.5 * static_cast<double>(d) - 1.0;
    const double prefix = std::lgamma(0.5 * static_cast<double>(d)) + nu * std::log(2.0 / beta);
    const double i = std::cyl_bessel_i(nu, beta);
    if (std::isfinite(i) && i > 0.0) return prefix + std::log(i);
    // I_nu(b) = e^b / sqrt(2 pi b) (1 - (mu-1)/(8b) + (mu-1)(mu-9)/(2! (8b)^2) - ...),
    // mu = 4 nu^2, summed while the terms fall.
    const double mu = 4.0 * nu * nu;
    double term = 1.0, sum = 1.0;
    for (int k = 1; k < 30; ++k) {
        const double odd = 2.0 * k - 1.0;
        const double next = -term * (mu - odd * odd) / (k * 8.0 * beta);
        if (std::abs(next) >= std::abs(term)) break;
        term = next;
        sum += term;
    }
    return prefix + beta - 0.5 * std::log(2.0 * M_PI * beta) + std::log(sum);
}

} // namespace

density_solver::density_solver(meanfield_config config) : m_config(std::move(config)) {
    m_config.validate();
    const field_parameters field = field_of(m_config);
    switch (m_config.resolved_geometry()) {
    case geometry_kind::circle: {
        if (m_config.scheme.id == scheme::pre_ln || m_config.scheme.id == scheme::peri_ln) {
            m_geometry =
                std::make_unique<circle_kinetic_geometry>(m_config.points, field, m_config.r0);
            break;
        }
        attention_weights weights;
        if (m_config.weights.family != weights_family::identity) {
            weights = m_config.weights.family == weights_family::file
                          ? *with_file_contents(m_config.weights, 2).contents
                          : make_weights(m_config.weights, 2, m_config.seed);
            weights = combine_heads(std::move(weights), m_config.combine, 2);
        }
        m_geometry = std::make_unique<circle_geometry>(m_config.points, field, weights);
        break;
    }
    case geometry_kind::sphere:
        m_geometry = make_sphere_geometry(m_config.degree, field);
        break;
    case geometry_kind::zonal:
    case geometry_kind::automatic:
        m_geometry = std::make_unique<zonal_geometry>(m_config.d, m_config.degree, field);
        break;
    }
    const std::vector<double> start =
        make_density(m_config.init, *m_geometry, stream_seed(m_config.seed, initial_stream));
    m_initial.assign(m_geometry->size(), 0.0);
    m_geometry->state_from_nodal(start.data(), m_initial.data());
    m_geometry->extend_state(m_initial);
    m_log_w0 = log_kernel_mass(m_config.beta, m_config.d);
}

density_solver::~density_solver() = default;

std::vector<double> density_frame_times(const meanfield_config& config) {
    std::vector<double> times;
    const double interval = static_cast<double>(config.every) * config.dt;
    for (std::int64_t j = 0;; ++j) {
        const double t = std::min(config.T, static_cast<double>(j) * interval);
        times.push_back(t);
        if (t >= config.T) break;
    }
    return times;
}

std::vector<double> density_solver::frame_times() const {
    return density_frame_times(m_config);
}

std::vector<double> density_solver::nodal_values(const std::vector<double>& state) const {
    if (m_geometry->state_is_nodal()) return state;
    std::vector<double> rho(m_geometry->size());
    m_geometry->nodal_density(state.data(), rho.data());
    return rho;
}

density_frame density_solver::observe(const std::vector<double>& state, double t, double step) {
    density_geometry& g = *m_geometry;
    const std::size_t d = g.dimension(), n = g.size();
    const std::vector<double> nodal = nodal_values(state);
    const double* rho = nodal.data();
    density_frame f;
    f.time = t;
    f.step_size = step;
    std::vector<double> moment(d, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        const double w = g.weights()[i] * rho[i];
        f.mass += w;
        for (std::size_t c = 0; c < d; ++c)
            moment[c] += w * g.points()[i * d + c];
    }
    // A zonal density's first moment is along e_d only (its nodes stand for whole rings).
    if (g.name() == "zonal")
        for (std::size_t c = 0; c + 1 < d; ++c)
            moment[c] = 0.0;
    for (const double m : moment)
        f.mean_cos += m * m;
    f.r_mean = g.mean_magnitude(state.data());
    if (std::isnan(f.r_mean)) f.r_mean = m_config.r0;
    f.energy = (m_log_w0 + std::log(g.pair_integral(rho))) / m_config.beta;
    f.modes.assign(m_config.modes, 0.0);
    g.modes(rho, m_config.modes, f.modes.data());
    f.peaks = static_cast<std::int64_t>(g.peaks(rho, m_config.peak_floor));
    f.tail = g.state_tail(state.data());
    f.min_density = g.relative_minimum(rho);
    if (!g.state_is_nodal()) f.state = state;
    return f;
}

bool density_solver::resolved(const density_frame& frame) const {
    return frame.tail <= m_config.resolution_tol && frame.min_density >= -m_config.resolution_tol;
}

namespace {

using state = std::vector<double>;

// Odeint's system: the geometry's rate, counting evaluations.
struct density_system {
    density_geometry* geometry;
    std::int64_t* evaluations;
    void operator()(const state& rho, state& drho, double t) const {
        ++*evaluations;
        geometry->rate(rho.data(), t, drho.data());
    }
};

bool all_finite(const state& x) {
    return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

// The resolution check between frames, on the coefficients alone (cheap: one transform).
bool state_resolved(density_geometry& g, const state& x, state& nodal, double tolerance) {
    const double* rho = x.data();
    if (!g.state_is_nodal()) {
        g.nodal_density(x.data(), nodal.data());
        rho = nodal.data();
    }
    if (g.relative_minimum(rho) < -tolerance) return false;
    return g.state_tail(x.data()) <= tolerance;
}

} // namespace

density_summary density_solver::run(const density_frame_sink& sink, const std::atomic<bool>* stop,
                                    const std::optional<density_start>& start) {
    namespace odeint = boost::numeric::odeint;
    const auto began = std::chrono::steady_clock::now();
    const int saved_threads = omp_get_max_threads();
    if (m_config.threads > 0) omp_set_num_threads(m_config.threads);
    struct restore_threads {
        int n;
        bool active;
        ~restore_threads() {
            if (active) omp_set_num_threads(n);
        }
    } restore{saved_threads, m_config.threads > 0};

    density_summary summary;
    state rho = start ? start->rho : m_initial;
    double t = start ? start->time : 0.0;
    double step = start ? start->step : m_config.dt;
    const std::vector<double> times = frame_times();
    std::size_t frame = start ? start->frame : 0;
    density_system system{m_geometry.get(), &summary.evaluations};
    auto finish = [&](density_outcome outcome) {
        summary.outcome = outcome;
        summary.last_time = t;
        summary.wall_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        return summary;
    };
    if (!start) {
        const density_frame first = observe(rho, t, step);
        if (!resolved(first)) {
            summary.unresolved_time = 0.0;
            summary.unresolved_tail = first.tail;
            return finish(density_outcome::unresolved);
        }
        sink(first, nodal_values(rho));
        ++summary.frames;
    }
    auto stepper =
        odeint::make_controlled(m_config.atol, m_config.rtol, odeint::runge_kutta_dopri5<state>());
    state dxdt(rho.size()), previous(rho.size()), nodal(m_geometry->size());
    for (std::size_t next = frame + 1; next < times.size(); ++next) {
        const double target = times[next];
        // A fresh derivative at every frame (not Dormand-Prince's last stage carried over):
        // a resumed run starts from the frame alone, and must continue bit for bit.
        system(rho, dxdt, t);
        while (t < target) {
            if (stop && stop->load(std::memory_order_relaxed)) {
                const density_frame last = observe(rho, t, step);
                if (t > times[next - 1]) {
                    sink(last, nodal_values(rho));
                    ++summary.frames;
                }
                return finish(density_outcome::interrupted);
            }
            const bool landing = step >= target - t;
            double h = landing ? target - t : step;
            const double t_before = t;
            previous = rho;
            const auto result = stepper.try_step(system, rho, dxdt, t, h);
            if (result == odeint::fail) {
                ++summary.rejected;
                step = h;
                if (!(step > 1e-14 * std::max(1.0, std::abs(t))))
                    throw numerical_fault("the step size of the density solver fell below "
                                          "round-off at t = " +
                                          std::to_string(t));
                continue;
            }
            ++summary.steps;
            if (landing) t = target; // exactly, not t_before + (target - t_before)
            // The controller's proposal, unless this step was shortened to land on the frame:
            // then the longer step it had before stays the next try.
            step = landing ? std::max(step, h) : h;
            if (!all_finite(rho)) {
                rho = previous;
                t = t_before;
                throw numerical_fault("the density became non-finite at t = " +
                                      std::to_string(t_before) + "; the frames before are kept");
            }
            if (!state_resolved(*m_geometry, rho, nodal, m_config.resolution_tol)) {
                summary.unresolved_time = t;
                summary.unresolved_tail = m_geometry->state_tail(rho.data());
                rho = previous;
                t = t_before;
                if (t > times[next - 1]) {
                    sink(observe(rho, t, step), nodal_values(rho));
                    ++summary.frames;
                }
                return finish(density_outcome::unresolved);
            }
        }
        sink(observe(rho, t, step), nodal_values(rho));
        ++summary.frames;
    }
    return finish(density_outcome::complete);
}

} // namespace nadyn::meanfield
