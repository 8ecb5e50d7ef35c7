#include "nadyn/sweep.hpp"

#include "nadyn/detail/hdf5.hpp"
#include "nadyn/error.hpp"
#include "nadyn/parameter_registry.hpp"
#include "nadyn/run.hpp"
#include "nadyn/version.hpp"

#include <hdf5.h>
#include <hdf5_hl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

namespace nadyn {

namespace {

using detail::hdf5_lock;

enum run_status_code : signed char { not_run = 0, done = 1, stopped = 2, broken = 3 };

void check(herr_t status, const std::string& what) {
    if (status < 0) throw io_error("HDF5 failed to " + what);
}

hid_t checked(hid_t id, const std::string& what) {
    if (id < 0) throw io_error("HDF5 failed to " + what);
    return id;
}

// An hid_t closed by its function at scope end.
struct handle {
    hid_t id = H5I_INVALID_HID;
    herr_t (*close)(hid_t) = nullptr;
    handle(hid_t i, herr_t (*c)(hid_t), const std::string& what) : id(checked(i, what)), close(c) {}
    handle(const handle&) = delete;
    handle& operator=(const handle&) = delete;
    ~handle() {
        if (id >= 0 && close) close(id);
    }
    operator hid_t() const { return id; }
};

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return buffer;
}

// The frame times a run writes when it is not stopped (the contract of integrate()).
std::vector<double> frame_times(const run_config& c) {
    const integration_settings s = c.resolved_integration();
    std::vector<double> times;
    if (s.kind == integrator_kind::dopri5) {
        const double interval = static_cast<double>(s.every) * s.dt;
        for (std::int64_t j = 0;; ++j) {
            const double t = std::min(s.T, static_cast<double>(j) * interval);
            times.push_back(t);
            if (t >= s.T) break;
        }
        return times;
    }
    const std::int64_t steps = step_count(s.T, s.dt);
    for (std::int64_t i = 0; i <= steps; ++i)
        if (i % s.every == 0 || i == steps)
            times.push_back(i == steps ? s.T : static_cast<double>(i) * s.dt);
    return times;
}

// Bytes of one run's workspaces (run_config's estimate) for the memory check.
double run_bytes(const run_config& c) {
    return 8.0 * (14.0 * double(c.n) * double(c.d) + 256.0 * double(c.n) * 8.0);
}

double evaluations_per_step(integrator_kind kind) {
    switch (kind) {
    case integrator_kind::rk4:
        return 4.0;
    case integrator_kind::dopri5:
        return 6.0;
    case integrator_kind::euler:
    case integrator_kind::layers:
        return 1.0;
    }
    return 1.0;
}

// The shape of the result, fixed before any run starts.
struct sweep_layout {
    std::vector<hsize_t> axes;        // axis lengths
    std::vector<double> times;        // shared frame times, or the longest grid
    bool shared_times = true;         // every run writes the same frame times
    std::size_t frames = 0;           // length of the time/frame dimension
    std::size_t tokens = 0, dims = 0; // largest n, d
};

sweep_layout layout_of(const experiment& e) {
    sweep_layout layout;
    for (const auto& axis : e.axes)
        layout.axes.push_back(axis.values.size());
    bool first = true;
    for (std::size_t i = 0; i < e.size(); ++i) {
        const run_config c = e.point(i);
        const auto times = frame_times(c);
        if (first) {
            layout.times = times;
            first = false;
        } else if (times != layout.times) {
            layout.shared_times = false;
            if (times.size() > layout.times.size()) layout.times = times;
        }
        layout.tokens = std::max(layout.tokens, c.n);
        layout.dims = std::max(layout.dims, c.d);
    }
    layout.frames = layout.times.size();
    return layout;
}

std::vector<hsize_t> concat(std::vector<hsize_t> a, const std::vector<hsize_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// What one run produced, written under the HDF5 lock when the run ends.
struct run_record {
    std::size_t index = 0;
    signed char status = not_run;
    std::vector<std::vector<double>> observables; // per observable, per frame (NaN: absent)
    std::vector<double> times;                    // when the time grid is per run
    std::vector<double> positions, magnitudes;    // final or all frames, padded
    std::int64_t frames = 0, rhs = 0, accepted = 0;
    double wall = 0.0;
    std::string parameters;
    std::string failure;
};

class sweep_file {
  public:
    // Creates the file with every dataset at its full size (filled with NaN / 0).
    sweep_file(const std::string& path, const experiment& e, const sweep_layout& layout,
               bool overwrite)
        : m_path(path), m_layout(layout), m_positions(e.positions) {
        auto guard = hdf5_lock();
        m_file = detail::hdf5_file::create(path, overwrite);
        write_header(e);
        create_datasets(e);
    }
    // Opens an existing sweep file to fill in what is missing.
    sweep_file(const std::string& path, const experiment& e, const sweep_layout& layout)
        : m_path(path), m_layout(layout), m_positions(e.positions) {
        auto guard = hdf5_lock();
        m_file = detail::hdf5_file::open_read_write(path);
    }

    std::vector<signed char> statuses() {
        auto guard = hdf5_lock();
        const auto status = m_file->open_dataset("status");
        std::size_t count = 1;
        for (hsize_t n : m_layout.axes)
            count *= n;
        std::vector<signed char> out(count);
        status.read_all(H5T_NATIVE_SCHAR, out.data());
        return out;
    }

    void write(const experiment& e, const run_record& record) {
        auto guard = hdf5_lock();
        const auto at = e.coordinates(record.index);
        const std::vector<hsize_t> point(at.begin(), at.end());
        const hsize_t frames = m_layout.frames;
        for (std::size_t o = 0; o < observable_names.size(); ++o)
            write_block(std::string(observable_names[o]), point, {frames},
                        record.observables[o].data(), H5T_NATIVE_DOUBLE);
        if (!m_layout.shared_times)
            write_block("time", point, {frames}, record.times.data(), H5T_NATIVE_DOUBLE);
        const hsize_t n = m_layout.tokens, d = m_layout.dims;
        if (m_positions == sweep_positions::final) {
            write_block("positions", point, {n, d}, record.positions.data(), H5T_NATIVE_DOUBLE);
            write_block("magnitudes", point, {n}, record.magnitudes.data(), H5T_NATIVE_DOUBLE);
        } else if (m_positions == sweep_positions::all) {
            write_block("positions", point, {frames, n, d}, record.positions.data(),
                        H5T_NATIVE_DOUBLE);
            write_block("magnitudes", point, {frames, n}, record.magnitudes.data(),
                        H5T_NATIVE_DOUBLE);
        }
        write_block("status", point, {}, &record.status, H5T_NATIVE_SCHAR);
        write_block("frames", point, {}, &record.frames, H5T_NATIVE_INT64);
        write_block("rhs_evaluations", point, {}, &record.rhs, H5T_NATIVE_INT64);
        write_block("accepted_steps", point, {}, &record.accepted, H5T_NATIVE_INT64);
        write_block("wall_time", point, {}, &record.wall, H5T_NATIVE_DOUBLE);
        const char* text = record.parameters.c_str();
        write_block("parameters", point, {}, &text, string_type());
        m_file->flush();
    }

    void finish(const std::string& status, const sweep_summary& summary) {
        auto guard = hdf5_lock();
        m_file->write_attribute("status", status);
        m_file->write_attribute("finished", utc_now());
        m_file->write_attribute("runs_failed", static_cast<std::int64_t>(summary.failed));
        m_file->flush();
    }

  private:
    static hid_t string_type() {
        static const hid_t type = [] {
            const hid_t t = H5Tcopy(H5T_C_S1);
            H5Tset_size(t, H5T_VARIABLE);
            H5Tset_cset(t, H5T_CSET_UTF8);
            return t;
        }();
        return type;
    }

    void write_header(const experiment& e) {
        detail::hdf5_file& f = *m_file;
        f.write_attribute("nadyn_kind", std::string("sweep"));
        f.write_attribute("status", std::string("running"));
        f.write_attribute("experiment", e.text);
        f.write_attribute("experiment_source", e.source);
        std::vector<std::string> overrides = e.overrides;
        if (overrides.empty()) overrides.emplace_back("");
        f.write_attribute("overrides", overrides);
        std::vector<std::string> axes;
        for (const auto& axis : e.axes)
            axes.push_back(axis.name);
        if (axes.empty()) axes.emplace_back("");
        f.write_attribute("axes", axes);
        f.write_attribute("positions", std::string(to_string(e.positions)));
        f.write_attribute("runs", static_cast<std::int64_t>(e.size()));
        f.write_attribute("nadyn_version", std::string(version()));
        f.write_attribute("git_commit", std::string(git_commit()));
        f.write_attribute("compiler", std::string(compiler()));
        f.write_attribute("compiler_flags", std::string(compiler_flags()));
        f.write_attribute("build_type", std::string(build_type()));
        f.write_attribute("created", utc_now());
        f.write_attribute("description",
                          std::string("nadyn sweep: each observable over the sweep's axes and "
                                      "time; open with xarray.open_dataset(path, "
                                      "engine='h5netcdf') or nadyn.open(path)"));
    }

    hid_t create(const std::string& name, hid_t type, const std::vector<hsize_t>& shape,
                 const std::vector<hsize_t>& chunk, const void* fill) {
        handle space(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr),
                     H5Sclose, "create the dataspace of " + name);
        handle plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "create a property list");
        if (!chunk.empty()) {
            std::vector<hsize_t> c(chunk);
            for (std::size_t i = 0; i < c.size(); ++i)
                c[i] = std::max<hsize_t>(1, std::min(c[i], shape[i]));
            check(H5Pset_chunk(plist, static_cast<int>(c.size()), c.data()), "chunk " + name);
        }
        if (fill) check(H5Pset_fill_value(plist, type, fill), "set the fill value of " + name);
        const hid_t dataset = checked(
            H5Dcreate2(m_file->id(), name.c_str(), type, space, H5P_DEFAULT, plist, H5P_DEFAULT),
            "create dataset '" + name + "' in '" + m_path + "'");
        return dataset;
    }

    void describe(hid_t dataset, const std::string& text) {
        handle space(H5Screate(H5S_SCALAR), H5Sclose, "create a dataspace");
        handle attribute(
            H5Acreate2(dataset, "description", string_type(), space, H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose, "create a description");
        const char* value = text.c_str();
        check(H5Awrite(attribute, string_type(), &value), "write a description");
    }

    // A 1-D coordinate made a dimension scale named after itself.
    hid_t scale(const std::string& name, hid_t type, std::size_t length, const void* values,
                const std::string& text) {
        const hid_t dataset = create(name, type, {hsize_t(length)}, {}, nullptr);
        if (length > 0)
            check(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
                  "write the coordinate " + name);
        check(H5DSset_scale(dataset, name.c_str()), "make " + name + " a dimension scale");
        describe(dataset, text);
        return dataset;
    }

    void create_datasets(const experiment& e) {
        const sweep_layout& L = m_layout;
        std::vector<hid_t> axis_scales;
        for (const auto& axis : e.axes) {
            const parameter_spec& spec = parameter(axis.name);
            hid_t dataset;
            const std::string text = "sweep axis: " + std::string(spec.description);
            if (spec.type == value_type::integer) {
                std::vector<std::int64_t> values;
                for (const auto& v : axis.values)
                    values.push_back(parse_integer(v, axis.name));
                dataset = scale(axis.name, H5T_NATIVE_INT64, values.size(), values.data(), text);
            } else if (spec.type == value_type::number) {
                std::vector<double> values;
                for (const auto& v : axis.values)
                    values.push_back(parse_number(v, axis.name));
                dataset = scale(axis.name, H5T_NATIVE_DOUBLE, values.size(), values.data(), text);
            } else {
                std::vector<const char*> values;
                for (const auto& v : axis.values)
                    values.push_back(v.c_str());
                dataset = scale(axis.name, string_type(), values.size(), values.data(), text);
            }
            axis_scales.push_back(dataset);
        }
        hid_t time_scale;
        const double nan = std::numeric_limits<double>::quiet_NaN();
        if (L.shared_times) {
            time_scale = scale("time", H5T_NATIVE_DOUBLE, L.frames, L.times.data(),
                               "frame time t (continuous depth) of every run");
        } else {
            std::vector<std::int64_t> index(L.frames);
            std::iota(index.begin(), index.end(), 0);
            time_scale = scale("frame", H5T_NATIVE_INT64, L.frames, index.data(),
                               "frame index (the runs' frame times differ: see time)");
        }
        std::vector<hid_t> per_run = axis_scales;
        std::vector<hsize_t> ones(L.axes.size(), 1);
        auto attach = [&](hid_t dataset, const std::vector<hid_t>& scales) {
            for (std::size_t i = 0; i < scales.size(); ++i)
                check(H5DSattach_scale(dataset, scales[i], static_cast<unsigned>(i)),
                      "attach a dimension scale");
        };
        std::vector<hid_t> opened;
        auto variable = [&](const std::string& name, hid_t type, const std::vector<hsize_t>& rest,
                            const std::vector<hid_t>& rest_scales, const void* fill,
                            const std::string& text) {
            const hid_t dataset =
                create(name, type, concat(L.axes, rest), concat(ones, rest), fill);
            attach(dataset, concat_ids(per_run, rest_scales));
            describe(dataset, text);
            opened.push_back(dataset);
            return dataset;
        };
        if (!L.shared_times)
            variable("time", H5T_NATIVE_DOUBLE, {L.frames}, {time_scale}, &nan,
                     "frame time t of each run (NaN after its last frame)");
        for (std::string_view name : observable_names)
            variable(std::string(name), H5T_NATIVE_DOUBLE, {L.frames}, {time_scale}, &nan,
                     "observable " + std::string(name) +
                         " of each run at each frame (see nadyn inspect --describe on a "
                         "single-run file; NaN: no such frame)");
        if (e.positions != sweep_positions::none) {
            std::vector<std::int64_t> tokens(L.tokens), dims(L.dims);
            std::iota(tokens.begin(), tokens.end(), 0);
            std::iota(dims.begin(), dims.end(), 0);
            const hid_t token =
                scale("token", H5T_NATIVE_INT64, L.tokens, tokens.data(), "token index k");
            const hid_t dim = scale("dim", H5T_NATIVE_INT64, L.dims, dims.data(),
                                    "coordinate index of theta_k in R^d");
            if (e.positions == sweep_positions::final) {
                variable("positions", H5T_NATIVE_DOUBLE, {L.tokens, L.dims}, {token, dim}, &nan,
                         "directions theta_k at each run's last frame (NaN beyond its n, d)");
                variable("magnitudes", H5T_NATIVE_DOUBLE, {L.tokens}, {token}, &nan,
                         "magnitudes r_k at each run's last frame");
            } else {
                variable("positions", H5T_NATIVE_DOUBLE, {L.frames, L.tokens, L.dims},
                         {time_scale, token, dim}, &nan, "directions theta_k at every frame");
                variable("magnitudes", H5T_NATIVE_DOUBLE, {L.frames, L.tokens}, {time_scale, token},
                         &nan, "magnitudes r_k at every frame");
            }
            H5Dclose(token);
            H5Dclose(dim);
        }
        const signed char zero = 0;
        const std::int64_t zero64 = 0;
        const hid_t status = variable("status", H5T_NATIVE_SCHAR, {}, {}, &zero,
                                      "outcome of each run: 0 not run, 1 complete, 2 "
                                      "interrupted, 3 failed");
        {
            // CF conventions: xarray shows the codes' meanings.
            const hsize_t four = 4;
            handle space(H5Screate_simple(1, &four, nullptr), H5Sclose, "create a dataspace");
            handle attribute(H5Acreate2(status, "flag_values", H5T_NATIVE_SCHAR, space, H5P_DEFAULT,
                                        H5P_DEFAULT),
                             H5Aclose, "create flag_values");
            const signed char flags[4] = {0, 1, 2, 3};
            check(H5Awrite(attribute, H5T_NATIVE_SCHAR, flags), "write flag_values");
        }
        variable("frames", H5T_NATIVE_INT64, {}, {}, &zero64, "frames each run wrote");
        variable("rhs_evaluations", H5T_NATIVE_INT64, {}, {}, &zero64,
                 "right-hand-side evaluations of each run");
        variable("accepted_steps", H5T_NATIVE_INT64, {}, {}, &zero64,
                 "accepted steps (or layers) of each run");
        variable("wall_time", H5T_NATIVE_DOUBLE, {}, {}, &nan,
                 "wall-clock seconds of each run (the only value that differs between reruns)");
        variable("parameters", string_type(), {}, {}, nullptr,
                 "each run's full parameter record, name=value; ... (as /parameters of a "
                 "single-run file)");
        for (hid_t d : opened)
            H5Dclose(d);
        for (hid_t d : axis_scales)
            H5Dclose(d);
        H5Dclose(time_scale);
        m_file->flush();
    }

    static std::vector<hid_t> concat_ids(std::vector<hid_t> a, const std::vector<hid_t>& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    }

    // Writes the block of one run: its point on the axes, then the whole of `rest`.
    void write_block(const std::string& name, const std::vector<hsize_t>& point,
                     const std::vector<hsize_t>& rest, const void* data, hid_t memory_type) {
        handle dataset(H5Dopen2(m_file->id(), name.c_str(), H5P_DEFAULT), H5Dclose,
                       "open " + name + " in '" + m_path + "'");
        handle file_space(H5Dget_space(dataset), H5Sclose, "get the dataspace of " + name);
        std::vector<hsize_t> start = point, count(point.size(), 1);
        for (hsize_t r : rest) {
            start.push_back(0);
            count.push_back(r);
        }
        if (!start.empty())
            check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr,
                                      count.data(), nullptr),
                  "select a run in " + name);
        hsize_t elements = 1;
        for (hsize_t c : count)
            elements *= c;
        handle memory_space(start.empty() ? H5Screate(H5S_SCALAR)
                                          : H5Screate_simple(1, &elements, nullptr),
                            H5Sclose, "create a memory dataspace");
        check(H5Dwrite(dataset, memory_type, memory_space, file_space, H5P_DEFAULT, data),
              "write a run into " + name + " of '" + m_path + "'");
    }

    std::string m_path;
    sweep_layout m_layout;
    sweep_positions m_positions;
    std::optional<detail::hdf5_file> m_file;
};

std::string parameters_text(const simulation& run) {
    std::string out;
    const parameter_list record = run.parameters();
    for (const auto& [name, value] : record.entries()) {
        if (name == "started" || name == "command_line") continue;
        out += (out.empty() ? "" : "; ") + name + "=" + to_display_string(value);
    }
    return out;
}

// Runs one point; never throws for the run's own failures (they are its record).
run_record run_point(const experiment& e, const sweep_layout& layout, std::size_t index,
                     int threads, const std::atomic<bool>* stop) {
    run_record record;
    record.index = index;
    const std::size_t frames = layout.frames;
    record.observables.assign(
        observable_names.size(),
        std::vector<double>(frames, std::numeric_limits<double>::quiet_NaN()));
    const std::size_t N = layout.tokens, D = layout.dims;
    const std::size_t position_frames = e.positions == sweep_positions::all ? frames : 1;
    if (e.positions != sweep_positions::none) {
        record.positions.assign(position_frames * N * D, std::numeric_limits<double>::quiet_NaN());
        record.magnitudes.assign(position_frames * N, std::numeric_limits<double>::quiet_NaN());
    }
    record.times.assign(frames, std::numeric_limits<double>::quiet_NaN());
    run_config c = e.point(index);
    c.threads = threads;
    c.command_line = "nadyn sweep (" + e.label(index) + ")";
    std::optional<simulation> run;
    try {
        auto guard = hdf5_lock(); // input files (init, weights) are read here
        run.emplace(c);
    } catch (const std::exception& error) {
        record.status = broken;
        record.failure = e.label(index) + ": " + error.what();
        return record;
    }
    record.parameters = parameters_text(*run);
    const auto times = frame_times(c);
    std::size_t slot = 0;
    auto keep_positions = [&](const state_type& x, std::size_t frame) {
        const double* theta = directions(x);
        const double* r = magnitudes(x, c.n, c.d);
        for (std::size_t k = 0; k < c.n; ++k) {
            std::copy(theta + k * c.d, theta + (k + 1) * c.d,
                      record.positions.begin() + static_cast<std::ptrdiff_t>((frame * N + k) * D));
            record.magnitudes[frame * N + k] = r[k];
        }
    };
    try {
        const run_summary summary = run->run(
            [&](const state_type& x, double t, std::int64_t, const frame_observables& o) {
                // Only the frames of the grid: a stop writes one more, off the grid.
                if (slot >= times.size() || t != times[slot]) return;
                const auto values = o.values();
                for (std::size_t v = 0; v < values.size() && v < record.observables.size(); ++v)
                    record.observables[v][slot] = values[v];
                record.times[slot] = t;
                if (e.positions == sweep_positions::all) keep_positions(x, slot);
                if (e.positions == sweep_positions::final) keep_positions(x, 0);
                ++slot;
            },
            stop);
        record.status = summary.outcome == integration_outcome::complete ? done : stopped;
        record.rhs = static_cast<std::int64_t>(summary.statistics.rhs_evaluations);
        record.accepted = static_cast<std::int64_t>(summary.statistics.accepted_steps);
        record.wall = summary.wall_seconds;
    } catch (const std::exception& error) {
        record.status = broken;
        record.failure = e.label(index) + ": " + error.what();
    }
    record.frames = static_cast<std::int64_t>(slot);
    return record;
}

int cores() {
    return std::max(1, omp_get_num_procs());
}

int choose_jobs(const experiment& e, int jobs) {
    if (jobs > 0) return jobs;
    // Side by side when there are enough runs and each is small enough that threads inside
    // it would mostly wait (below ~2^24 attention flops per evaluation).
    const run_config c = e.point(0);
    const double flops = 4.0 * double(c.n) * double(c.n) * double(c.d);
    if (e.size() >= 2 && flops < double(1 << 24)) return std::min<int>(cores(), int(e.size()));
    return 1;
}

sweep_summary execute(const experiment& e, sweep_file& file, const sweep_layout& layout,
                      const std::vector<std::size_t>& todo, const sweep_options& options,
                      std::size_t skipped) {
    const auto started = std::chrono::steady_clock::now();
    sweep_summary summary;
    summary.runs = e.size();
    summary.skipped = skipped;
    summary.jobs = choose_jobs(e, options.jobs);
    const int jobs = summary.jobs;
    const int threads_per_run = jobs > 1 ? 1 : 0;
    std::mutex progress_lock;
    std::size_t finished = 0;
    std::exception_ptr write_failure;
    auto one = [&](std::size_t i) {
        if (options.stop && options.stop->load()) return;
        run_record record = run_point(e, layout, todo[i], threads_per_run, options.stop);
        std::lock_guard<std::mutex> lock(progress_lock);
        try {
            file.write(e, record);
        } catch (...) {
            if (!write_failure) write_failure = std::current_exception();
        }
        switch (record.status) {
        case done:
            ++summary.complete;
            break;
        case stopped:
            ++summary.interrupted;
            break;
        default:
            ++summary.failed;
            if (summary.first_failure.empty()) summary.first_failure = record.failure;
        }
        ++finished;
        if (options.progress) {
            sweep_progress p;
            p.done = finished;
            p.total = todo.size();
            p.elapsed =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            options.progress(p);
        }
    };
    if (jobs > 1) {
        // Plain threads, not an OpenMP region: each run is then the outermost parallel level
        // of its own thread, exactly as when it runs alone (its kernel's thread numbering and
        // workspaces are its own). Runs are handed out one at a time (dynamic balance).
        std::atomic<std::size_t> next{0};
        std::vector<std::thread> workers;
        for (int w = 0; w < jobs; ++w)
            workers.emplace_back([&] {
                for (std::size_t i = next++; i < todo.size(); i = next++)
                    one(i);
            });
        for (auto& worker : workers)
            worker.join();
    } else {
        for (std::size_t i = 0; i < todo.size(); ++i)
            one(i);
    }
    if (write_failure) std::rethrow_exception(write_failure);
    const bool stopped_early = options.stop && options.stop->load();
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const bool incomplete = stopped_early || summary.interrupted > 0 ||
                            summary.complete + summary.skipped + summary.failed < summary.runs;
    file.finish(incomplete ? "interrupted" : summary.failed ? "failed" : "complete", summary);
    return summary;
}

} // namespace

sweep_plan plan_sweep(const experiment& e, int jobs) {
    sweep_plan plan;
    plan.runs = e.size();
    plan.jobs = choose_jobs(e, jobs);
    const sweep_layout layout = layout_of(e);
    double largest = 0.0;
    for (std::size_t i = 0; i < plan.runs; ++i) {
        const run_config c = e.point(i);
        const double steps = double(step_count(c.integration.T, c.integration.dt));
        plan.flops += 4.0 * double(c.n) * double(c.n) * double(c.d) *
                      evaluations_per_step(c.integration.kind) * steps;
        largest = std::max(largest, run_bytes(c));
    }
    plan.bytes_in_use = largest * plan.jobs;
    double per_run = double(observable_names.size() * layout.frames + 8) * 8.0 + 256.0;
    if (e.positions == sweep_positions::final)
        per_run += 8.0 * double(layout.tokens * (layout.dims + 1));
    if (e.positions == sweep_positions::all)
        per_run += 8.0 * double(layout.frames * layout.tokens * (layout.dims + 1));
    plan.file_bytes = per_run * double(plan.runs);
    return plan;
}

std::string describe_plan(const experiment& e, const sweep_plan& plan) {
    std::ostringstream out;
    out.precision(3);
    out << e.source << ": " << plan.runs << " runs";
    for (const auto& axis : e.axes) {
        out << "\n  " << axis.name << " (" << axis.values.size() << "): ";
        for (std::size_t i = 0; i < axis.values.size(); ++i) {
            if (i == 4 && axis.values.size() > 6) {
                out << ", ..., " << axis.values.back();
                break;
            }
            out << (i ? ", " : "") << axis.values[i];
        }
    }
    // A nominal 10 GFLOP/s per core for the attention arithmetic (results/performance.md
    // measures the real rate); small runs are dominated by overheads this ignores.
    const double rate = 10e9 * double(std::min(cores(), std::max(plan.jobs, cores())));
    out << "\nwork: " << plan.flops / 1e12 << " TFLOP of attention (about " << plan.flops / rate
        << " s at 10 GFLOP/s per core on " << cores() << " cores)"
        << "\nschedule: " << plan.jobs
        << (plan.jobs > 1 ? " runs side by side, one thread each" : " run at a time, all cores")
        << "\nmemory: about " << plan.bytes_in_use / double(1 << 20) << " MiB in use; file about "
        << plan.file_bytes / double(1 << 20) << " MiB (positions: " << to_string(e.positions)
        << ")";
    return out.str();
}

sweep_summary run_sweep(const experiment& e, const std::string& path,
                        const sweep_options& options) {
    check_output_path(path, options.overwrite);
    const sweep_plan plan = plan_sweep(e, options.jobs);
    const double available = double(sysconf(_SC_AVPHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    if (available > 0 && plan.bytes_in_use > available)
        throw input_error("the sweep needs about " + std::to_string(plan.bytes_in_use / 1e9) +
                          " GB with " + std::to_string(plan.jobs) +
                          " runs side by side, more than the memory available; pass --jobs 1");
    const sweep_layout layout = layout_of(e);
    std::unique_ptr<sweep_file> file;
    try {
        file = std::make_unique<sweep_file>(path, e, layout, options.overwrite);
    } catch (const io_error& error) {
        throw input_error(error.what()); // an unwritable path is a bad input
    }
    std::vector<std::size_t> todo(e.size());
    std::iota(todo.begin(), todo.end(), 0);
    return execute(e, *file, layout, todo, options, 0);
}

bool is_sweep_file(const std::string& path) {
    auto guard = hdf5_lock();
    if (!detail::hdf5_file::is_hdf5(path)) return false;
    const auto file = detail::hdf5_file::open_read_only(path);
    const auto kind = file.read_attribute("nadyn_kind");
    return kind && std::holds_alternative<std::string>(*kind) &&
           std::get<std::string>(*kind) == "sweep";
}

experiment sweep_experiment(const std::string& path) {
    if (!is_sweep_file(path)) throw input_error("'" + path + "' is not a nadyn sweep file");
    std::string text, source;
    std::vector<std::string> overrides;
    {
        auto guard = hdf5_lock();
        const auto file = detail::hdf5_file::open_read_only(path);
        auto get = [&](const char* name) {
            const auto value = file.read_attribute(name);
            if (!value || !std::holds_alternative<std::string>(*value))
                throw input_error("'" + path + "' lacks the attribute " + name);
            return std::get<std::string>(*value);
        };
        text = get("experiment");
        source = get("experiment_source");
        // overrides: a list of strings, read through h5py-compatible vlen strings.
        handle attribute(H5Aopen(file.id(), "overrides", H5P_DEFAULT), H5Aclose,
                         "open the overrides of '" + path + "'");
        handle space(H5Aget_space(attribute), H5Sclose, "read the overrides");
        const hssize_t count = H5Sget_simple_extent_npoints(space);
        std::vector<char*> values(static_cast<std::size_t>(std::max<hssize_t>(count, 0)));
        handle type(H5Tcopy(H5T_C_S1), H5Tclose, "make a string type");
        H5Tset_size(type, H5T_VARIABLE);
        H5Tset_cset(type, H5T_CSET_UTF8);
        check(H5Aread(attribute, type, values.data()), "read the overrides of '" + path + "'");
        for (char* v : values) {
            if (v && *v) overrides.emplace_back(v);
        }
        H5Dvlen_reclaim(type, space, H5P_DEFAULT, values.data());
    }
    return experiment::parse(text, source, overrides);
}

sweep_summary resume_sweep(const std::string& path, const sweep_options& options) {
    const experiment e = sweep_experiment(path);
    const sweep_layout layout = layout_of(e);
    sweep_file file(path, e, layout);
    const auto statuses = file.statuses();
    std::vector<std::size_t> todo;
    std::size_t skipped = 0;
    for (std::size_t i = 0; i < statuses.size(); ++i) {
        if (statuses[i] == done)
            ++skipped;
        else
            todo.push_back(i);
    }
    return execute(e, file, layout, todo, options, skipped);
}

std::string describe_sweep_file(const std::string& path) {
    const experiment e = sweep_experiment(path);
    const sweep_layout layout = layout_of(e);
    std::ostringstream out;
    std::vector<signed char> status(e.size());
    std::map<std::string, std::vector<double>> last; // observable -> per run final value
    std::string sweep_status;
    {
        auto guard = hdf5_lock();
        const auto file = detail::hdf5_file::open_read_only(path);
        const auto s = file.read_attribute("status");
        sweep_status =
            s && std::holds_alternative<std::string>(*s) ? std::get<std::string>(*s) : "unknown";
        file.open_dataset("status").read_all(H5T_NATIVE_SCHAR, status.data());
        std::vector<double> values(e.size() * layout.frames);
        for (const char* name : {"mean_cos", "min_cos", "clusters", "r_mean"}) {
            file.open_dataset(name).read_all(H5T_NATIVE_DOUBLE, values.data());
            auto& column = last[name];
            column.assign(e.size(), std::numeric_limits<double>::quiet_NaN());
            for (std::size_t i = 0; i < e.size(); ++i)
                for (std::size_t f = layout.frames; f-- > 0;)
                    if (!std::isnan(values[i * layout.frames + f])) {
                        column[i] = values[i * layout.frames + f];
                        break;
                    }
        }
    }
    std::size_t complete = 0;
    for (signed char s : status)
        complete += s == done;
    out << path << ": nadyn sweep, " << sweep_status << ", " << complete << " of " << e.size()
        << " runs complete; positions: " << to_string(e.positions) << "\naxes:";
    for (const auto& axis : e.axes)
        out << " " << axis.name << " (" << axis.values.size() << ")";
    out << (layout.shared_times ? ", time (" : ", frame (") << layout.frames << ")\n";
    // One row per point of the axes other than seed; mean and spread over seeds.
    std::size_t seed_axis = e.axes.size();
    for (std::size_t a = 0; a < e.axes.size(); ++a)
        if (e.axes[a].name == "seed") seed_axis = a;
    std::map<std::string, std::vector<std::size_t>> groups;
    std::vector<std::string> order;
    for (std::size_t i = 0; i < e.size(); ++i) {
        const auto at = e.coordinates(i);
        std::string key;
        for (std::size_t a = 0; a < e.axes.size(); ++a)
            if (a != seed_axis)
                key += (key.empty() ? "" : " ") + e.axes[a].name + "=" + e.axes[a].values[at[a]];
        if (key.empty()) key = "all runs";
        if (!groups.count(key)) order.push_back(key);
        groups[key].push_back(i);
    }
    char line[256];
    std::snprintf(line, sizeof line, "%-40s %5s %22s %22s %14s\n", "point", "runs",
                  "final mean_cos", "final min_cos", "clusters");
    out << line;
    for (const auto& key : order) {
        const auto& members = groups[key];
        auto stats = [&](const std::vector<double>& column) {
            double sum = 0, sum2 = 0;
            std::size_t count = 0;
            for (std::size_t i : members)
                if (!std::isnan(column[i])) {
                    sum += column[i];
                    sum2 += column[i] * column[i];
                    ++count;
                }
            const double mean = count ? sum / double(count) : std::nan("");
            const double spread =
                count > 1 ? std::sqrt(std::max(0.0, (sum2 - sum * mean) / double(count - 1))) : 0.0;
            char cell[64];
            std::snprintf(cell, sizeof cell, "%.6g ± %.2g", mean, spread);
            return std::string(cell);
        };
        std::snprintf(line, sizeof line, "%-40s %5zu %22s %22s %14s\n", key.c_str(), members.size(),
                      stats(last["mean_cos"]).c_str(), stats(last["min_cos"]).c_str(),
                      stats(last["clusters"]).c_str());
        out << line;
    }
    return out.str();
}

} // namespace nadyn
