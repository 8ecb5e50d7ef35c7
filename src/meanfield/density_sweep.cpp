#include "nadyn/meanfield/density_sweep.hpp"

#include "files/hdf5.hpp"
#include "files/output_claim.hpp"
#include "files/sweep_arrays.hpp"
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

namespace nadyn::meanfield {

using detail::hdf5_dataset;
using detail::hdf5_file;
using detail::hdf5_string_type;

namespace {

// One key of a meanfield experiment: its type (for the file's syntax checks and the axis's
// dataset type) and how its text sets the configuration (as nadyn meanfield's flag does).
struct density_key {
    const char* name;
    value_type type;
    void (*assign)(meanfield_config&, const std::string&);
};

std::size_t count(const std::string& text, const char* what) {
    const std::int64_t v = parse_integer(text, what);
    if (v < 0) throw input_error(std::string(what) + " must be >= 0, got " + text);
    return static_cast<std::size_t>(v);
}

constexpr density_key density_keys[] = {
    {"geometry", value_type::name,
     [](meanfield_config& c, const std::string& t) { c.geometry = parse_geometry(t); }},
    {"d", value_type::integer,
     [](meanfield_config& c, const std::string& t) { c.d = count(t, "d"); }},
    {"points", value_type::integer,
     [](meanfield_config& c, const std::string& t) { c.points = count(t, "points"); }},
    {"degree", value_type::integer,
     [](meanfield_config& c, const std::string& t) { c.degree = count(t, "degree"); }},
    {"beta", value_type::number,
     [](meanfield_config& c, const std::string& t) { c.beta = parse_number(t, "beta"); }},
    {"r0", value_type::number,
     [](meanfield_config& c, const std::string& t) { c.r0 = parse_number(t, "r0"); }},
    {"scheme", value_type::name,
     [](meanfield_config& c, const std::string& t) { c.scheme.id = parse_scheme(t); }},
    {"alpha", value_type::number,
     [](meanfield_config& c, const std::string& t) { c.scheme.alpha = parse_number(t, "alpha"); }},
    {"t_switch", value_type::number,
     [](meanfield_config& c, const std::string& t) { c.t_switch = parse_number(t, "t_switch"); }},
    {"T", value_type::number,
     [](meanfield_config& c, const std::string& t) { c.T = parse_number(t, "T"); }},
    {"dt", value_type::number,
     [](meanfield_config& c, const std::string& t) { c.dt = parse_number(t, "dt"); }},
    {"every", value_type::integer,
     [](meanfield_config& c, const std::string& t) { c.every = parse_integer(t, "every"); }},
    {"rtol", value_type::number,
     [](meanfield_config& c, const std::string& t) { c.rtol = parse_number(t, "rtol"); }},
    {"atol", value_type::number,
     [](meanfield_config& c, const std::string& t) { c.atol = parse_number(t, "atol"); }},
    {"init", value_type::name,
     [](meanfield_config& c, const std::string& t) { c.init = density_init::parse(t); }},
    {"weights", value_type::name,
     [](meanfield_config& c, const std::string& t) {
         const std::size_t heads = c.weights.heads;
         const value_family value = c.weights.value;
         c.weights = weights_spec::parse(t);
         c.weights.heads = heads;
         c.weights.value = value;
     }},
    {"heads", value_type::integer,
     [](meanfield_config& c, const std::string& t) { c.weights.heads = count(t, "heads"); }},
    {"value", value_type::name,
     [](meanfield_config& c, const std::string& t) { c.weights.value = parse_value_family(t); }},
    {"head_combine", value_type::name,
     [](meanfield_config& c, const std::string& t) { c.combine = parse_head_combine(t); }},
    {"seed", value_type::integer,
     [](meanfield_config& c, const std::string& t) {
         c.seed = static_cast<std::uint64_t>(count(t, "seed"));
     }},
    {"mode_count", value_type::integer,
     [](meanfield_config& c, const std::string& t) { c.modes = count(t, "mode_count"); }},
    {"resolution_tol", value_type::number,
     [](meanfield_config& c, const std::string& t) {
         c.resolution_tol = parse_number(t, "resolution_tol");
     }},
    {"peak_floor", value_type::number,
     [](meanfield_config& c, const std::string& t) {
         c.peak_floor = parse_number(t, "peak_floor");
     }},
    {"threads", value_type::integer,
     [](meanfield_config& c, const std::string& t) {
         c.threads = static_cast<int>(count(t, "threads"));
     }},
};

const density_key* find_key(std::string_view name) {
    for (const density_key& k : density_keys)
        if (name == k.name) return &k;
    return nullptr;
}

// Axes that change a run's frame times, or its grid.
bool moves_times(const std::string& axis) {
    return axis == "T" || axis == "dt" || axis == "every";
}
bool moves_grid(const std::string& axis) {
    return axis == "geometry" || axis == "d" || axis == "points" || axis == "degree";
}

// Scalars of each frame, in file order (modes is written apart, with its width).
constexpr const char* scalar_names[] = {"mass",  "mean_cos", "r_mean",      "energy",
                                        "peaks", "tail",     "min_density", "step_size"};
double scalar_of(const density_frame& f, std::size_t i) {
    switch (i) {
    case 0:
        return f.mass;
    case 1:
        return f.mean_cos;
    case 2:
        return f.r_mean;
    case 3:
        return f.energy;
    case 4:
        return static_cast<double>(f.peaks);
    case 5:
        return f.tail;
    case 6:
        return f.min_density;
    default:
        return f.step_size;
    }
}

enum : signed char {
    not_run = 0,
    run_complete = 1,
    run_interrupted = 2,
    run_failed = 3,
    run_unresolved = 4
};

} // namespace

std::string density_experiment_keys() {
    std::string names;
    for (const density_key& k : density_keys)
        names += std::string(names.empty() ? "" : ", ") + k.name;
    return names + ", density (none, final, all), model";
}

density_experiment density_experiment::parse(const std::string& text, const std::string& source,
                                             const std::vector<std::string>& overrides) {
    density_experiment e;
    e.source = source;
    e.text = text;
    e.overrides = overrides;
    const auto key_type = [](std::string_view name) -> std::optional<value_type> {
        if (name == "density") return value_type::name;
        if (const density_key* k = find_key(name)) return k->type;
        return std::nullopt;
    };
    const experiment_tables tables =
        parse_experiment_tables(text, source, overrides, key_type, density_experiment_keys());
    for (const auto& [name, value] : tables.run) {
        if (name == "density") {
            if (value == "none")
                e.density = sweep_density::none;
            else if (value == "final")
                e.density = sweep_density::final;
            else if (value == "all")
                e.density = sweep_density::all;
            else
                throw input_error(source + ": key 'run.density': unknown value '" + value +
                                  "'; valid values: none, final, all");
            continue;
        }
        try {
            find_key(name)->assign(e.base, value);
        } catch (const input_error& error) {
            throw input_error(source + ": key 'run." + name + "': " + error.what());
        }
    }
    for (const sweep_axis& axis : tables.axes) {
        if (axis.name == "density")
            throw input_error(source + ": key 'sweep.density': what the file keeps cannot vary; "
                                       "set it in [run]");
        if (axis.name == "threads")
            throw input_error(source + ": key 'sweep.threads': the thread count does not change "
                                       "a run's outcome; set it in [run]");
        e.axes.push_back(axis);
    }
    std::size_t runs = 1;
    for (const auto& axis : e.axes) {
        if (axis.values.size() > std::size_t{10000000} / runs)
            throw input_error(source + ": the sweep has more than 1e7 runs");
        runs *= axis.values.size();
    }
    // Every run must be valid before anything is written.
    bool grid_varies = false;
    for (const auto& axis : e.axes)
        grid_varies = grid_varies || moves_grid(axis.name);
    if (grid_varies && e.density != sweep_density::none)
        throw input_error(source + ": the runs' grids differ (an axis of geometry, d, points or "
                                   "degree), so their densities share no array; set "
                                   "run.density = \"none\" or hold the grid fixed");
    for (std::size_t i = 0; i < runs; ++i) {
        try {
            e.point(i).validate();
        } catch (const input_error& error) {
            throw input_error(source + ": run " + std::to_string(i) + " (" + e.label(i) +
                              "): " + error.what());
        }
    }
    return e;
}

density_experiment density_experiment::from_file(const std::string& path) {
    if (!is_density_sweep_file(path))
        throw input_error("'" + path + "' is not a sweep file of the density solver");
    std::string text, source, overrides;
    {
        const auto guard = detail::hdf5_lock();
        const hdf5_file file = hdf5_file::open_read_only(path);
        auto attribute = [&](const char* name) {
            const auto v = file.read_attribute(name);
            if (!v || !std::holds_alternative<std::string>(*v))
                throw input_error("'" + path + "' has no '" + name + "' attribute to resume from");
            return std::get<std::string>(*v);
        };
        text = attribute("experiment");
        source = attribute("experiment_path");
        overrides = attribute("overrides_text");
    }
    std::vector<std::string> list;
    for (std::size_t start = 0; start < overrides.size();) {
        const std::size_t end = overrides.find('\n', start);
        list.push_back(overrides.substr(start, end - start));
        start = end == std::string::npos ? overrides.size() : end + 1;
    }
    return parse(text, source, list);
}

std::size_t density_experiment::size() const {
    std::size_t n = 1;
    for (const auto& axis : axes)
        n *= axis.values.size();
    return n;
}

meanfield_config density_experiment::point(std::size_t index) const {
    meanfield_config c = base;
    std::size_t rest = index;
    for (std::size_t a = axes.size(); a-- > 0;) {
        const std::size_t length = axes[a].values.size();
        find_key(axes[a].name)->assign(c, axes[a].values[rest % length]);
        rest /= length;
    }
    return c;
}

std::string density_experiment::label(std::size_t index) const {
    std::string text;
    std::size_t rest = index;
    std::vector<std::string> parts(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
        const std::size_t length = axes[a].values.size();
        parts[a] = axes[a].name + "=" + axes[a].values[rest % length];
        rest /= length;
    }
    for (const auto& p : parts)
        text += (text.empty() ? "" : " ") + p;
    return text.empty() ? "the run" : text;
}

bool is_density_sweep_file(const std::string& path) {
    const auto guard = detail::hdf5_lock();
    if (!hdf5_file::is_hdf5(path)) return false;
    const hdf5_file file = hdf5_file::open_read_only(path);
    const auto kind = file.read_attribute("nadyn_kind");
    const auto model = file.read_attribute("model");
    return kind && std::holds_alternative<std::string>(*kind) &&
           std::get<std::string>(*kind) == "sweep" && model &&
           std::holds_alternative<std::string>(*model) &&
           std::get<std::string>(*model) == "meanfield";
}

namespace {

// The file's shape, from the experiment alone (a resumed sweep recomputes the same).
struct density_layout {
    std::vector<hsize_t> axes;
    bool shared_times = true;
    std::vector<double> times; // shared_times: every run's frame times
    hsize_t frames = 0;        // the longest run's frame count
    hsize_t modes = 0;         // the largest mode_count
    hsize_t points = 0, dims = 0;
    std::vector<double> node_points, node_weights;
};

density_layout layout_of(const density_experiment& e) {
    density_layout L;
    for (const auto& axis : e.axes) {
        L.axes.push_back(axis.values.size());
        if (moves_times(axis.name)) L.shared_times = false;
    }
    for (std::size_t i = 0; i < e.size(); ++i) {
        const meanfield_config c = e.point(i);
        L.frames = std::max<hsize_t>(L.frames, density_frame_times(c).size());
        L.modes = std::max<hsize_t>(L.modes, c.modes);
    }
    if (L.shared_times) L.times = density_frame_times(e.base);
    if (e.density != sweep_density::none) {
        density_solver probe(e.point(0));
        L.points = probe.geometry().size();
        L.dims = probe.geometry().dimension();
        L.node_points = probe.geometry().points();
        L.node_weights = probe.geometry().weights();
    }
    return L;
}

class density_sweep_file {
  public:
    density_sweep_file(const std::string& path, const density_experiment& e,
                       const density_layout& layout, bool overwrite, bool resume)
        : m_layout(layout) {
        if (resume) {
            m_claim = std::make_unique<detail::output_claim>(detail::output_claim::existing(path));
            m_claim->reserve(detail::output_claim::metadata_margin,
                             "no space to reopen '" + path + "'");
            m_file.emplace(hdf5_file::open_read_write(path, true));
            const auto text = m_file->read_attribute("experiment");
            const auto given = m_file->read_attribute("overrides_text");
            std::string overrides;
            for (const auto& o : e.overrides)
                overrides += o + "\n";
            if (!text || !given || std::get<std::string>(*text) != e.text ||
                std::get<std::string>(*given) != overrides)
                throw input_error("'" + path +
                                  "' was made by another experiment (its recorded "
                                  "experiment text or --set overrides differ); resume it with "
                                  "the same file and overrides");
            m_status.assign(e.size(), not_run);
            if (!m_status.empty())
                m_file->open_dataset("status").read_all(H5T_NATIVE_SCHAR, m_status.data());
            m_file->write_attribute("status", std::string("running"));
            return;
        }
        m_claim = std::make_unique<detail::output_claim>(
            detail::output_claim::create(path, overwrite, detail::holds_no_results));
        m_claim->reserve(detail::output_claim::metadata_margin,
                         "no space for the header of '" + path + "'");
        m_file.emplace(hdf5_file::create(path, false));
        try {
            create(e);
        } catch (...) {
            m_file.reset();
            m_claim->remove_file();
            throw;
        }
        m_status.assign(e.size(), not_run);
    }

    [[nodiscard]] signed char status(std::size_t run) const { return m_status[run]; }

    void write_run(const density_experiment& e, std::size_t run, signed char outcome,
                   const std::vector<density_frame>& frames,
                   const std::vector<std::vector<double>>& values, const density_summary& summary,
                   const std::string& parameters) {
        const density_layout& L = m_layout;
        const std::uintmax_t bytes =
            (L.frames * (8 + L.modes) + (values.empty() ? 0 : values.size() * L.points)) * 8 +
            65536;
        m_claim->reserve(bytes, "no space for run " + std::to_string(run) + " of the sweep");
        const std::vector<hsize_t> point = coordinates(e, run);
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const hsize_t count = frames.size();
        if (count) {
            std::vector<double> series(count);
            for (std::size_t i = 0; i < std::size(scalar_names); ++i) {
                for (hsize_t f = 0; f < count; ++f)
                    series[f] = scalar_of(frames[f], i);
                write(scalar_names[i], point, {count}, series.data(), H5T_NATIVE_DOUBLE);
            }
            std::vector<double> modes(count * L.modes, nan);
            for (hsize_t f = 0; f < count; ++f)
                std::copy(frames[f].modes.begin(), frames[f].modes.end(),
                          modes.begin() + static_cast<std::ptrdiff_t>(f * L.modes));
            write("modes", point, {count, L.modes}, modes.data(), H5T_NATIVE_DOUBLE);
            if (!L.shared_times) {
                for (hsize_t f = 0; f < count; ++f)
                    series[f] = frames[f].time;
                write("time", point, {count}, series.data(), H5T_NATIVE_DOUBLE);
            }
            if (!values.empty() && values.size() == 1)
                write("density", point, {L.points}, values.front().data(), H5T_NATIVE_DOUBLE);
            else if (!values.empty()) {
                std::vector<double> all;
                for (const auto& v : values)
                    all.insert(all.end(), v.begin(), v.end());
                write("density", point, {values.size(), L.points}, all.data(), H5T_NATIVE_DOUBLE);
            }
        }
        const auto frame_count = static_cast<std::int64_t>(count);
        write("frames", point, {}, &frame_count, H5T_NATIVE_INT64);
        write("evaluations", point, {}, &summary.evaluations, H5T_NATIVE_INT64);
        write("wall_time", point, {}, &summary.wall_seconds, H5T_NATIVE_DOUBLE);
        const double unresolved = outcome == run_unresolved ? summary.unresolved_time : nan;
        write("unresolved_time", point, {}, &unresolved, H5T_NATIVE_DOUBLE);
        const char* text = parameters.c_str();
        write("parameters", point, {}, &text, hdf5_string_type());
        m_file->flush();
        // The status last: a run counts as done once everything else of it is on disk.
        write("status", point, {}, &outcome, H5T_NATIVE_SCHAR);
        m_file->flush();
        m_status[run] = outcome;
    }

    void finish(const std::string& status) {
        m_claim->reserve(detail::output_claim::metadata_margin, "no space to close the sweep file");
        m_file->write_attribute("status", status);
        m_file->flush();
    }

  private:
    std::vector<hsize_t> coordinates(const density_experiment& e, std::size_t run) const {
        std::vector<hsize_t> point(e.axes.size());
        std::size_t rest = run;
        for (std::size_t a = e.axes.size(); a-- > 0;) {
            point[a] = rest % e.axes[a].values.size();
            rest /= e.axes[a].values.size();
        }
        return point;
    }

    void write(const std::string& name, const std::vector<hsize_t>& point,
               const std::vector<hsize_t>& rest, const void* data, hid_t type) {
        detail::write_run_block(*m_file, name, point, rest, data, type);
    }

    // The axes as the file's coordinates: each of its key's type.
    static std::vector<sweep_file_axis> file_axes(const density_experiment& e) {
        std::vector<sweep_file_axis> axes;
        for (const auto& axis : e.axes)
            axes.push_back(file_axis(axis, find_key(axis.name)->type,
                                     "sweep axis: nadyn meanfield's " + axis.name));
        return axes;
    }

    void create(const density_experiment& e) {
        const density_layout& L = m_layout;
        hdf5_file& file = *m_file;
        file.write_attribute("nadyn_kind", std::string("sweep"));
        file.write_attribute("model", std::string("meanfield"));
        file.write_attribute("experiment", e.text);
        file.write_attribute("experiment_path", e.source);
        std::string overrides;
        for (const auto& o : e.overrides)
            overrides += o + "\n";
        file.write_attribute("overrides_text", overrides);
        std::vector<std::string> axis_names;
        for (const auto& axis : e.axes)
            axis_names.push_back(axis.name);
        if (!axis_names.empty()) file.write_attribute("axes", axis_names);
        file.write_attribute("density", std::string(e.density == sweep_density::none    ? "none"
                                                    : e.density == sweep_density::final ? "final"
                                                                                        : "all"));
        file.write_attribute("status", std::string("running"));
        detail::sweep_arrays arrays(file, file_axes(e)); // the axes' scales
        const auto scale = [&](const std::string& name, hid_t type, std::size_t length,
                               const void* values, const std::string& text) {
            return arrays.scale(name, type, length, values, text);
        };
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::optional<hdf5_dataset> time_scale;
        if (L.shared_times) {
            time_scale = scale("time", H5T_NATIVE_DOUBLE, L.frames, L.times.data(),
                               "frame time t of every run");
        } else {
            std::vector<std::int64_t> index(L.frames);
            std::iota(index.begin(), index.end(), 0);
            time_scale = scale("frame", H5T_NATIVE_INT64, L.frames, index.data(),
                               "frame index (the runs' frame times differ: see time)");
        }
        std::vector<std::int64_t> degrees(L.modes);
        std::iota(degrees.begin(), degrees.end(), 1);
        const hdf5_dataset mode_scale =
            scale("mode", H5T_NATIVE_INT64, L.modes, degrees.data(), "degree k of modes");
        std::optional<hdf5_dataset> point_scale;
        if (e.density != sweep_density::none) {
            std::vector<std::int64_t> index(L.points);
            std::iota(index.begin(), index.end(), 0);
            point_scale = scale("point", H5T_NATIVE_INT64, L.points, index.data(),
                                "the grid's node index (/points, /weights)");
            std::vector<std::int64_t> dims(L.dims);
            std::iota(dims.begin(), dims.end(), 0);
            const hdf5_dataset dim_scale =
                scale("dim", H5T_NATIVE_INT64, L.dims, dims.data(), "coordinate index");
            hdf5_dataset points =
                file.create_dataset("points", H5T_NATIVE_DOUBLE, {L.points, L.dims});
            points.write_all(H5T_NATIVE_DOUBLE, L.node_points.data());
            points.attach_scale(*point_scale, 0);
            points.attach_scale(dim_scale, 1);
            points.write_attribute("description", std::string("the grid's nodes"));
            hdf5_dataset weights = file.create_dataset("weights", H5T_NATIVE_DOUBLE, {L.points});
            weights.write_all(H5T_NATIVE_DOUBLE, L.node_weights.data());
            weights.attach_scale(*point_scale, 0);
            weights.write_attribute("description",
                                    std::string("quadrature weights: sum_i w_i rho_i is the mass"));
        }
        auto variable = [&](const std::string& name, hid_t type, const std::vector<hsize_t>& rest,
                            const std::vector<const hdf5_dataset*>& rest_scales, const void* fill,
                            const std::string& text) {
            (void)arrays.variable(name, type, rest, rest_scales, fill, text);
        };
        const std::vector<const hdf5_dataset*> by_time{&*time_scale};
        if (!L.shared_times)
            variable("time", H5T_NATIVE_DOUBLE, {L.frames}, by_time, &nan,
                     "frame time t of each run (NaN after its last frame)");
        const char* descriptions[] = {"integral rho dsigma",
                                      "‖integral x rho dsigma‖^2",
                                      "integral r rho dsigma",
                                      "(1/beta) log integral integral exp(beta <x, y>) rho rho",
                                      "local maxima of rho above peak_floor",
                                      "the resolution diagnostic (top-third coefficients / mean)",
                                      "min rho / max rho",
                                      "the step the integrator tries next"};
        for (std::size_t i = 0; i < std::size(scalar_names); ++i)
            variable(scalar_names[i], H5T_NATIVE_DOUBLE, {L.frames}, by_time, &nan,
                     std::string(descriptions[i]) + " (docs/model.md §16.6; NaN: no such frame)");
        variable("modes", H5T_NATIVE_DOUBLE, {L.frames, L.modes}, {&*time_scale, &mode_scale}, &nan,
                 "m_k = integral integral G_k(<x, y>) rho rho (docs/model.md §16.6)");
        if (e.density == sweep_density::final)
            variable("density", H5T_NATIVE_DOUBLE, {L.points}, {&*point_scale}, &nan,
                     "rho at the nodes at each run's last frame");
        else if (e.density == sweep_density::all)
            variable("density", H5T_NATIVE_DOUBLE, {L.frames, L.points},
                     {&*time_scale, &*point_scale}, &nan, "rho at the nodes at every frame");
        const signed char zero = 0;
        const std::int64_t zero64 = 0;
        variable("status", H5T_NATIVE_SCHAR, {}, {}, &zero,
                 "0 not run, 1 complete, 2 interrupted, 3 failed, 4 unresolved (the grid lost "
                 "the density, docs/model.md §16.5)");
        variable("frames", H5T_NATIVE_INT64, {}, {}, &zero64, "frames each run wrote");
        variable("evaluations", H5T_NATIVE_INT64, {}, {}, &zero64, "right-hand-side evaluations");
        variable("wall_time", H5T_NATIVE_DOUBLE, {}, {}, &nan, "each run's wall time (s)");
        variable("unresolved_time", H5T_NATIVE_DOUBLE, {}, {}, &nan,
                 "when the grid lost the density (status 4), else NaN");
        variable("parameters", hdf5_string_type(), {}, {}, nullptr,
                 "each run's full parameter record");
        file.flush();
    }

    density_layout m_layout;
    std::unique_ptr<detail::output_claim> m_claim;
    std::optional<hdf5_file> m_file;
    std::vector<signed char> m_status;
};

std::string parameter_text(const meanfield_config& c) {
    std::string text;
    const parameter_list recorded = c.to_parameters();
    for (const auto& [name, value] : recorded.entries()) {
        if (name == "command_line" || name == "nadyn_version" || name == "git_commit") continue;
        text += (text.empty() ? "" : "; ") + name + "=" + to_display_string(value);
    }
    return text;
}

} // namespace

density_sweep_summary run_density_sweep(
    const density_experiment& e, const std::string& path, bool overwrite, bool resume,
    const std::atomic<bool>* stop,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress) {
    const auto began = std::chrono::steady_clock::now();
    const density_layout layout = layout_of(e);
    density_sweep_file file(path, e, layout, overwrite, resume);
    density_sweep_summary summary;
    summary.runs = e.size();
    for (std::size_t run = 0; run < e.size(); ++run) {
        const signed char done = file.status(run);
        if (done == run_complete || done == run_unresolved) {
            (done == run_complete ? summary.complete : summary.unresolved)++;
            continue;
        }
        if (stop && stop->load()) {
            summary.stopped = true;
            break;
        }
        density_solver solver(e.point(run));
        std::vector<density_frame> frames;
        std::vector<std::vector<double>> values;
        signed char outcome = run_complete;
        density_summary s;
        try {
            s = solver.run(
                [&](const density_frame& frame, const std::vector<double>& rho) {
                    frames.push_back(frame);
                    if (e.density == sweep_density::all) values.push_back(rho);
                    if (e.density == sweep_density::final) {
                        values.assign(1, rho);
                    }
                },
                stop);
            outcome = s.outcome == density_outcome::complete     ? run_complete
                      : s.outcome == density_outcome::unresolved ? run_unresolved
                                                                 : run_interrupted;
        } catch (const numerical_fault&) {
            outcome = run_failed;
        }
        file.write_run(e, run, outcome, frames, values, s, parameter_text(solver.config()));
        switch (outcome) {
        case run_complete:
            ++summary.complete;
            break;
        case run_unresolved:
            ++summary.unresolved;
            break;
        case run_failed:
            ++summary.failed;
            break;
        default:
            ++summary.interrupted;
            summary.stopped = true;
            break;
        }
        if (progress) progress(run + 1, e.size(), e.label(run));
        if (summary.stopped) break;
    }
    const bool finished = summary.complete + summary.unresolved + summary.failed == summary.runs;
    file.finish(summary.stopped ? "interrupted" : finished ? "complete" : "running");
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return summary;
}

} // namespace nadyn::meanfield
