// The sweep file (include/nadyn/files/sweep_file.hpp): its layout in HDF5, the writer and the
// readers. Every HDF5 call goes through the checked wrappers of hdf5.hpp.
#include "nadyn/files/sweep_file.hpp"

#include "files/hdf5.hpp"
#include "files/output_claim.hpp"
#include "files/sweep_arrays.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/detail/utc_now.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/version.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

namespace nadyn {

std::string_view to_string(sweep_positions positions) {
    switch (positions) {
    case sweep_positions::none:
        return "none";
    case sweep_positions::final:
        return "final";
    case sweep_positions::all:
        return "all";
    }
    return "final";
}

std::size_t sweep_layout::runs() const {
    std::size_t count = 1;
    for (const sweep_file_axis& axis : axes)
        count *= axis.size();
    return count;
}

std::size_t sweep_layout::find(std::string_view name) const {
    return std::size_t(std::find(observables.begin(), observables.end(), name) -
                       observables.begin());
}

std::vector<std::size_t> sweep_layout::coordinates(std::size_t index) const {
    std::vector<std::size_t> at(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
        at[a] = index % axes[a].size();
        index /= axes[a].size();
    }
    return at;
}

namespace {

using detail::hdf5_dataset;
using detail::hdf5_file;
using detail::hdf5_lock;
using detail::hdf5_string_type;
using detail::output_claim;

constexpr std::int64_t missing_count = sweep_record::missing_count;

using detail::concat_shape;
using detail::sweep_arrays;
const double nan = std::numeric_limits<double>::quiet_NaN();

std::vector<hsize_t> point_of(const sweep_layout& layout, std::size_t index) {
    const auto at = layout.coordinates(index);
    return {at.begin(), at.end()};
}

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

// Rows of a run's merge block: a history that only merges has at most n - 1 events.
hsize_t merge_rows(const sweep_layout& layout) {
    return std::max<hsize_t>(1, layout.tokens > 0 ? layout.tokens - 1 : 0);
}

// Rows of a chunk of merges (a chunk of a run's block is allocated only when written).
constexpr hsize_t merge_chunk_rows = 128;

// The datasets of a new file, created group by group (axes and time, observables, positions,
// cluster history, the runs' outcomes), each per-run dataset over the axes' scales.
class sweep_file_builder {
  public:
    // Makes the axes' scales.
    sweep_file_builder(hdf5_file& file, const sweep_layout& layout)
        : m_file(file), m_layout(layout), m_arrays(file, layout.axes) {}

    void create() {
        create_time();
        create_observables();
        if (m_layout.positions != sweep_positions::none) create_positions();
        // A run's cluster history and plateau are derived from its clusters series: without
        // it there is nothing to store, and zero merges or NaN times would read as "never".
        if (records_clusters()) create_cluster_history();
        if (!m_layout.recorded.empty()) create_recorded();
        create_outcomes();
        m_file.flush();
    }

  private:
    [[nodiscard]] bool records_clusters() const {
        return std::find(m_layout.observables.begin(), m_layout.observables.end(), "clusters") !=
               m_layout.observables.end();
    }

    hdf5_dataset scale(const std::string& name, hid_t type, std::size_t length, const void* values,
                       const std::string& text) {
        return m_arrays.scale(name, type, length, values, text);
    }

    hdf5_dataset variable(const std::string& name, hid_t type, const std::vector<hsize_t>& rest,
                          const sweep_arrays::scale_list& rest_scales, const void* fill,
                          const std::string& text, const std::vector<hsize_t>& rest_chunk = {}) {
        return m_arrays.variable(name, type, rest, rest_scales, fill, text, rest_chunk);
    }

    // The time dimension: the shared frame times, or a frame index and each run's times.
    void create_time() {
        const sweep_layout& L = m_layout;
        if (L.shared_times) {
            m_time_scale = scale("time", H5T_NATIVE_DOUBLE, L.frames, L.times.data(),
                                 "frame time t (continuous depth) of every run");
            return;
        }
        std::vector<std::int64_t> index(L.frames);
        std::iota(index.begin(), index.end(), 0);
        m_time_scale = scale("frame", H5T_NATIVE_INT64, L.frames, index.data(),
                             "frame index (the runs' frame times differ: see time)");
        variable("time", H5T_NATIVE_DOUBLE, {L.frames}, {&*m_time_scale}, &nan,
                 "frame time t of each run (NaN after its last frame)");
    }

    void create_observables() {
        const sweep_layout& L = m_layout;
        // The degrees k = 1..K of a vector observable (modes), when a run records one.
        std::optional<hdf5_dataset> mode_scale;
        for (std::size_t o = 0; o < L.observables.size(); ++o) {
            if (L.width(o) < 2 || mode_scale) continue;
            std::vector<std::int64_t> degrees(L.width(o));
            std::iota(degrees.begin(), degrees.end(), 1);
            mode_scale = scale("mode", H5T_NATIVE_INT64, degrees.size(), degrees.data(),
                               "degree k of the spectral mode m_k");
        }
        const hdf5_dataset* time = &*m_time_scale;
        for (std::size_t o = 0; o < L.observables.size(); ++o) {
            const std::string& name = L.observables[o];
            const std::string text = L.description(o);
            if (L.width(o) > 1)
                variable(name, H5T_NATIVE_DOUBLE, {L.frames, L.width(o)}, {time, &*mode_scale},
                         &nan, text);
            else if (!L.count(o))
                variable(name, H5T_NATIVE_DOUBLE, {L.frames}, {time}, &nan, text);
            else
                variable(name, H5T_NATIVE_INT64, {L.frames}, {time}, &missing_count, text)
                    .write_attribute("_FillValue", missing_count);
        }
    }

    void create_positions() {
        const sweep_layout& L = m_layout;
        std::vector<std::int64_t> tokens(L.tokens), dims(L.dims);
        std::iota(tokens.begin(), tokens.end(), 0);
        std::iota(dims.begin(), dims.end(), 0);
        const hdf5_dataset token =
            scale("token", H5T_NATIVE_INT64, L.tokens, tokens.data(), "token index k");
        const hdf5_dataset dim = scale("dim", H5T_NATIVE_INT64, L.dims, dims.data(),
                                       "coordinate index of theta_k in R^d");
        if (L.positions == sweep_positions::final) {
            variable("positions", H5T_NATIVE_DOUBLE, {L.tokens, L.dims}, {&token, &dim}, &nan,
                     "directions theta_k at each run's last frame (NaN beyond its n, d)");
            variable("magnitudes", H5T_NATIVE_DOUBLE, {L.tokens}, {&token}, &nan,
                     "magnitudes r_k at each run's last frame");
            return;
        }
        const hdf5_dataset* time = &*m_time_scale;
        variable("positions", H5T_NATIVE_DOUBLE, {L.frames, L.tokens, L.dims}, {time, &token, &dim},
                 &nan, "directions theta_k at every frame");
        variable("magnitudes", H5T_NATIVE_DOUBLE, {L.frames, L.tokens}, {time, &token}, &nan,
                 "magnitudes r_k at every frame");
    }

    // The cluster history of each run (docs/model.md §5.2): t_k over k = 1, 2, 4, ... (the
    // largest n's), and the merge events padded to n - 1 rows.
    void create_cluster_history() {
        const std::vector<std::int64_t> levels = clustering_levels(m_layout.tokens);
        const hdf5_dataset k = scale("k", H5T_NATIVE_INT64, levels.size(), levels.data(),
                                     "cluster count k of clustering_time: 1, 2, 4, ... <= n");
        variable("clustering_time", H5T_NATIVE_DOUBLE, {levels.size()}, {&k}, &nan,
                 "t_k of each run: the time of the first frame whose cluster count "
                 "(clusters) is <= k; NaN if never (or k beyond the run's n)");
        std::vector<std::int64_t> rows(merge_rows(m_layout));
        std::iota(rows.begin(), rows.end(), 0);
        const hdf5_dataset merge = scale("merge", H5T_NATIVE_INT64, rows.size(), rows.data(),
                                         "index of a run's merge event, in order");
        std::vector<const char*> fields{"time"};
        for (const char* column : merge_event_columns)
            fields.push_back(column);
        const hdf5_dataset field = scale("merge_field", hdf5_string_type(), fields.size(),
                                         fields.data(), "what each column of merges holds");
        variable("merges", H5T_NATIVE_DOUBLE, {rows.size(), fields.size()}, {&merge, &field}, &nan,
                 "merge events of each run, one row each (fields: time, frame, label, "
                 "absorbed, size, absorbed_size, clusters_after; as /cluster_history/merges "
                 "of a single-run file), NaN after its last; at most n - 1 rows, see "
                 "merge_count",
                 // Chunks of merge_chunk_rows rows: a run writes the rows it has, and the
                 // NaN rows after them take no space (n - 1 rows of 7 doubles is 0.9 MB a
                 // run at n = 16384).
                 {std::min<hsize_t>(rows.size(), merge_chunk_rows), fields.size()});
        variable("merge_count", H5T_NATIVE_INT64, {}, {}, &missing_count,
                 "merge events of each run (more than the rows of merges only when "
                 "clusters split and merge again; -1, the _FillValue: not run, or a run that "
                 "does not record clusters)")
            .write_attribute("_FillValue", missing_count);
    }

    // Which observables each run records (1) and which it does not (0: its entries are fill
    // values, not measurements), over (axes..., observable); the cluster history and plateau
    // follow clusters. Known before any run, so written whole now.
    void create_recorded() {
        const sweep_layout& L = m_layout;
        std::vector<const char*> names;
        for (const std::string& name : L.observables)
            names.push_back(name.c_str());
        const hdf5_dataset observable =
            scale("observable", hdf5_string_type(), names.size(), names.data(),
                  "name of an observable of the sweep (the last dimension of recorded)");
        const signed char unknown = 0;
        hdf5_dataset recorded =
            variable("recorded", H5T_NATIVE_SCHAR, {names.size()}, {&observable}, &unknown,
                     "whether each run records each observable: 1 yes, 0 no (the run did not "
                     "ask for it: its entries are fill values, not measurements; merges, "
                     "merge_count, clustering_time and the plateau follow clusters)");
        std::vector<signed char> values(L.runs() * names.size());
        for (std::size_t i = 0; i < L.runs(); ++i)
            for (std::size_t o = 0; o < names.size(); ++o)
                values[i * names.size() + o] = L.records(i, o) ? 1 : 0;
        if (!values.empty()) recorded.write_all(H5T_NATIVE_SCHAR, values.data());
    }

    // Each run's outcome, counters and parameter record.
    void create_outcomes() {
        const signed char zero = 0;
        const std::int64_t zero64 = 0;
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
        if (records_clusters()) create_plateau();
        variable("parameters", hdf5_string_type(), {}, {}, nullptr,
                 "each run's full parameter record, name=value; ... (as /parameters of a "
                 "single-run file)");
    }

    // Each run's longest metastable plateau of its clusters series.
    void create_plateau() {
        variable("plateau_length", H5T_NATIVE_DOUBLE, {}, {}, &nan,
                 "length of each run's longest metastable plateau of the clusters series (the "
                 "earliest of equally long ones; at least the run's plateau_min; 0: none that "
                 "long; NaN: no frame), docs/model.md section 5.3");
        variable("plateau_clusters", H5T_NATIVE_INT64, {}, {}, &missing_count,
                 "cluster count of each run's longest metastable plateau (-1, the _FillValue: "
                 "no plateau, or no frame)")
            .write_attribute("_FillValue", missing_count);
    }

    hdf5_file& m_file;
    const sweep_layout& m_layout;
    sweep_arrays m_arrays;
    std::optional<hdf5_dataset> m_time_scale; // time, or frame
};

void write_header(hdf5_file& f, const sweep_provenance& provenance, const sweep_layout& layout) {
    f.write_attribute("nadyn_kind", std::string("sweep"));
    f.write_attribute("status", std::string("running"));
    f.write_attribute("experiment", provenance.experiment);
    f.write_attribute("experiment_source", provenance.source);
    f.write_attribute("experiment_hash", provenance.digest.value_or(""));
    std::vector<std::string> overrides = provenance.overrides;
    if (overrides.empty()) overrides.emplace_back("");
    f.write_attribute("overrides", overrides);
    // The content of every input file the runs read, so that a resume can refuse inputs
    // that changed in between; absent when there are none.
    if (provenance.input_files && !provenance.input_files->empty()) {
        f.write_attribute("input_files", *provenance.input_files);
        f.write_attribute("input_sha256",
                          provenance.input_sha256.value_or(std::vector<std::string>{}));
    }
    std::vector<std::string> axes;
    for (const sweep_file_axis& axis : layout.axes)
        axes.push_back(axis.name);
    if (axes.empty()) axes.emplace_back("");
    f.write_attribute("axes", axes);
    f.write_attribute("positions", std::string(to_string(layout.positions)));
    f.write_attribute("runs", static_cast<std::int64_t>(layout.runs()));
    f.write_attribute("nadyn_version", std::string(version()));
    f.write_attribute("git_commit", std::string(git_commit()));
    f.write_attribute("compiler", std::string(compiler()));
    f.write_attribute("compiler_flags", std::string(compiler_flags()));
    f.write_attribute("build_type", std::string(build_type()));
    f.write_attribute("created", detail::utc_now());
    f.write_attribute("description",
                      std::string("nadyn sweep: each observable over the sweep's axes and "
                                  "time; open with xarray.open_dataset(path, "
                                  "engine='h5netcdf') or nadyn.open(path)"));
}

} // namespace

struct sweep_file::impl {
    static constexpr std::uintmax_t metadata_margin = output_claim::metadata_margin;
    // The attributes of finish_failed: a few hundred bytes, well inside a run's margin.
    static constexpr std::uintmax_t failure_margin = std::uintmax_t{64} << 10;

    impl(std::string path, sweep_layout layout)
        : m_path(std::move(path)), m_layout(std::move(layout)) {}

    std::string m_path;
    sweep_layout m_layout;
    // The lock and the disk space reservations (declared first: it outlives the file).
    std::optional<output_claim> m_claim;
    std::optional<hdf5_file> m_file;
    std::vector<bool> m_present, m_counts; // per observable of the layout

    // The bytes one run's results take.
    [[nodiscard]] std::uintmax_t run_bytes() const {
        const std::uintmax_t frames = m_layout.frames, n = m_layout.tokens, d = m_layout.dims;
        std::uintmax_t values = frames + 8;
        for (std::size_t o = 0; o < m_layout.observables.size(); ++o)
            values += m_layout.width(o) * frames;
        if (m_layout.positions == sweep_positions::final) values += n * (d + 1);
        if (m_layout.positions == sweep_positions::all) values += frames * n * (d + 1);
        values += n + (n + 1) * (merge_event_width + 1); // t_k and the merge events
        return values * sizeof(double) + 4096;
    }

    // The header's attributes, the coordinates and the datasets' headers (their values are
    // written run by run).
    [[nodiscard]] std::uintmax_t header_bytes(const sweep_provenance& provenance) const {
        std::uintmax_t bytes =
            metadata_margin + 2 * provenance.experiment.size() + 64 * m_layout.observables.size();
        for (const sweep_file_axis& axis : m_layout.axes)
            for (const std::string& value : axis.labels)
                bytes += 16 + value.size();
        return bytes + (m_layout.frames + m_layout.tokens + m_layout.dims) * sizeof(double);
    }

    // The shape of one run's block of observable o: its frames, times its width.
    [[nodiscard]] std::vector<hsize_t> rest_of(std::size_t o) const {
        if (m_layout.width(o) > 1) return {m_layout.frames, m_layout.width(o)};
        return {m_layout.frames};
    }

    // Writes the block of one run.
    void write_block(const std::string& name, const std::vector<hsize_t>& point,
                     const std::vector<hsize_t>& rest, const void* data, hid_t memory_type) {
        detail::write_run_block(*m_file, name, point, rest, data, memory_type);
    }

    // Reads the block of one run, as write_block writes it, as doubles.
    void read_block(const std::string& name, const std::vector<hsize_t>& point,
                    const std::vector<hsize_t>& rest, double* out) {
        detail::read_run_block(*m_file, name, point, rest, H5T_NATIVE_DOUBLE, out);
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

    [[nodiscard]] std::uint64_t checksum(const sweep_record& record) const {
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

    void write_observables(const std::vector<hsize_t>& point, const sweep_record& record) {
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
            write_block(name, point, {m_layout.frames}, counts.data(), H5T_NATIVE_INT64);
        }
    }

    void write_positions(const std::vector<hsize_t>& point, const sweep_record& record) {
        const hsize_t frames = m_layout.frames, n = m_layout.tokens, d = m_layout.dims;
        if (m_layout.positions == sweep_positions::final) {
            write_block("positions", point, {n, d}, record.positions.data(), H5T_NATIVE_DOUBLE);
            write_block("magnitudes", point, {n}, record.magnitudes.data(), H5T_NATIVE_DOUBLE);
        } else if (m_layout.positions == sweep_positions::all) {
            write_block("positions", point, {frames, n, d}, record.positions.data(),
                        H5T_NATIVE_DOUBLE);
            write_block("magnitudes", point, {frames, n}, record.magnitudes.data(),
                        H5T_NATIVE_DOUBLE);
        }
    }

    // t_k and the merge events of one run, padded to the largest run's n with NaN.
    // A run that does not record clusters keeps the fill values (merge_count -1, NaN t_k).
    void write_history(const std::vector<hsize_t>& point, const sweep_record& record) {
        if (!m_layout.records(record.index, m_layout.find("clusters"))) return;
        const std::vector<std::int64_t> levels = clustering_levels(m_layout.tokens);
        std::vector<double> times(levels.size(), nan);
        std::copy_n(record.clustering_times.begin(),
                    std::min(times.size(), record.clustering_times.size()), times.begin());
        write_block("clustering_time", point, {levels.size()}, times.data(), H5T_NATIVE_DOUBLE);
        const hsize_t rows = std::min<hsize_t>(merge_rows(m_layout), record.merges.size());
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

    // The outcome, written after the results: the counters, the plateau, the checksum and
    // last the status.
    void write_outcome(const std::vector<hsize_t>& point, const sweep_record& record) {
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
        const auto status = static_cast<signed char>(record.status);
        write_block("status", point, {}, &status, H5T_NATIVE_SCHAR);
    }
};

sweep_file::sweep_file(std::unique_ptr<impl> state) : m_impl(std::move(state)) {}
sweep_file::sweep_file(sweep_file&&) noexcept = default;
sweep_file& sweep_file::operator=(sweep_file&&) noexcept = default;
sweep_file::~sweep_file() = default;

sweep_file sweep_file::create(const std::string& path, const sweep_provenance& provenance,
                              const sweep_layout& layout, bool overwrite) {
    auto state = std::make_unique<impl>(path, layout);
    auto guard = hdf5_lock();
    state->m_claim.emplace(output_claim::create(path, overwrite, detail::holds_no_results));
    const std::string no_room = "no space for the header of '" + path + "'";
    try {
        // Checked before HDF5 creates the file (whose truncation returns the blocks), and
        // reserved again right after, before anything is written.
        state->m_claim->reserve(state->header_bytes(provenance), no_room);
    } catch (const io_error&) {
        if (state->m_claim->created()) state->m_claim->remove_file();
        throw;
    }
    try {
        state->m_file = hdf5_file::create(path);
        state->m_claim->reserve(state->header_bytes(provenance), no_room);
        write_header(*state->m_file, provenance, state->m_layout);
        sweep_file_builder(*state->m_file, state->m_layout).create();
        state->find_observables();
    } catch (...) {
        // Every handle is closed by now; a file without its datasets is no use.
        state->m_file.reset();
        state->m_claim->remove_file();
        throw;
    }
    return sweep_file(std::move(state));
}

sweep_file sweep_file::open(const std::string& path, const sweep_layout& layout) {
    auto state = std::make_unique<impl>(path, layout);
    auto guard = hdf5_lock();
    state->m_claim.emplace(output_claim::existing(path));
    state->m_claim->reserve(impl::metadata_margin, "no space to reopen '" + path + "'");
    state->m_file = hdf5_file::open_read_write(path);
    state->find_observables();
    return sweep_file(std::move(state));
}

std::vector<sweep_run_status> sweep_file::statuses() {
    auto guard = hdf5_lock();
    std::vector<signed char> codes(m_impl->m_layout.runs());
    m_impl->m_file->open_dataset("status").read_all(H5T_NATIVE_SCHAR, codes.data());
    std::vector<sweep_run_status> out(codes.size());
    std::transform(codes.begin(), codes.end(), out.begin(),
                   [](signed char code) { return static_cast<sweep_run_status>(code); });
    return out;
}

std::vector<bool> sweep_file::trusted_runs(std::size_t& distrusted) {
    auto guard = hdf5_lock();
    impl& f = *m_impl;
    const std::vector<sweep_run_status> status = statuses();
    const std::size_t runs = status.size();
    std::vector<std::int64_t> frames(runs);
    f.m_file->open_dataset("frames").read_all(H5T_NATIVE_INT64, frames.data());
    const bool has_checksums = f.m_file->has("checksum");
    std::vector<std::uint64_t> recorded(runs, 0);
    if (has_checksums)
        f.m_file->open_dataset("checksum").read_all(H5T_NATIVE_UINT64, recorded.data());
    std::vector<bool> trusted(runs, false);
    distrusted = 0;
    // The series whose first value must be finite: mean_cos, or with --observables
    // without it, step_size (recorded by every run, never NaN).
    const auto& names = f.m_layout.observables;
    std::size_t witness =
        std::size_t(std::find(names.begin(), names.end(), std::string("mean_cos")) - names.begin());
    if (witness == names.size())
        witness = std::size_t(std::find(names.begin(), names.end(), std::string("step_size")) -
                              names.begin());
    for (std::size_t i = 0; i < runs; ++i) {
        if (status[i] != sweep_run_status::complete) continue;
        const sweep_record stored = read(i);
        trusted[i] = frames[i] > 0 && witness < stored.observables.size() &&
                     !stored.observables[witness].empty() &&
                     std::isfinite(stored.observables[witness][0]) &&
                     (!has_checksums || f.checksum(stored) == recorded[i]);
        if (!trusted[i]) ++distrusted;
    }
    return trusted;
}

sweep_record sweep_file::read(std::size_t index) {
    auto guard = hdf5_lock();
    impl& f = *m_impl;
    const sweep_layout& L = f.m_layout;
    sweep_record record;
    record.index = index;
    const std::vector<hsize_t> point = point_of(L, index);
    const hsize_t frames = L.frames, n = L.tokens, d = L.dims;
    record.observables.resize(L.observables.size());
    for (std::size_t o = 0; o < L.observables.size(); ++o) {
        record.observables[o].assign(frames * L.width(o), std::nan(""));
        if (!f.m_present[o]) continue;
        f.read_block(L.observables[o], point, f.rest_of(o), record.observables[o].data());
        // A count's fill value is the NaN the run handed to write().
        if (f.m_counts[o])
            for (double& value : record.observables[o])
                if (value == double(missing_count)) value = std::nan("");
    }
    if (!L.shared_times) {
        record.times.resize(frames);
        f.read_block("time", point, {frames}, record.times.data());
    }
    if (L.positions != sweep_positions::none) {
        const bool all = L.positions == sweep_positions::all;
        const hsize_t position_frames = all ? frames : 1;
        record.positions.resize(position_frames * n * d);
        record.magnitudes.resize(position_frames * n);
        f.read_block("positions", point,
                     all ? std::vector<hsize_t>{frames, n, d} : std::vector<hsize_t>{n, d},
                     record.positions.data());
        f.read_block("magnitudes", point,
                     all ? std::vector<hsize_t>{frames, n} : std::vector<hsize_t>{n},
                     record.magnitudes.data());
    }
    return record;
}

void sweep_file::write(const sweep_record& record) {
    auto guard = hdf5_lock();
    impl& f = *m_impl;
    try {
        f.m_claim->reserve(2 * f.run_bytes() + impl::metadata_margin,
                           "no space left for the results of run " + std::to_string(record.index) +
                               " in '" + f.m_path + "'");
    } catch (const io_error& error) {
        throw io_error(std::string(error.what()) +
                       "; the runs written so far are intact and --resume continues");
    }
    const std::vector<hsize_t> point = point_of(f.m_layout, record.index);
    f.write_observables(point, record);
    if (!f.m_layout.shared_times)
        f.write_block("time", point, {f.m_layout.frames}, record.times.data(), H5T_NATIVE_DOUBLE);
    f.write_positions(point, record);
    const char* text = record.parameters.c_str();
    f.write_block("parameters", point, {}, &text, hdf5_string_type());
    if (f.m_file->has("clustering_time")) f.write_history(point, record); // older files lack it
    f.m_file->flush();
    f.write_outcome(point, record);
    f.m_file->flush();
}

void sweep_file::finish(const std::string& status, std::size_t runs_failed) {
    auto guard = hdf5_lock();
    impl& f = *m_impl;
    f.m_claim->reserve(impl::metadata_margin, "no space to close '" + f.m_path +
                                                  "'; its runs are intact and --resume continues");
    f.m_file->write_attribute("status", status);
    // A resume that ends the sweep clears why an earlier attempt failed.
    if (f.m_file->has_attribute("failure")) f.m_file->write_attribute("failure", std::string());
    f.m_file->write_attribute("finished", detail::utc_now());
    f.m_file->write_attribute("runs_failed", static_cast<std::int64_t>(runs_failed));
    f.m_file->flush();
}

void sweep_file::finish_failed(const std::string& failure, std::size_t runs_failed) noexcept {
    try {
        auto guard = hdf5_lock();
        impl& f = *m_impl;
        f.m_claim->reserve(impl::failure_margin, "no space to mark '" + f.m_path + "' failed");
        f.m_file->write_attribute("status", std::string("failed"));
        f.m_file->write_attribute("failure", failure);
        f.m_file->write_attribute("finished", detail::utc_now());
        f.m_file->write_attribute("runs_failed", static_cast<std::int64_t>(runs_failed));
        f.m_file->flush();
    } catch (...) {
    }
}

bool is_sweep_file(const std::string& path) {
    auto guard = hdf5_lock();
    if (!hdf5_file::is_hdf5(path)) return false;
    const auto file = hdf5_file::open_read_only(path);
    const auto kind = file.read_attribute("nadyn_kind");
    return kind && std::holds_alternative<std::string>(*kind) &&
           std::get<std::string>(*kind) == "sweep";
}

sweep_provenance read_sweep_provenance(const std::string& path) {
    auto guard = hdf5_lock();
    const auto file = hdf5_file::open_read_only(path);
    sweep_provenance out;
    auto get = [&](const char* name) {
        const auto value = file.read_attribute(name);
        if (!value || !std::holds_alternative<std::string>(*value))
            throw input_error("'" + path + "' lacks the attribute " + name);
        return std::get<std::string>(*value);
    };
    out.experiment = get("experiment");
    out.source = get("experiment_source");
    // overrides: a list of strings; a sweep without any records one empty string.
    const auto recorded = file.read_strings("overrides");
    if (!recorded) throw io_error("'" + path + "' lacks the attribute overrides");
    for (const std::string& value : *recorded)
        if (!value.empty()) out.overrides.push_back(value);
    const auto digest = file.read_attribute("experiment_hash");
    if (digest && std::holds_alternative<std::string>(*digest))
        out.digest = std::get<std::string>(*digest);
    if (file.has_attribute("input_files")) {
        out.input_files = file.read_strings("input_files");
        out.input_sha256 = file.read_strings("input_sha256");
    }
    return out;
}

sweep_file_overview read_sweep_overview(const std::string& path, const sweep_layout& layout,
                                        const std::vector<std::string>& observables) {
    const std::size_t runs = layout.runs();
    sweep_file_overview out;
    auto guard = hdf5_lock();
    const auto file = hdf5_file::open_read_only(path);
    const auto s = file.read_attribute("status");
    out.status =
        s && std::holds_alternative<std::string>(*s) ? std::get<std::string>(*s) : "unknown";
    // Why a sweep stopped with status failed (sweep_file::finish_failed).
    const auto failure = file.read_attribute("failure");
    if (failure && std::holds_alternative<std::string>(*failure))
        out.failure = std::get<std::string>(*failure);
    std::vector<signed char> status(runs);
    file.open_dataset("status").read_all(H5T_NATIVE_SCHAR, status.data());
    out.runs.resize(runs);
    std::transform(status.begin(), status.end(), out.runs.begin(),
                   [](signed char code) { return static_cast<sweep_run_status>(code); });
    std::vector<double> values(runs * layout.frames);
    for (const std::string& name : observables) {
        // Runs with --observables record only some: the others have no column.
        if (!file.has(name)) continue;
        auto& column = out.last[name];
        column.assign(runs, nan);
        file.open_dataset(name).read_all(H5T_NATIVE_DOUBLE, values.data());
        const auto o =
            std::size_t(std::find(layout.observables.begin(), layout.observables.end(), name) -
                        layout.observables.begin());
        if (layout.count(o)) // missing_count (-1) marks a missing frame of a count
            for (double& value : values)
                if (value < 0) value = nan;
        for (std::size_t i = 0; i < runs; ++i)
            for (std::size_t f = layout.frames; f-- > 0;)
                if (!std::isnan(values[i * layout.frames + f])) {
                    column[i] = values[i * layout.frames + f];
                    break;
                }
    }
    return out;
}

sweep_run_history read_sweep_history(const std::string& path, const sweep_layout& layout,
                                     std::size_t index) {
    sweep_run_history out;
    out.levels = clustering_levels(layout.tokens);
    auto guard = hdf5_lock();
    const auto file = hdf5_file::open_read_only(path);
    if (!file.has("merges") || !file.has("clustering_time"))
        throw input_error("'" + path +
                          "' records no merge events (written by a nadyn without cluster "
                          "histories)");
    if (!layout.records(index, layout.find("clusters")))
        throw input_error("'" + path +
                          "': merge events not recorded (add clusters to observables)");
    const std::vector<hsize_t> start = point_of(layout, index), count(start.size(), 1);
    out.clustering_times.resize(out.levels.size());
    file.open_dataset("clustering_time")
        .read_block(concat_shape(start, {0}), concat_shape(count, {out.levels.size()}),
                    H5T_NATIVE_DOUBLE, out.clustering_times.data());
    const hdf5_dataset merges = file.open_dataset("merges");
    const auto shape = merges.shape();
    const hsize_t rows = shape.at(shape.size() - 2), fields = shape.back();
    std::vector<double> table(rows * fields);
    merges.read_block(concat_shape(start, {0, 0}), concat_shape(count, {rows, fields}),
                      H5T_NATIVE_DOUBLE, table.data());
    std::int64_t total = 0;
    file.open_dataset("merge_count").read_block(start, count, H5T_NATIVE_INT64, &total);
    out.merge_count = static_cast<std::size_t>(std::max<std::int64_t>(total, 0)); // -1: not run
    for (hsize_t r = 0; r < rows; ++r) {
        const double* row = table.data() + r * fields;
        if (std::isnan(row[0])) break;
        merge_event m;
        m.time = row[0];
        m.frame = std::int64_t(row[1]);
        m.label = std::int64_t(row[2]);
        m.absorbed = std::int64_t(row[3]);
        m.size = std::int64_t(row[4]);
        m.absorbed_size = std::int64_t(row[5]);
        m.clusters_after = std::int64_t(row[6]);
        out.merges.push_back(m);
    }
    return out;
}

} // namespace nadyn
