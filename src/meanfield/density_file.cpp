#include "nadyn/meanfield/density_file.hpp"

#include "files/hdf5.hpp"
#include "files/output_claim.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"

#include <algorithm>
#include <optional>

namespace nadyn::meanfield {

using detail::hdf5_dataset;
using detail::hdf5_file;
using detail::hdf5_group;

namespace {

constexpr std::uintmax_t margin = detail::output_claim::metadata_margin;

struct series {
    hdf5_dataset value, time, step;
};

series create_series(hdf5_group& parent, const std::string& name, hid_t type,
                     const std::vector<hsize_t>& row, const std::string& description,
                     const std::string& unit) {
    hdf5_group group = parent.create_group(name);
    std::vector<hsize_t> chunk{64};
    for (const hsize_t r : row)
        chunk.push_back(r);
    if (!row.empty()) chunk[0] = 1;
    series s{group.create_series("value", type, row, chunk, false),
             group.create_series("time", H5T_IEEE_F64LE, {}, {64}, false),
             group.create_series("step", H5T_STD_I64LE, {}, {64}, false)};
    group.write_attribute("description", description);
    group.write_attribute("unit", unit);
    s.value.write_attribute("description", description);
    s.value.write_attribute("unit", unit);
    return s;
}

series open_series(const hdf5_group& parent, const std::string& name) {
    const hdf5_group group = parent.open_group(name);
    return {group.open_dataset("value"), group.open_dataset("time"), group.open_dataset("step")};
}

struct observable_row {
    const char* name;
    const char* description;
    const char* unit;
};

constexpr observable_row observable_rows[] = {
    {"mass", "integral of rho over the sphere (sigma the uniform probability): 1 at the start",
     "fraction"},
    {"mean_cos", "‖integral x rho dsigma‖^2, the n -> infinity limit of the particles' mean_cos",
     "cosine"},
    {"r_mean", "integral r rho dsigma, the mean magnitude (r0 for the schemes without one)",
     "magnitude"},
    {"energy",
     "(1/beta) log integral integral exp(beta <x, y>) rho(x) rho(y), the particles' "
     "energy observable of the density",
     "logit / beta"},
    {"modes", "m_k = integral integral G_k(<x, y>) rho rho, k = 1..K, from the coefficients",
     "fraction"},
    {"peaks", "strict local maxima of rho on the grid above peak_floor", "count"},
    {"tail",
     "the resolution diagnostic: the largest coefficient in the top third of the grid's "
     "degrees relative to the mean",
     "fraction"},
    {"min_density", "min rho / max rho on the grid", "fraction"},
    {"step_size", "the step the adaptive integrator tries next", "time"},
};

} // namespace

struct density_writer::impl {
    std::unique_ptr<detail::output_claim> claim;
    hdf5_file file;
    std::optional<series> density;
    std::optional<hdf5_dataset> log_magnitude; // the kinetic form's log r (frames, points)
    std::optional<hdf5_dataset> state;         // a non-nodal state (zonal coefficients)
    std::vector<series> observables;
    std::size_t points = 0, modes = 0;
    bool swmr_started = false;
    std::uintmax_t frame_bytes() const { return (points + 16 + modes) * sizeof(double) * 3 + 4096; }
};

density_writer::density_writer(const std::string& path, const density_solver& solver,
                               bool overwrite)
    : m_path(path) {
    auto claim = std::make_unique<detail::output_claim>(
        detail::output_claim::create(path, overwrite, detail::holds_no_results));
    claim->reserve(margin, "no space for the header of '" + path + "'");
    hdf5_file file = hdf5_file::create(path, true);
    try {
        claim->reserve(margin, "no space for the header of '" + path + "'");
        const meanfield_config& c = solver.config();
        auto& geometry = const_cast<density_solver&>(solver).geometry();
        m_impl = std::make_unique<impl>(impl{std::move(claim),
                                             std::move(file),
                                             std::nullopt,
                                             std::nullopt,
                                             std::nullopt,
                                             {},
                                             geometry.size(),
                                             c.modes});
        impl& f = *m_impl;
        f.file.write_attribute("nadyn_kind", std::string("density"));
        f.file.write_attribute("status", std::string("running"));
        hdf5_group parameters = f.file.create_group("parameters", true);
        const parameter_list recorded = c.to_parameters();
        for (const auto& [name, value] : recorded.entries())
            parameters.write_attribute(name, value);
        hdf5_group density = f.file.create_group("density");
        const hsize_t n = geometry.size(), d = geometry.dimension();
        density.create_dataset("points", {n, d}, geometry.points().data());
        density.create_dataset("weights", {n}, geometry.weights().data());
        f.density =
            series{density.create_series("value", H5T_IEEE_F64LE, {n},
                                         {1, std::min<hsize_t>(n, hsize_t{1} << 17)}, false),
                   density.create_series("time", H5T_IEEE_F64LE, {}, {64}, false),
                   density.create_series("step", H5T_STD_I64LE, {}, {64}, false)};
        f.density->value.write_attribute(
            "description", std::string("the density rho w.r.t. the uniform probability measure "
                                       "at the nodes /density/points"));
        if (!geometry.state_is_nodal()) {
            const hsize_t m = geometry.state_size();
            f.state = density.create_series("state", H5T_IEEE_F64LE, {m},
                                            {1, std::min<hsize_t>(m, hsize_t{1} << 17)}, false);
            f.state->write_attribute(
                "description", std::string("the integrated state (the zonal density's coefficients "
                                           "f_k in the orthonormal p_k), for --resume"));
        }
        if (geometry.state_size() > geometry.size() && geometry.state_is_nodal()) {
            f.log_magnitude =
                density.create_series("log_magnitude", H5T_IEEE_F64LE, {n},
                                      {1, std::min<hsize_t>(n, hsize_t{1} << 17)}, false);
            f.log_magnitude->write_attribute(
                "description", std::string("log r, the magnitude of the tokens at each node (the "
                                           "kinetic form, docs/model.md §16.7)"));
        }
        hdf5_group observables = f.file.create_group("observables", true);
        for (const observable_row& row : observable_rows) {
            const bool wide = std::string(row.name) == "modes";
            const bool count = std::string(row.name) == "peaks";
            f.observables.push_back(
                create_series(observables, row.name, count ? H5T_STD_I64LE : H5T_IEEE_F64LE,
                              wide ? std::vector<hsize_t>{c.modes} : std::vector<hsize_t>{},
                              row.description, row.unit));
        }
        f.file.flush();
    } catch (...) {
        if (m_impl) {
            auto held = std::move(m_impl->claim);
            m_impl.reset();
            held->remove_file();
        }
        throw;
    }
}

density_writer::density_writer(const std::string& path, std::size_t keep_frames) : m_path(path) {
    auto claim = std::make_unique<detail::output_claim>(detail::output_claim::existing(path));
    claim->reserve(margin, "no space to reopen '" + path + "'");
    hdf5_file file = hdf5_file::open_read_write(path, true);
    m_impl = std::make_unique<impl>(impl{
        std::move(claim), std::move(file), std::nullopt, std::nullopt, std::nullopt, {}, 0, 0});
    impl& f = *m_impl;
    f.density = open_series(f.file, "density");
    f.points = f.density->value.shape().at(1);
    if (f.file.has("density/log_magnitude"))
        f.log_magnitude = f.file.open_dataset("density/log_magnitude");
    if (f.file.has("density/state")) f.state = f.file.open_dataset("density/state");
    const hdf5_group observables = f.file.open_group("observables");
    for (const observable_row& row : observable_rows) {
        f.observables.push_back(open_series(observables, row.name));
        if (std::string(row.name) == "modes") f.modes = f.observables.back().value.shape().at(1);
    }
    f.file.write_attribute("status", std::string("running"));
    const auto drop = [&](series& s) {
        s.value.set_rows(keep_frames);
        s.time.set_rows(keep_frames);
        s.step.set_rows(keep_frames);
    };
    drop(*f.density);
    if (f.log_magnitude) f.log_magnitude->set_rows(keep_frames);
    if (f.state) f.state->set_rows(keep_frames);
    for (series& s : f.observables)
        drop(s);
    f.file.flush();
    m_frames = keep_frames;
}

density_writer::~density_writer() = default;

void density_writer::write_frame(const density_frame& frame, const std::vector<double>& rho) {
    if (!m_impl) throw std::logic_error("density_writer::write_frame after finish");
    impl& f = *m_impl;
    try {
        f.claim->reserve(2 * f.frame_bytes() + margin,
                         "no space left for another frame of '" + m_path + "'");
    } catch (const io_error& error) {
        throw io_error(std::string(error.what()) + "; the frames written so far (" +
                       std::to_string(m_frames) + ") are intact");
    }
    if (!f.swmr_started) {
        f.file.flush();
        f.file.start_swmr_write();
        f.swmr_started = true;
    }
    const hsize_t row = m_frames;
    const auto step = static_cast<std::int64_t>(m_frames);
    f.density->value.write_row(row, H5T_NATIVE_DOUBLE, rho.data());
    if (f.log_magnitude) f.log_magnitude->write_row(row, H5T_NATIVE_DOUBLE, rho.data() + f.points);
    if (f.state) f.state->write_row(row, H5T_NATIVE_DOUBLE, frame.state.data());
    for (std::size_t i = 0; i < f.observables.size(); ++i) {
        const std::string name = observable_rows[i].name;
        hdf5_dataset& value = f.observables[i].value;
        if (name == "modes") {
            value.write_row(row, H5T_NATIVE_DOUBLE, frame.modes.data());
            continue;
        }
        if (name == "peaks") {
            value.write_row(row, H5T_NATIVE_INT64, &frame.peaks);
            continue;
        }
        const double scalar = name == "mass"          ? frame.mass
                              : name == "mean_cos"    ? frame.mean_cos
                              : name == "r_mean"      ? frame.r_mean
                              : name == "energy"      ? frame.energy
                              : name == "tail"        ? frame.tail
                              : name == "min_density" ? frame.min_density
                                                      : frame.step_size;
        value.write_row(row, H5T_NATIVE_DOUBLE, &scalar);
    }
    // Times and steps last: a reader counts a frame once every series has it.
    f.density->time.write_row(row, H5T_NATIVE_DOUBLE, &frame.time);
    for (series& s : f.observables)
        s.time.write_row(row, H5T_NATIVE_DOUBLE, &frame.time);
    f.density->step.write_row(row, H5T_NATIVE_INT64, &step);
    for (series& s : f.observables)
        s.step.write_row(row, H5T_NATIVE_INT64, &step);
    f.file.flush();
    ++m_frames;
}

void density_writer::finish(const char* status, const density_summary& summary) {
    if (!m_impl) throw std::logic_error("density_writer::finish called twice");
    m_impl->claim->reserve(margin, "no space to close '" + m_path + "' (its frames, " +
                                       std::to_string(m_frames) +
                                       ", are intact; its status stays 'running')");
    auto claim = std::move(m_impl->claim);
    const bool reopen = m_impl->swmr_started;
    if (reopen) m_impl.reset(); // SWMR forbids attribute writes: close, then reopen
    hdf5_file file = reopen ? hdf5_file::open_read_write(m_path) : std::move(m_impl->file);
    hdf5_group parameters = file.open_group("parameters");
    parameters.write_attribute("steps", summary.steps);
    parameters.write_attribute("rejected_steps", summary.rejected);
    parameters.write_attribute("evaluations", summary.evaluations);
    parameters.write_attribute("wall_seconds", summary.wall_seconds);
    if (summary.outcome == density_outcome::unresolved) {
        file.write_attribute("unresolved_time", summary.unresolved_time);
        file.write_attribute("unresolved_tail", summary.unresolved_tail);
    }
    file.write_attribute("status", std::string(status));
    file.flush();
    file.close();
    m_impl.reset();
}

bool is_density_file(const std::string& path) {
    const auto guard = detail::hdf5_lock();
    const hdf5_file file = hdf5_file::open_read_only(path);
    const auto kind = file.read_attribute("nadyn_kind");
    return kind && std::holds_alternative<std::string>(*kind) &&
           std::get<std::string>(*kind) == "density";
}

density_file read_density_file(const std::string& path, bool with_values) {
    const auto guard = detail::hdf5_lock();
    const hdf5_file file = hdf5_file::open_read_only(path);
    density_file out;
    const auto kind = file.read_attribute("nadyn_kind");
    if (!kind || !std::holds_alternative<std::string>(*kind) ||
        std::get<std::string>(*kind) != "density")
        throw input_error("'" + path + "' is not a density file of nadyn meanfield");
    const auto status = file.read_attribute("status");
    if (status && std::holds_alternative<std::string>(*status))
        out.status = std::get<std::string>(*status);
    const hdf5_group parameters = file.open_group("parameters");
    for (const auto& name : parameters.attribute_names())
        if (const auto v = parameters.read_attribute(name)) out.parameters.set(name, *v);
    const hdf5_group density = file.open_group("density");
    const hdf5_dataset points = density.open_dataset("points");
    out.points = points.shape().at(0);
    out.d = points.shape().at(1);
    out.node_points.resize(out.points * out.d);
    points.read_all(H5T_NATIVE_DOUBLE, out.node_points.data());
    out.weights.resize(out.points);
    density.open_dataset("weights").read_all(H5T_NATIVE_DOUBLE, out.weights.data());
    // A frame counts once its time is written (the last series of a frame).
    const hdf5_dataset time = density.open_dataset("time");
    out.frames = time.shape().at(0);
    out.time.resize(out.frames);
    if (out.frames) time.read_all(H5T_NATIVE_DOUBLE, out.time.data());
    const hdf5_group observables = file.open_group("observables");
    auto read_scalar = [&](const char* name, std::vector<double>& into) {
        const hdf5_dataset v = observables.open_group(name).open_dataset("value");
        into.resize(out.frames);
        if (out.frames) v.read_rows(0, out.frames, H5T_NATIVE_DOUBLE, into.data());
    };
    read_scalar("step_size", out.step_size);
    read_scalar("tail", out.tail);
    for (const observable_row& row : observable_rows) {
        const hdf5_dataset v = observables.open_group(row.name).open_dataset("value");
        const auto shape = v.shape();
        density_file::series s{row.name, shape.size() > 1 ? shape[1] : 1, {}};
        s.values.resize(out.frames * s.width);
        if (out.frames) v.read_rows(0, out.frames, H5T_NATIVE_DOUBLE, s.values.data());
        out.observables.push_back(std::move(s));
    }
    if (const auto t = file.read_attribute("unresolved_time");
        t && std::holds_alternative<double>(*t))
        out.unresolved_time = std::get<double>(*t);
    if (with_values) {
        out.value.resize(out.frames * out.points);
        if (out.frames)
            density.open_dataset("value").read_rows(0, out.frames, H5T_NATIVE_DOUBLE,
                                                    out.value.data());
        if (density.has("log_magnitude")) {
            out.log_magnitude.resize(out.frames * out.points);
            if (out.frames)
                density.open_dataset("log_magnitude")
                    .read_rows(0, out.frames, H5T_NATIVE_DOUBLE, out.log_magnitude.data());
        }
    }
    return out;
}

density_summary run_to_file(density_solver& solver, const std::string& path, bool overwrite,
                            const std::atomic<bool>* stop) {
    density_writer writer(path, solver, overwrite);
    density_summary summary;
    try {
        summary =
            solver.run([&](const density_frame& frame,
                           const std::vector<double>& rho) { writer.write_frame(frame, rho); },
                       stop);
    } catch (const numerical_fault&) {
        summary.frames = writer.frames();
        writer.finish("failed", summary);
        throw;
    }
    writer.finish(to_string(summary.outcome), summary);
    return summary;
}

density_summary resume_file(const std::string& path, const std::atomic<bool>* stop,
                            std::unique_ptr<density_solver>* solver_out) {
    const density_file file = read_density_file(path, false);
    if (file.status == "complete")
        throw input_error("'" + path + "' is complete: nothing to resume");
    if (file.frames == 0)
        throw input_error("'" + path + "' holds no frame to resume from; run it again");
    auto solver =
        std::make_unique<density_solver>(meanfield_config::from_parameters(file.parameters));
    if (solver->geometry().size() != file.points)
        throw input_error("'" + path + "' does not match its own parameters (its grid has " +
                          std::to_string(file.points) + " points)");
    // The frame to continue from: the last one on the uninterrupted run's frame times (an
    // interrupted or unresolved run's extra last frame is dropped and recomputed).
    const std::vector<double> times = solver->frame_times();
    std::size_t keep = 0;
    while (keep < file.frames && keep < times.size() && file.time[keep] == times[keep])
        ++keep;
    if (keep == 0) throw input_error("'" + path + "' has no frame at t = 0 to resume from");
    density_start start;
    start.frame = keep - 1;
    start.time = times[start.frame];
    start.step = file.step_size[start.frame];
    start.rho.resize(solver->geometry().state_size());
    {
        const auto guard = detail::hdf5_lock();
        const hdf5_file reader = hdf5_file::open_read_only(path);
        if (reader.has("density/state"))
            reader.open_dataset("density/state")
                .read_rows(start.frame, 1, H5T_NATIVE_DOUBLE, start.rho.data());
        else
            reader.open_dataset("density/value")
                .read_rows(start.frame, 1, H5T_NATIVE_DOUBLE, start.rho.data());
        if (start.rho.size() > file.points)
            reader.open_dataset("density/log_magnitude")
                .read_rows(start.frame, 1, H5T_NATIVE_DOUBLE, start.rho.data() + file.points);
    }
    density_writer writer(path, keep);
    density_summary summary;
    try {
        summary =
            solver->run([&](const density_frame& frame,
                            const std::vector<double>& rho) { writer.write_frame(frame, rho); },
                        stop, start);
    } catch (const numerical_fault&) {
        writer.finish("failed", summary);
        throw;
    }
    summary.frames = writer.frames();
    writer.finish(to_string(summary.outcome), summary);
    if (solver_out) *solver_out = std::move(solver);
    return summary;
}

} // namespace nadyn::meanfield
