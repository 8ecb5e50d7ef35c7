#pragma once
// The parts of the sweep engine (src/experiment/sweep.cpp) that another driver of the same runs
// needs: the layout of a sweep file, one run's record, running one point, and the file writer. The
// MPI sweep (src/parallel/mpi/) uses them so that its file is the one-process sweep's file,
// bitwise. Private to the library (src/). It reaches HDF5 only through the wrappers of
// src/files/hdf5.hpp, which check every call and name the file and the object in their errors.
#include "files/hdf5.hpp"
#include "files/output_claim.hpp"
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/observable_table.hpp"
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/model/detail/utc_now.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/plateaus.hpp"
#include "nadyn/model/version.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn::detail {

enum run_status_code : signed char { not_run = 0, done = 1, stopped = 2, broken = 3 };

// The shape of the result, fixed before any run starts.
struct sweep_layout {
    std::vector<hsize_t> axes;        // axis lengths
    std::vector<double> times;        // shared frame times, or the longest grid
    bool shared_times = true;         // every run writes the same frame times
    std::size_t frames = 0;           // length of the time/frame dimension
    std::size_t tokens = 0, dims = 0; // largest n, d
    // The observables recorded: observable_names, then the optional ones (--observe) that
    // any run asks for (NaN in the runs that do not).
    std::vector<std::string> observables;
    // Values per frame of each observable: 1, or for modes the largest K of the runs that
    // record it (a run with fewer leaves NaN in the rest), a dimension `mode` of the file.
    std::vector<std::size_t> widths;
    [[nodiscard]] std::size_t width(std::size_t o) const {
        return o < widths.size() ? widths[o] : 1;
    }
};

// A count (observable_info::integer: clusters) is int64 in a sweep file, as in a
// single-run file. A frame a run did not write holds this fill value, also written as the
// dataset's CF attribute _FillValue, so that xarray masks it (as NaN).
inline constexpr std::int64_t missing_count = -1;

inline bool is_count(std::string_view observable) {
    const nadyn::observable* row = find_observable(observable);
    return row && !row->optional && row->integer;
}

// What a sweep file says an observable is.
inline std::string sweep_observable_description(std::string_view observable) {
    if (const nadyn::observable* optional = find_observable(observable);
        optional && optional->optional)
        return "optional observable " + std::string(observable) + " (observe = \"" +
               std::string(observable) +
               "\") of each run at each frame: " + std::string(optional->description) +
               "; NaN: no such frame, or a run that did not observe it";
    if (is_count(observable))
        return "observable " + std::string(observable) +
               " of each run at each frame, an integer count (see nadyn inspect --describe on "
               "a single-run file; -1, the _FillValue: no such frame)";
    return "observable " + std::string(observable) +
           " of each run at each frame (see nadyn inspect --describe on a single-run file; NaN: "
           "no such frame)";
}

inline std::vector<hsize_t> concat(std::vector<hsize_t> a, const std::vector<hsize_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// What one run produced, written under the HDF5 lock when the run ends.
struct run_record {
    std::size_t index = 0;
    signed char status = not_run;
    // per observable, per frame (times its width: frame-major; NaN: absent)
    std::vector<std::vector<double>> observables;
    std::vector<double> times;                 // when the time grid is per run
    std::vector<double> positions, magnitudes; // final or all frames, padded
    // The cluster history (cluster_history.hpp): t_k at the last frame of the grid, and the
    // merge events of the grid's frames.
    std::vector<double> clustering_times;
    std::vector<merge_event> merges;
    std::int64_t frames = 0, rhs = 0, accepted = 0;
    double wall = 0.0;
    // The longest metastable plateau of the clusters series (plateaus.hpp): its length and
    // count; 0 and missing_count when no stretch is long enough, NaN and missing_count for a
    // run without frames. Derived from the clusters series, so not part of the checksum.
    double plateau_length = std::numeric_limits<double>::quiet_NaN();
    std::int64_t plateau_clusters = missing_count;
    std::string parameters;
    std::string failure;
};

// A run's results as the file holds them, hashed (64-bit words, FNV-1a style): the checksum
// that --resume compares before it trusts a run marked complete.
class run_checksum {
  public:
    void add(const void* data, std::size_t bytes) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < bytes; i += 8) {
            std::uint64_t word = 0;
            std::memcpy(&word, p + i, std::min<std::size_t>(8, bytes - i));
            m_hash = (m_hash ^ word) * 0x100000001b3ULL;
            m_hash ^= m_hash >> 29;
        }
    }
    // Never 0, the value of a run not written yet.
    [[nodiscard]] std::uint64_t value() const { return m_hash | 1; }

  private:
    std::uint64_t m_hash = 0xcbf29ce484222325ULL;
};

class sweep_file {
  public:
    // Creates the file with every dataset at its full size (filled with NaN / 0). The path is
    // claimed first (output_claim.hpp): not a regular file, another writer's, or an existing
    // file without `overwrite` (unless it holds no result) is an input_error.
    sweep_file(const std::string& path, const experiment& e, const sweep_layout& layout,
               bool overwrite)
        : m_path(path), m_layout(layout), m_positions(e.positions) {
        auto guard = hdf5_lock();
        m_claim.emplace(output_claim::create(path, overwrite, holds_no_results));
        const std::string no_room = "no space for the header of '" + path + "'";
        try {
            // Checked before HDF5 creates the file (whose truncation returns the blocks), and
            // reserved again right after, before anything is written.
            m_claim->reserve(header_bytes(e), no_room);
        } catch (const io_error&) {
            if (m_claim->created()) m_claim->remove_file();
            throw;
        }
        try {
            m_file = detail::hdf5_file::create(path);
            m_claim->reserve(header_bytes(e), no_room);
            write_header(e);
            create_datasets(e);
            find_observables();
        } catch (...) {
            // Every handle is closed by now; a file without its datasets is no use.
            m_file.reset();
            m_claim->remove_file();
            throw;
        }
    }
    // Opens an existing sweep file to fill in what is missing; input_error while another
    // process writes it.
    sweep_file(const std::string& path, const experiment& e, const sweep_layout& layout)
        : m_path(path), m_layout(layout), m_positions(e.positions) {
        auto guard = hdf5_lock();
        m_claim.emplace(output_claim::existing(path));
        m_claim->reserve(metadata_margin, "no space to reopen '" + path + "'");
        m_file = detail::hdf5_file::open_read_write(path);
        find_observables();
    }

    std::vector<signed char> statuses() {
        auto guard = hdf5_lock();
        const auto status = m_file->open_dataset("status");
        std::vector<signed char> out(run_count());
        status.read_all(H5T_NATIVE_SCHAR, out.data());
        return out;
    }

    // The runs a resume may skip: marked complete, and their results in the file are the ones
    // written (the checksum recorded with the mark matches; in files from before checksums,
    // the run has frames and a finite first mean_cos). `distrusted` counts the runs marked
    // complete that fail this, to be run again.
    std::vector<bool> trusted_runs(const experiment& e, std::size_t& distrusted) {
        auto guard = hdf5_lock();
        const std::vector<signed char> status = statuses();
        const std::size_t runs = status.size();
        std::vector<std::int64_t> frames(runs);
        m_file->open_dataset("frames").read_all(H5T_NATIVE_INT64, frames.data());
        const bool has_checksums = m_file->has("checksum");
        std::vector<std::uint64_t> recorded(runs, 0);
        if (has_checksums)
            m_file->open_dataset("checksum").read_all(H5T_NATIVE_UINT64, recorded.data());
        std::vector<bool> trusted(runs, false);
        distrusted = 0;
        // The series whose first value must be finite: mean_cos, or with --observables
        // without it, step_size (recorded by every run, never NaN).
        const auto& names = m_layout.observables;
        std::size_t witness = std::size_t(
            std::find(names.begin(), names.end(), std::string("mean_cos")) - names.begin());
        if (witness == names.size())
            witness = std::size_t(std::find(names.begin(), names.end(), std::string("step_size")) -
                                  names.begin());
        for (std::size_t i = 0; i < runs; ++i) {
            if (status[i] != done) continue;
            const run_record stored = read(e, i);
            trusted[i] = frames[i] > 0 && witness < stored.observables.size() &&
                         !stored.observables[witness].empty() &&
                         std::isfinite(stored.observables[witness][0]) &&
                         (!has_checksums || checksum(stored) == recorded[i]);
            if (!trusted[i]) ++distrusted;
        }
        return trusted;
    }

    // Writes one run's results. The outcome (status, counters, checksum) is written and
    // flushed only after the results are: a file whose disk filled up, or a process killed
    // in between, never marks a run complete that it does not hold. The space both need is
    // reserved first (a full disk stops the sweep here, with the file whole).
    void write(const experiment& e, const run_record& record) {
        auto guard = hdf5_lock();
        try {
            m_claim->reserve(2 * run_bytes() + metadata_margin,
                             "no space left for the results of run " +
                                 std::to_string(record.index) + " in '" + m_path + "'");
        } catch (const io_error& error) {
            throw io_error(std::string(error.what()) +
                           "; the runs written so far are intact and --resume continues");
        }
        const auto at = e.coordinates(record.index);
        const std::vector<hsize_t> point(at.begin(), at.end());
        const hsize_t frames = m_layout.frames;
        for (std::size_t o = 0; o < m_layout.observables.size(); ++o) {
            const std::string& name = m_layout.observables[o];
            const std::vector<double>& values = record.observables[o];
            if (!m_present[o]) continue; // a file written before nadyn recorded it
            if (!m_counts[o]) {
                write_block(name, point, rest_of(o), values.data(), H5T_NATIVE_DOUBLE);
                continue;
            }
            std::vector<std::int64_t> counts(values.size());
            for (std::size_t f = 0; f < values.size(); ++f)
                counts[f] =
                    std::isnan(values[f]) ? missing_count : static_cast<std::int64_t>(values[f]);
            write_block(name, point, {frames}, counts.data(), H5T_NATIVE_INT64);
        }
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
        const char* text = record.parameters.c_str();
        write_block("parameters", point, {}, &text, hdf5_string_type());
        if (m_file->has("clustering_time")) write_history(point, record); // older files lack it
        m_file->flush();
        write_block("frames", point, {}, &record.frames, H5T_NATIVE_INT64);
        write_block("rhs_evaluations", point, {}, &record.rhs, H5T_NATIVE_INT64);
        write_block("accepted_steps", point, {}, &record.accepted, H5T_NATIVE_INT64);
        write_block("wall_time", point, {}, &record.wall, H5T_NATIVE_DOUBLE);
        if (m_file->has("plateau_length")) { // not in files from before plateaus
            write_block("plateau_length", point, {}, &record.plateau_length, H5T_NATIVE_DOUBLE);
            write_block("plateau_clusters", point, {}, &record.plateau_clusters, H5T_NATIVE_INT64);
        }
        if (m_file->has("checksum")) {
            const std::uint64_t sum = checksum(record);
            write_block("checksum", point, {}, &sum, H5T_NATIVE_UINT64);
        }
        write_block("status", point, {}, &record.status, H5T_NATIVE_SCHAR);
        m_file->flush();
    }

    void finish(const std::string& status, const sweep_summary& summary) {
        auto guard = hdf5_lock();
        m_claim->reserve(metadata_margin, "no space to close '" + m_path +
                                              "'; its runs are intact and --resume continues");
        m_file->write_attribute("status", status);
        // A resume that ends the sweep clears why an earlier attempt failed.
        if (m_file->has_attribute("failure")) m_file->write_attribute("failure", std::string());
        m_file->write_attribute("finished", utc_now());
        m_file->write_attribute("runs_failed", static_cast<std::int64_t>(summary.failed));
        m_file->flush();
    }

    // Marks the sweep failed after an error that stopped it (a disk that filled up, the file
    // size limit, a write that failed): status "failed" and the error as `failure`. The room
    // comes from what the last write reserved beyond it (a run's write keeps a margin past
    // its results), so the attributes fit even when the disk is full. Never throws: the error
    // that stopped the sweep is the one to report, and a file that cannot take even this
    // keeps its runs and its status 'running'.
    void finish_failed(const std::string& failure, const sweep_summary& summary) noexcept {
        try {
            auto guard = hdf5_lock();
            m_claim->reserve(failure_margin, "no space to mark '" + m_path + "' failed");
            m_file->write_attribute("status", std::string("failed"));
            m_file->write_attribute("failure", failure);
            m_file->write_attribute("finished", utc_now());
            m_file->write_attribute("runs_failed", static_cast<std::int64_t>(summary.failed));
            m_file->flush();
        } catch (...) {
        }
    }

  private:
    static constexpr std::uintmax_t metadata_margin = output_claim::metadata_margin;
    // The attributes of finish_failed: a few hundred bytes, well inside a run's margin.
    static constexpr std::uintmax_t failure_margin = std::uintmax_t{64} << 10;

    [[nodiscard]] std::size_t run_count() const {
        std::size_t count = 1;
        for (hsize_t n : m_layout.axes)
            count *= n;
        return count;
    }

    // The bytes one run's results take.
    [[nodiscard]] std::uintmax_t run_bytes() const {
        const std::uintmax_t frames = m_layout.frames, n = m_layout.tokens, d = m_layout.dims;
        std::uintmax_t values = frames + 8;
        for (std::size_t o = 0; o < m_layout.observables.size(); ++o)
            values += m_layout.width(o) * frames;
        if (m_positions == sweep_positions::final) values += n * (d + 1);
        if (m_positions == sweep_positions::all) values += frames * n * (d + 1);
        values += n + (n + 1) * (merge_event_width + 1); // t_k and the merge events
        return values * sizeof(double) + 4096;
    }

    // The header's attributes, the coordinates and the datasets' headers (their values are
    // written run by run).
    [[nodiscard]] std::uintmax_t header_bytes(const experiment& e) const {
        std::uintmax_t bytes =
            metadata_margin + 2 * e.text.size() + 64 * m_layout.observables.size();
        for (const auto& axis : e.axes)
            for (const auto& value : axis.values)
                bytes += 16 + value.size();
        return bytes + (m_layout.frames + m_layout.tokens + m_layout.dims) * sizeof(double);
    }

    // The results of run `index` as the file holds them (the fields that write() hashes).
    run_record read(const experiment& e, std::size_t index) {
        run_record record;
        record.index = index;
        const auto at = e.coordinates(index);
        const std::vector<hsize_t> point(at.begin(), at.end());
        const hsize_t frames = m_layout.frames, n = m_layout.tokens, d = m_layout.dims;
        record.observables.resize(m_layout.observables.size());
        for (std::size_t o = 0; o < m_layout.observables.size(); ++o) {
            record.observables[o].assign(frames * m_layout.width(o), std::nan(""));
            if (!m_present[o]) continue;
            read_block(m_layout.observables[o], point, rest_of(o), record.observables[o].data());
            // A count's fill value is the NaN the run handed to write().
            if (m_counts[o])
                for (double& value : record.observables[o])
                    if (value == double(missing_count)) value = std::nan("");
        }
        if (!m_layout.shared_times) {
            record.times.resize(frames);
            read_block("time", point, {frames}, record.times.data());
        }
        const hsize_t position_frames = m_positions == sweep_positions::all ? frames : 1;
        if (m_positions != sweep_positions::none) {
            record.positions.resize(position_frames * n * d);
            record.magnitudes.resize(position_frames * n);
            read_block("positions", point,
                       m_positions == sweep_positions::all ? std::vector<hsize_t>{frames, n, d}
                                                           : std::vector<hsize_t>{n, d},
                       record.positions.data());
            read_block("magnitudes", point,
                       m_positions == sweep_positions::all ? std::vector<hsize_t>{frames, n}
                                                           : std::vector<hsize_t>{n},
                       record.magnitudes.data());
        }
        return record;
    }

    [[nodiscard]] std::uint64_t checksum(const run_record& record) const {
        run_checksum sum;
        // What the file holds: the observables it has, counts as their int64 values.
        for (std::size_t o = 0; o < m_layout.observables.size(); ++o) {
            if (!m_present[o]) continue;
            const std::vector<double>& series = record.observables[o];
            if (!m_counts[o]) {
                sum.add(series.data(), series.size() * sizeof(double));
                continue;
            }
            for (const double value : series) {
                const std::int64_t count =
                    std::isnan(value) ? missing_count : static_cast<std::int64_t>(value);
                sum.add(&count, sizeof count);
            }
        }
        if (!m_layout.shared_times) sum.add(record.times.data(), record.times.size() * 8);
        sum.add(record.positions.data(), record.positions.size() * sizeof(double));
        sum.add(record.magnitudes.data(), record.magnitudes.size() * sizeof(double));
        return sum.value();
    }

    // Which of the layout's observables the file holds, and which as integers (a file of
    // an older nadyn may lack an optional observable, or hold clusters as float64).
    void find_observables() {
        m_present.assign(m_layout.observables.size(), false);
        m_counts.assign(m_layout.observables.size(), false);
        for (std::size_t o = 0; o < m_layout.observables.size(); ++o) {
            const std::string& name = m_layout.observables[o];
            if (!m_file->has(name)) continue;
            m_present[o] = true;
            m_counts[o] = m_file->open_dataset(name).type_class() == H5T_INTEGER;
        }
    }

    void write_header(const experiment& e) {
        detail::hdf5_file& f = *m_file;
        f.write_attribute("nadyn_kind", std::string("sweep"));
        f.write_attribute("status", std::string("running"));
        f.write_attribute("experiment", e.text);
        f.write_attribute("experiment_source", e.source);
        f.write_attribute("experiment_hash", e.digest());
        std::vector<std::string> overrides = e.overrides;
        if (overrides.empty()) overrides.emplace_back("");
        f.write_attribute("overrides", overrides);
        // The content of every input file the runs read, so that a resume can refuse inputs
        // that changed in between (check_recorded_experiment); absent when there are none.
        std::vector<std::string> input_paths, input_hashes;
        for (auto& [input, hash] : e.input_file_hashes()) {
            input_paths.push_back(input);
            input_hashes.push_back(hash);
        }
        if (!input_paths.empty()) {
            f.write_attribute("input_files", input_paths);
            f.write_attribute("input_sha256", input_hashes);
        }
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

    // Rows of a run's merge block: a history that only merges has at most n - 1 events.
    [[nodiscard]] hsize_t merge_rows() const {
        return std::max<hsize_t>(1, m_layout.tokens > 0 ? m_layout.tokens - 1 : 0);
    }

    // Rows of a chunk of merges (a chunk of a run's block is allocated only when written).
    static constexpr hsize_t merge_chunk_rows = 128;

    // t_k and the merge events of one run, padded to the largest run's n with NaN.
    void write_history(const std::vector<hsize_t>& point, const run_record& record) {
        const std::vector<std::int64_t> levels = clustering_levels(m_layout.tokens);
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::vector<double> times(levels.size(), nan);
        std::copy_n(record.clustering_times.begin(),
                    std::min(times.size(), record.clustering_times.size()), times.begin());
        write_block("clustering_time", point, {levels.size()}, times.data(), H5T_NATIVE_DOUBLE);
        const hsize_t rows = std::min<hsize_t>(merge_rows(), record.merges.size());
        const hsize_t fields = merge_event_width + 1;
        std::vector<double> table(rows * fields, nan);
        for (std::size_t i = 0; i < record.merges.size() && i < rows; ++i) {
            const merge_event& m = record.merges[i];
            const double row[] = {m.time,
                                  double(m.frame),
                                  double(m.label),
                                  double(m.absorbed),
                                  double(m.size),
                                  double(m.absorbed_size),
                                  double(m.clusters_after)};
            std::copy(std::begin(row), std::end(row), table.begin() + std::ptrdiff_t(i * fields));
        }
        // Only the rows the run has: the others read as the fill value, NaN.
        if (rows > 0) write_block("merges", point, {rows, fields}, table.data(), H5T_NATIVE_DOUBLE);
        const auto count = static_cast<std::int64_t>(record.merges.size());
        write_block("merge_count", point, {}, &count, H5T_NATIVE_INT64);
    }

    // A 1-D coordinate made a dimension scale named after itself.
    hdf5_dataset scale(const std::string& name, hid_t type, std::size_t length, const void* values,
                       const std::string& text) {
        hdf5_dataset dataset = m_file->create_dataset(name, type, {hsize_t(length)});
        if (length > 0) dataset.write_all(type, values);
        dataset.make_scale(name);
        dataset.write_attribute("description", text);
        return dataset;
    }

    void create_datasets(const experiment& e) {
        const sweep_layout& L = m_layout;
        std::vector<hdf5_dataset> axis_scales;
        for (const auto& axis : e.axes) {
            const parameter_spec& spec = parameter(axis.name);
            const std::string text = "sweep axis: " + std::string(spec.description);
            if (spec.type == value_type::integer) {
                std::vector<std::int64_t> values;
                for (const auto& v : axis.values)
                    values.push_back(parse_integer(v, axis.name));
                axis_scales.push_back(
                    scale(axis.name, H5T_NATIVE_INT64, values.size(), values.data(), text));
            } else if (spec.type == value_type::number) {
                std::vector<double> values;
                for (const auto& v : axis.values)
                    values.push_back(parse_number(v, axis.name));
                axis_scales.push_back(
                    scale(axis.name, H5T_NATIVE_DOUBLE, values.size(), values.data(), text));
            } else {
                std::vector<const char*> values;
                for (const auto& v : axis.values)
                    values.push_back(v.c_str());
                axis_scales.push_back(
                    scale(axis.name, hdf5_string_type(), values.size(), values.data(), text));
            }
        }
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::optional<hdf5_dataset> time_scale;
        if (L.shared_times) {
            time_scale = scale("time", H5T_NATIVE_DOUBLE, L.frames, L.times.data(),
                               "frame time t (continuous depth) of every run");
        } else {
            std::vector<std::int64_t> index(L.frames);
            std::iota(index.begin(), index.end(), 0);
            time_scale = scale("frame", H5T_NATIVE_INT64, L.frames, index.data(),
                               "frame index (the runs' frame times differ: see time)");
        }
        using scale_list = std::vector<const hdf5_dataset*>;
        scale_list per_run;
        for (const hdf5_dataset& axis : axis_scales)
            per_run.push_back(&axis);
        std::vector<hsize_t> ones(L.axes.size(), 1);
        std::vector<hdf5_dataset> opened;
        // One chunk per run (rest_chunk empty), or per rest_chunk-sized part of a run's block.
        auto variable = [&](const std::string& name, hid_t type, const std::vector<hsize_t>& rest,
                            const scale_list& rest_scales, const void* fill,
                            const std::string& text,
                            const std::vector<hsize_t>& rest_chunk = {}) -> hdf5_dataset& {
            hdf5_dataset dataset =
                m_file->create_dataset(name, type, concat(L.axes, rest),
                                       concat(ones, rest_chunk.empty() ? rest : rest_chunk), fill);
            scale_list scales = per_run;
            scales.insert(scales.end(), rest_scales.begin(), rest_scales.end());
            for (std::size_t i = 0; i < scales.size(); ++i)
                dataset.attach_scale(*scales[i], static_cast<unsigned>(i));
            dataset.write_attribute("description", text);
            return opened.emplace_back(std::move(dataset));
        };
        if (!L.shared_times)
            variable("time", H5T_NATIVE_DOUBLE, {L.frames}, {&*time_scale}, &nan,
                     "frame time t of each run (NaN after its last frame)");
        // The degrees k = 1..K of a vector observable (modes), when a run records one.
        std::optional<hdf5_dataset> mode_scale;
        for (std::size_t o = 0; o < L.observables.size(); ++o) {
            if (L.width(o) < 2 || mode_scale) continue;
            std::vector<std::int64_t> degrees(L.width(o));
            std::iota(degrees.begin(), degrees.end(), 1);
            mode_scale = scale("mode", H5T_NATIVE_INT64, degrees.size(), degrees.data(),
                               "degree k of the spectral mode m_k");
        }
        for (std::size_t o = 0; o < L.observables.size(); ++o) {
            const std::string& name = L.observables[o];
            if (L.width(o) > 1) {
                variable(name, H5T_NATIVE_DOUBLE, {L.frames, L.width(o)},
                         {&*time_scale, &*mode_scale}, &nan, sweep_observable_description(name));
                continue;
            }
            if (!is_count(name)) {
                variable(name, H5T_NATIVE_DOUBLE, {L.frames}, {&*time_scale}, &nan,
                         sweep_observable_description(name));
                continue;
            }
            variable(name, H5T_NATIVE_INT64, {L.frames}, {&*time_scale}, &missing_count,
                     sweep_observable_description(name))
                .write_attribute("_FillValue", missing_count);
        }
        if (e.positions != sweep_positions::none) {
            std::vector<std::int64_t> tokens(L.tokens), dims(L.dims);
            std::iota(tokens.begin(), tokens.end(), 0);
            std::iota(dims.begin(), dims.end(), 0);
            hdf5_dataset token =
                scale("token", H5T_NATIVE_INT64, L.tokens, tokens.data(), "token index k");
            hdf5_dataset dim = scale("dim", H5T_NATIVE_INT64, L.dims, dims.data(),
                                     "coordinate index of theta_k in R^d");
            if (e.positions == sweep_positions::final) {
                variable("positions", H5T_NATIVE_DOUBLE, {L.tokens, L.dims}, {&token, &dim}, &nan,
                         "directions theta_k at each run's last frame (NaN beyond its n, d)");
                variable("magnitudes", H5T_NATIVE_DOUBLE, {L.tokens}, {&token}, &nan,
                         "magnitudes r_k at each run's last frame");
            } else {
                variable("positions", H5T_NATIVE_DOUBLE, {L.frames, L.tokens, L.dims},
                         {&*time_scale, &token, &dim}, &nan, "directions theta_k at every frame");
                variable("magnitudes", H5T_NATIVE_DOUBLE, {L.frames, L.tokens},
                         {&*time_scale, &token}, &nan, "magnitudes r_k at every frame");
            }
        }
        const signed char zero = 0;
        const std::int64_t zero64 = 0;
        {
            // The cluster history of each run (docs/model.md §5.2): t_k over k = 1, 2, 4, ...
            // (the largest n's), and the merge events padded to n - 1 rows.
            const std::vector<std::int64_t> levels = clustering_levels(L.tokens);
            hdf5_dataset k = scale("k", H5T_NATIVE_INT64, levels.size(), levels.data(),
                                   "cluster count k of clustering_time: 1, 2, 4, ... <= n");
            variable("clustering_time", H5T_NATIVE_DOUBLE, {levels.size()}, {&k}, &nan,
                     "t_k of each run: the time of the first frame whose cluster count "
                     "(clusters) is <= k; NaN if never (or k beyond the run's n)");
            std::vector<std::int64_t> rows(merge_rows());
            std::iota(rows.begin(), rows.end(), 0);
            hdf5_dataset merge = scale("merge", H5T_NATIVE_INT64, rows.size(), rows.data(),
                                       "index of a run's merge event, in order");
            std::vector<const char*> fields{"time"};
            for (const char* column : merge_event_columns)
                fields.push_back(column);
            hdf5_dataset field = scale("merge_field", hdf5_string_type(), fields.size(),
                                       fields.data(), "what each column of merges holds");
            variable("merges", H5T_NATIVE_DOUBLE, {rows.size(), fields.size()}, {&merge, &field},
                     &nan,
                     "merge events of each run, one row each (fields: time, frame, label, "
                     "absorbed, size, absorbed_size, clusters_after; as /cluster_history/merges "
                     "of a single-run file), NaN after its last; at most n - 1 rows, see "
                     "merge_count",
                     // Chunks of merge_chunk_rows rows: a run writes the rows it has, and the
                     // NaN rows after them take no space (n - 1 rows of 7 doubles is 0.9 MB a
                     // run at n = 16384).
                     {std::min<hsize_t>(rows.size(), merge_chunk_rows), fields.size()});
            variable("merge_count", H5T_NATIVE_INT64, {}, {}, &zero64,
                     "merge events of each run (more than the rows of merges only when "
                     "clusters split and merge again)");
        }
        // CF conventions: xarray shows the codes' meanings.
        const signed char flags[4] = {0, 1, 2, 3};
        variable("status", H5T_NATIVE_SCHAR, {}, {}, &zero,
                 "outcome of each run: 0 not run, 1 complete, 2 interrupted, 3 failed")
            .write_attribute("flag_values", H5T_NATIVE_SCHAR, {4}, flags);
        const std::uint64_t unwritten = 0;
        variable("checksum", H5T_NATIVE_UINT64, {}, {}, &unwritten,
                 "hash of each run's results as written (0: not written), which --resume "
                 "checks before it trusts a run marked complete");
        variable("frames", H5T_NATIVE_INT64, {}, {}, &zero64, "frames each run wrote");
        variable("rhs_evaluations", H5T_NATIVE_INT64, {}, {}, &zero64,
                 "right-hand-side evaluations of each run");
        variable("accepted_steps", H5T_NATIVE_INT64, {}, {}, &zero64,
                 "accepted steps (or layers) of each run");
        variable("wall_time", H5T_NATIVE_DOUBLE, {}, {}, &nan,
                 "wall-clock seconds of each run (the only value that differs between reruns)");
        variable("plateau_length", H5T_NATIVE_DOUBLE, {}, {}, &nan,
                 "length of each run's longest metastable plateau of the clusters series (the "
                 "earliest of equally long ones; at least the run's plateau_min; 0: none that "
                 "long; NaN: no frame), docs/model.md section 5.3");
        variable("plateau_clusters", H5T_NATIVE_INT64, {}, {}, &missing_count,
                 "cluster count of each run's longest metastable plateau (-1, the _FillValue: "
                 "no plateau, or no frame)")
            .write_attribute("_FillValue", missing_count);
        variable("parameters", hdf5_string_type(), {}, {}, nullptr,
                 "each run's full parameter record, name=value; ... (as /parameters of a "
                 "single-run file)");
        m_file->flush();
    }

    // One run's block of a dataset: its point on the axes, then the whole of `rest`.
    static std::vector<hsize_t> block_start(const std::vector<hsize_t>& point,
                                            const std::vector<hsize_t>& rest) {
        return concat(point, std::vector<hsize_t>(rest.size(), 0));
    }
    static std::vector<hsize_t> block_count(const std::vector<hsize_t>& point,
                                            const std::vector<hsize_t>& rest) {
        return concat(std::vector<hsize_t>(point.size(), 1), rest);
    }

    // The shape of one run's block of observable o: its frames, times its width.
    [[nodiscard]] std::vector<hsize_t> rest_of(std::size_t o) const {
        if (m_layout.width(o) > 1) return {m_layout.frames, m_layout.width(o)};
        return {m_layout.frames};
    }

    // Writes the block of one run.
    void write_block(const std::string& name, const std::vector<hsize_t>& point,
                     const std::vector<hsize_t>& rest, const void* data, hid_t memory_type) {
        m_file->open_dataset(name).write_block(block_start(point, rest), block_count(point, rest),
                                               memory_type, data);
    }

    // Reads the block of one run, as write_block writes it, as doubles.
    void read_block(const std::string& name, const std::vector<hsize_t>& point,
                    const std::vector<hsize_t>& rest, double* out) {
        m_file->open_dataset(name).read_block(block_start(point, rest), block_count(point, rest),
                                              H5T_NATIVE_DOUBLE, out);
    }

    std::string m_path;
    sweep_layout m_layout;
    sweep_positions m_positions;
    // The lock and the disk space reservations (declared first: it outlives the file).
    std::optional<output_claim> m_claim;
    std::optional<detail::hdf5_file> m_file;
    std::vector<bool> m_present, m_counts; // per observable of the layout
};

// The shape of the result of `e`, fixed before any run starts.
sweep_layout layout_of(const experiment& e);

// Refuses (input_error) a sweep file whose recorded experiment no longer matches the hash
// recorded at its creation (edited since); a file without the hash passes.
void check_recorded_experiment(const std::string& path, const experiment& e);

// Runs one point; never throws for the run's own failures (they are its record).
run_record run_point(const experiment& e, const sweep_layout& layout, std::size_t index,
                     int threads, const std::atomic<bool>* stop);

// Runs side by side (nadyn::choose_jobs for the experiment's first run).
int choose_jobs(const experiment& e, int jobs);

} // namespace nadyn::detail
