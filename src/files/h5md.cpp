#include "nadyn/files/h5md.hpp"

#include "files/hdf5.hpp"
#include "files/output_claim.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/scheme.hpp"
#include "nadyn/model/version.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace nadyn {

namespace {

using detail::hdf5_dataset;
using detail::hdf5_file;
using detail::hdf5_group;
using detail::hdf5_object;

// HDF5 caps a chunk at 4 GiB, but a chunk is read whole: a few MiB keeps reading one frame
// (or part of one) cheap while still amortising the per-chunk overhead.
constexpr std::size_t max_chunk_bytes = std::size_t{4} << 20;
// step, time and observables are one number per frame.
constexpr hsize_t scalar_chunk_frames = 256;

const char* const magnitude_path = "particles/tokens/magnitude";
const char* const position_path = "particles/tokens/position";
const char* const label_path = "particles/tokens/cluster_label";
const char* const history_path = "cluster_history";
const char* const merges_path = "cluster_history/merges";
const char* const clustering_time_path = "cluster_history/clustering_time";

// What the cluster history's datasets mean (their description and unit attributes).
// What a series is: its description and unit attributes, and its type.
struct series_info {
    std::string_view name, description, unit;
    bool integer = false;
};

constexpr series_info label_info{
    "cluster_label",
    "cluster label of every token: single-linkage clusters of cos >= 1 - cluster_eps (those "
    "of the clusters observable), labelled 0, 1, ... by smallest token at the first frame; a "
    "cluster keeps its label until it merges, a merged cluster takes the label of its largest "
    "part (ties: the smaller label), a part split off gets a fresh label (docs/model.md "
    "section 5.2)",
    "label", true};
constexpr series_info merges_info{
    "merges",
    "merge events of the cluster history, one row each (columns: frame, label, absorbed, size, "
    "absorbed_size, clusters_after): at frame `frame` (first frame at which they are one), "
    "cluster `absorbed` (absorbed_size tokens) merged into cluster `label` (size tokens so "
    "far); clusters_after is the frame's cluster count; several merges in one frame are "
    "applied largest part first (docs/model.md section 5.2)",
    "frame, label, label, count, count, count", true};

// One frame per chunk, split along tokens when a frame exceeds max_chunk_bytes.
std::vector<hsize_t> frame_chunk(std::size_t n, std::size_t values_per_token) {
    const std::size_t token_bytes = values_per_token * sizeof(double);
    const std::size_t rows = std::clamp<std::size_t>(max_chunk_bytes / token_bytes, 1, n);
    std::vector<hsize_t> chunk{1, rows};
    if (values_per_token > 1) chunk.push_back(values_per_token);
    return chunk;
}

// An H5MD time-dependent element: a group holding value, time and step.
struct series {
    hdf5_dataset value;
    hdf5_dataset time;
    hdf5_dataset step;
};

series create_series(hdf5_group& parent, const std::string& name,
                     const std::vector<hsize_t>& row_shape, const std::vector<hsize_t>& chunk,
                     bool compress, const series_info* about = nullptr) {
    hdf5_group group = parent.create_group(name);
    const hid_t value_type = about && about->integer ? H5T_STD_I64LE : H5T_IEEE_F64LE;
    hdf5_dataset value = group.create_series("value", value_type, row_shape, chunk, compress);
    if (about) {
        // On the H5MD element (the group) and on its value dataset, so that h5dump -H and
        // h5py show it wherever a reader looks.
        for (hdf5_object* target :
             {static_cast<hdf5_object*>(&group), static_cast<hdf5_object*>(&value)}) {
            target->write_attribute("description", std::string(about->description));
            if (!about->unit.empty()) target->write_attribute("unit", std::string(about->unit));
        }
    }
    return {std::move(value),
            group.create_series("time", H5T_IEEE_F64LE, {}, {scalar_chunk_frames}, false),
            group.create_series("step", H5T_STD_I64LE, {}, {scalar_chunk_frames}, false)};
}

// Where each series' values start in write_frame's vector: the widths before it.
std::vector<std::size_t> prefix_offsets(const std::vector<std::size_t>& widths) {
    std::vector<std::size_t> offsets;
    std::size_t start = 0;
    for (const std::size_t width : widths) {
        offsets.push_back(start);
        start += width;
    }
    return offsets;
}

std::optional<scheme> find_scheme(const std::string& name) {
    for (const auto& row : scheme_table)
        if (row.name == name) return row.id;
    return std::nullopt;
}

std::string author_name() {
    const char* user = std::getenv("USER");
    return user && *user ? user : "nadyn user";
}

void validate(const trajectory_layout& layout) {
    if (layout.n == 0 || layout.d == 0)
        throw input_error("a trajectory needs at least one token and one dimension (n = " +
                          std::to_string(layout.n) + ", d = " + std::to_string(layout.d) + ")");
    std::set<std::string> seen;
    for (const auto& column : layout.observables) {
        const std::string& name = column.name;
        if (name.empty() || name == "." || name.find('/') != std::string::npos)
            throw input_error("observable name '" + name + "' cannot name an HDF5 group");
        if (!seen.insert(name).second)
            throw input_error("observable '" + name + "' is listed twice");
    }
}

std::string describe_found(std::size_t rank, H5T_class_t type_class) {
    const char* kind = "values";
    switch (type_class) {
    case H5T_INTEGER:
        kind = "integers";
        break;
    case H5T_FLOAT:
        kind = "floats";
        break;
    case H5T_STRING:
        kind = "strings";
        break;
    case H5T_COMPOUND:
        kind = "compound values";
        break;
    case H5T_ENUM:
        kind = "enumeration values";
        break;
    default:
        break;
    }
    if (rank == 0) return std::string("a scalar of ") + kind;
    return "a " + std::to_string(rank) + "-D array of " + kind;
}

// A 2-D (or, with allow_vector, 1-D as rows x 1) numeric dataset read as doubles. `name` must
// exist in `root`.
matrix_data read_matrix(const hdf5_group& root, const std::string& name, bool allow_vector,
                        bool require_finite, const shape_check& check_shape = {},
                        const stack_shape_check* check_stack = nullptr) {
    const std::string where = "dataset '" + name + "' in '" + root.file_path() + "'";
    const std::string expected = check_stack    ? "a 2-D or 3-D array of numbers"
                                 : allow_vector ? "a 1-D or 2-D array of numbers"
                                                : "a 2-D array of numbers";
    const H5I_type_t kind = root.kind(name);
    if (kind != H5I_DATASET)
        throw input_error(where + " must be " + expected + ", found " +
                          (kind == H5I_GROUP ? "a group" : "a named datatype"));
    const hdf5_dataset dataset = root.open_dataset(name);
    const std::vector<hsize_t> shape = dataset.shape();
    const H5T_class_t type_class = dataset.type_class();
    const bool numeric = type_class == H5T_INTEGER || type_class == H5T_FLOAT;
    const bool stacked = check_stack && shape.size() == 3;
    if (!numeric || !(shape.size() == 2 || (allow_vector && shape.size() == 1) || stacked))
        throw input_error(where + " must be " + expected + ", found " +
                          describe_found(shape.size(), type_class));
    // A 3-D stack count x rows x cols is read as (count rows) x cols.
    const hsize_t count = stacked ? shape[0] : 1;
    const hsize_t rows = stacked ? shape[1] : shape[0];
    const hsize_t cols = stacked ? shape[2] : shape.size() == 2 ? shape[1] : 1;
    if (check_stack) (*check_stack)(stacked ? count : 0, rows, cols);
    if (check_shape) check_shape(rows, cols);
    // In doubles, so that a product that wraps around cannot pass for a small one (and
    // under-allocate the buffer HDF5 then fills).
    const double bytes = double(sizeof(double)) * double(count) * double(rows) * double(cols);
    const double physical = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    if (bytes > double(std::numeric_limits<std::ptrdiff_t>::max()) ||
        (physical > 0 && bytes > physical))
        throw input_error(where + " declares " + std::to_string(count * rows) + " x " +
                          std::to_string(cols) + " numbers, more than this machine's memory");
    matrix_data matrix;
    matrix.stack = stacked ? count : 0;
    matrix.rows = count * rows;
    matrix.cols = cols;
    matrix.values.resize(matrix.rows * matrix.cols);
    if (!matrix.values.empty()) dataset.read_all(H5T_NATIVE_DOUBLE, matrix.values.data());
    if (require_finite) {
        for (std::size_t i = 0; i < matrix.values.size(); ++i) {
            if (std::isfinite(matrix.values[i])) continue;
            throw input_error(where + " holds a non-finite value (" +
                              to_display_string(matrix.values[i]) + ") at row " +
                              std::to_string(i / matrix.cols) + ", column " +
                              std::to_string(i % matrix.cols));
        }
    }
    return matrix;
}

} // namespace

const char* to_string(run_status status) {
    switch (status) {
    case run_status::running:
        return "running";
    case run_status::complete:
        return "complete";
    case run_status::interrupted:
        return "interrupted";
    case run_status::failed:
        return "failed";
    }
    return "unknown";
}

// ---- trajectory_writer --------------------------------------------------------------------

namespace {

constexpr std::uintmax_t metadata_margin = detail::output_claim::metadata_margin;
// The end-of-run attributes: a few hundred bytes, well inside a frame's margin.
constexpr std::uintmax_t finish_margin = std::uintmax_t{64} << 10;
// Frames held in memory at most: beyond this, a small run's writes are a few percent of its
// time already (one block of a few hundred KiB per series).
constexpr std::size_t max_buffered_frames = 64;

} // namespace

struct trajectory_writer::impl {
    hdf5_file file;
    hdf5_group parameters;
    std::optional<series> position;
    series magnitude;
    std::vector<series> observables;
    std::vector<std::string> observable_names; // of `observables`, in order
    // observables[i] takes value source[i] of write_frame's vector (identity by default).
    std::vector<std::size_t> source;
    // Values per frame of each series of `observables`, and where its values start in
    // write_frame's vector.
    std::vector<std::size_t> widths, offsets;
    // The cluster history (layout.cluster_history): labels (with positions), merge events
    // and their count, t_k.
    std::optional<series> labels;
    std::optional<series> merges;
    std::optional<hdf5_dataset> clustering_time;
    hsize_t merge_rows = 0;

    // Frames given to write_frame and not yet written, one contiguous block per series (rows
    // in frame order), so that a flush writes each series with one call.
    struct held_frames {
        std::size_t count = 0;
        std::vector<double> position, magnitude, time;
        std::vector<std::int64_t> labels, step;
        std::vector<std::vector<double>> observables;        // one per series of `observables`
        std::vector<std::int64_t> merge_values, merge_steps; // merge_event_width per event
        std::vector<double> merge_times;
        std::optional<std::vector<double>> clustering_time; // t_k at the last held frame
        std::chrono::steady_clock::time_point oldest;
    };
    held_frames held;
    frame_buffering buffering;
    std::size_t capacity = 1;           // frames held at most (from buffering and frame_bytes)
    std::uintmax_t bytes_per_frame = 0; // frame_bytes(), once the shapes are known

    // Bytes one frame adds to the file (values, plus time and step of every series).
    [[nodiscard]] std::uintmax_t frame_bytes() const {
        auto row_bytes = [](const hdf5_dataset& value) {
            std::uintmax_t bytes = sizeof(double);
            const auto shape = value.shape();
            for (std::size_t i = 1; i < shape.size(); ++i)
                bytes *= shape[i];
            return bytes;
        };
        std::uintmax_t bytes = row_bytes(magnitude.value);
        if (position) bytes += row_bytes(position->value);
        if (labels) bytes += row_bytes(labels->value);
        if (merges) bytes += 4096; // a frame's merge events: a few rows
        for (const std::size_t width : widths)
            bytes += width * sizeof(double);
        return bytes + (observables.size() + 2) * 2 * sizeof(double);
    }

    // Sizes the buffer: `buffering.frames`, or as many frames as fit in its bytes (at most
    // max_buffered_frames); at least one.
    void set_buffering(const frame_buffering& choice) {
        buffering = choice;
        bytes_per_frame = frame_bytes();
        token_count = static_cast<std::size_t>(magnitude.value.shape().at(1));
        if (position) position_row = static_cast<std::size_t>(position->value.shape().at(2));
        const std::size_t fit = static_cast<std::size_t>(
            choice.max_bytes / std::max<std::uintmax_t>(bytes_per_frame, 1));
        capacity = choice.frames > 0 ? choice.frames
                                     : std::clamp<std::size_t>(fit, 1, max_buffered_frames);
    }

    // Appends one frame to `held` (write_frame's arguments, checked).
    void hold(std::int64_t step, double time, const double* theta, const double* r,
              const std::vector<double>& values, const cluster_record* clusters) {
        if (held.count == 0) {
            held.oldest = std::chrono::steady_clock::now();
            held.observables.resize(observables.size());
        }
        auto append = [](auto& to, const auto* from, std::size_t count) {
            to.insert(to.end(), from, from + count);
        };
        const std::size_t n = token_count;
        if (position) append(held.position, theta, n * position_row);
        append(held.magnitude, r, n);
        for (std::size_t i = 0; i < observables.size(); ++i)
            append(held.observables[i], &values[offsets[i]], widths[i]);
        if (labels) {
            // A frame without a history (a resumed file's run that tracks none) repeats -1.
            if (clusters && clusters->labels)
                append(held.labels, clusters->labels, n);
            else
                held.labels.insert(held.labels.end(), n, -1);
        }
        if (merges && clusters) {
            if (clusters->merges)
                for (const merge_event& event : *clusters->merges) {
                    const std::int64_t columns[merge_event_width] = {
                        event.frame, event.label,         event.absorbed,
                        event.size,  event.absorbed_size, event.clusters_after};
                    append(held.merge_values, columns, merge_event_width);
                    held.merge_times.push_back(event.time);
                    held.merge_steps.push_back(event.step);
                }
            if (clusters->clustering_times &&
                clusters->clustering_times->size() == clustering_time->shape().at(0))
                held.clustering_time = *clusters->clustering_times;
        }
        held.time.push_back(time);
        held.step.push_back(step);
        ++held.count;
    }

    // Writes the held frames as rows first, first + 1, ... of every series, then flushes.
    // Values first, time and step last: a reader counts a frame only once every series has
    // it, so a run killed in the middle of this leaves only complete frames visible; the
    // merge events and labels of a frame are on disk before its times. The frames are
    // dropped from memory first, so that a failed write is not attempted again.
    void write_held(hsize_t first) {
        if (held.count == 0) return;
        held_frames block = std::move(held);
        held = held_frames{};
        const hsize_t count = block.count;
        if (position)
            position->value.write_rows(first, count, H5T_NATIVE_DOUBLE, block.position.data());
        magnitude.value.write_rows(first, count, H5T_NATIVE_DOUBLE, block.magnitude.data());
        for (std::size_t i = 0; i < observables.size(); ++i)
            observables[i].value.write_rows(first, count, H5T_NATIVE_DOUBLE,
                                            block.observables[i].data());
        if (labels) labels->value.write_rows(first, count, H5T_NATIVE_INT64, block.labels.data());
        if (merges && !block.merge_times.empty()) {
            const hsize_t events = block.merge_times.size();
            merges->value.write_rows(merge_rows, events, H5T_NATIVE_INT64,
                                     block.merge_values.data());
            merges->time.write_rows(merge_rows, events, H5T_NATIVE_DOUBLE,
                                    block.merge_times.data());
            merges->step.write_rows(merge_rows, events, H5T_NATIVE_INT64, block.merge_steps.data());
            merge_rows += events;
        }
        if (block.clustering_time)
            clustering_time->write_all(H5T_NATIVE_DOUBLE, block.clustering_time->data());
        auto for_each_series = [&](auto&& action) {
            if (position) action(*position);
            if (labels) action(*labels);
            action(magnitude);
            for (auto& s : observables)
                action(s);
        };
        for_each_series([&](series& s) {
            s.time.write_rows(first, count, H5T_NATIVE_DOUBLE, block.time.data());
        });
        for_each_series([&](series& s) {
            s.step.write_rows(first, count, H5T_NATIVE_INT64, block.step.data());
        });
        file.flush();
    }

    // Tokens (n) and values per token of the positions (d), from the datasets' shapes.
    std::size_t token_count = 0, position_row = 0;

    // Writes the header, the box and the empty series of a new file.
    static std::unique_ptr<impl> create(hdf5_file& file, const trajectory_layout& layout);
};

std::unique_ptr<trajectory_writer::impl>
trajectory_writer::impl::create(hdf5_file& file, const trajectory_layout& layout) {
    // On disk at once, so that a run killed from here on leaves an HDF5 file that
    // holds_no_results recognises as empty (rather than bytes no reader opens).
    file.flush();
    file.write_attribute("status", std::string(to_string(run_status::running)));

    hdf5_group h5md = file.create_group("h5md");
    h5md.write_attribute("version", std::vector<int>{1, 1});
    h5md.create_group("author").write_attribute("name", author_name());
    hdf5_group creator = h5md.create_group("creator");
    creator.write_attribute("name", std::string("nadyn"));
    creator.write_attribute("version", std::string(version()));
    hdf5_group module = h5md.create_group("modules").create_group("nadyn");
    module.write_attribute("version", std::vector<int>{file_format_version});
    module.write_attribute("position",
                           std::string("directions theta_k on the unit sphere S^{d-1}"));
    module.write_attribute("magnitude",
                           std::string("token magnitudes r_k > 0 (x_k = r_k theta_k)"));
    module.write_attribute("scheme", layout.scheme);
    module.write_attribute("time", std::string("continuous depth t"));
    module.write_attribute("specification", std::string(model_specification));
    module.write_attribute(
        "model",
        std::string("d theta_k/dt = P_{theta_k}(A_k) / s_k(t), P_theta(v) = v - <theta, v> theta; "
                    "A_k = sum_j softmax_j(beta <Q theta_k, K theta_j>) V theta_j; "
                    "dr_k/dt = radial rate of the scheme"));
    if (const auto id = find_scheme(layout.scheme)) {
        const scheme_info& about = info(*id);
        module.write_attribute("layer", std::string(about.layer));
        module.write_attribute("speed_divisor", "s_k = " + std::string(about.speed));
        module.write_attribute("radial_rate", "dr_k/dt = " + std::string(about.radial_rate));
    }

    hdf5_group tokens = file.create_group("particles").create_group("tokens");
    hdf5_group box = tokens.create_group("box");
    box.write_attribute("dimension", static_cast<std::int64_t>(layout.d));
    box.write_attribute("boundary", std::vector<std::string>(layout.d, "none"));

    std::optional<series> position;
    const hsize_t n = layout.n, d = layout.d;
    if (layout.positions)
        position = create_series(tokens, "position", {n, d}, frame_chunk(layout.n, layout.d),
                                 layout.compress);
    series magnitude =
        create_series(tokens, "magnitude", {n}, frame_chunk(layout.n, 1), layout.compress);

    // Creation order is tracked so observables and parameters read back in the order given.
    hdf5_group observables_group = file.create_group("observables", true);
    std::vector<series> observables;
    std::vector<std::size_t> widths;
    std::vector<std::string> names;
    for (const trajectory_layout::observable_column& column : layout.observables) {
        const hsize_t width = column.width;
        // A vector observable (modes): rows of `width` values, the same frames per chunk.
        const std::vector<hsize_t> row =
            width > 1 ? std::vector<hsize_t>{width} : std::vector<hsize_t>{};
        const std::vector<hsize_t> chunk = width > 1
                                               ? std::vector<hsize_t>{scalar_chunk_frames, width}
                                               : std::vector<hsize_t>{scalar_chunk_frames};
        std::optional<series_info> about;
        if (column.row)
            about = series_info{column.row->name, column.row->description, column.row->unit,
                                column.row->integer};
        observables.push_back(create_series(observables_group, column.name, row, chunk, false,
                                            about ? &*about : nullptr));
        widths.push_back(static_cast<std::size_t>(width));
        names.push_back(column.name);
    }
    // The cluster history, created with the rest before SWMR starts (it forbids creating
    // datasets); the events are a series of their own, one row per event.
    std::optional<series> labels, merges;
    std::optional<hdf5_dataset> clustering_time;
    if (layout.cluster_history) {
        if (layout.positions)
            labels = create_series(tokens, "cluster_label", {n}, frame_chunk(layout.n, 1),
                                   layout.compress, &label_info);
        hdf5_group history = file.create_group(history_path, true);
        history.write_attribute(
            "description",
            std::string("the cluster history of the single-linkage clusters at cluster_eps "
                        "(docs/model.md section 5.2): merge events and clustering times t_k"));
        merges = create_series(history, "merges", {merge_event_width},
                               {scalar_chunk_frames, merge_event_width}, false, &merges_info);
        std::vector<std::string> columns(std::begin(merge_event_columns),
                                         std::end(merge_event_columns));
        merges->value.write_attribute("columns", columns);
        const std::vector<std::int64_t> levels = clustering_levels(layout.n);
        const hsize_t count = levels.size();
        hdf5_dataset k = history.create_dataset("k", H5T_STD_I64LE, {count});
        k.write_all(H5T_NATIVE_INT64, levels.data());
        k.write_attribute(
            "description",
            std::string("the cluster counts k of clustering_time: 1, 2, 4, ... <= n"));
        k.make_scale("k");
        const double nan = std::numeric_limits<double>::quiet_NaN();
        clustering_time =
            history.create_dataset("clustering_time", H5T_IEEE_F64LE, {count}, {count}, &nan);
        clustering_time->write_attribute(
            "description",
            std::string("t_k: the time of the first frame whose cluster count (the clusters "
                        "observable) is <= k, for k in k; NaN while there has been none. "
                        "Rewritten at every frame"));
        clustering_time->write_attribute("unit", std::string("t"));
        clustering_time->attach_scale(k, 0);
    }
    hdf5_group parameters = file.create_group("parameters", true);
    file.flush();
    auto made = std::make_unique<impl>(impl{std::move(file),
                                            std::move(parameters),
                                            std::move(position),
                                            std::move(magnitude),
                                            std::move(observables),
                                            names,
                                            {},
                                            widths,
                                            prefix_offsets(widths),
                                            {},
                                            {},
                                            {},
                                            0,
                                            {},
                                            {},
                                            1,
                                            0,
                                            0,
                                            0});
    made->labels = std::move(labels);
    made->merges = std::move(merges);
    made->clustering_time = std::move(clustering_time);
    return made;
}

trajectory_writer::trajectory_writer(const std::string& path, const trajectory_layout& layout,
                                     bool overwrite)
    : m_path(path) {
    validate(layout);
    m_claim = std::make_unique<detail::output_claim>(
        detail::output_claim::create(path, overwrite, detail::holds_no_results));
    m_replaced_empty = m_claim->replaced_empty();
    try {
        m_claim->reserve(metadata_margin, "no space for the header of '" + path + "'");
    } catch (const io_error&) {
        if (m_claim->created()) m_claim->remove_file();
        throw;
    }
    // The claim created or holds the file: HDF5 truncates it, which returns the blocks just
    // reserved, so they are reserved again before the header is written.
    hdf5_file file = hdf5_file::create(path, layout.swmr);
    m_swmr = layout.swmr;
    try {
        m_claim->reserve(metadata_margin, "no space for the header of '" + path + "'");
        m_impl = impl::create(file, layout);
        m_impl->set_buffering(layout.buffering);
    } catch (...) {
        // The handles are closed (impl::create's locals are gone, and the file here), so the
        // file can go: a half-written header is worse than no file. Only the file this
        // writer truncated or created, never whatever the path names by now.
        m_impl.reset();
        file.close();
        m_claim->remove_file();
        throw;
    }
}

std::unique_ptr<trajectory_writer> trajectory_writer::append(const std::string& path,
                                                             std::size_t keep_frames, bool swmr,
                                                             const frame_buffering& buffering) {
    // Refused while another process writes it (a run still going, in SWMR mode or not).
    auto claim = std::make_unique<detail::output_claim>(detail::output_claim::existing(path));
    claim->reserve(metadata_margin, "no space to reopen '" + path + "'");
    hdf5_file file = hdf5_file::open_read_write(path, true);
    const bool swmr_possible = file.supports_swmr();
    auto open_series = [&](const std::string& group) {
        const hdf5_group g = file.open_group(group);
        series s{g.open_dataset("value"), g.open_dataset("time"), g.open_dataset("step")};
        for (hdf5_dataset* dataset : {&s.value, &s.time, &s.step}) {
            if (dataset->shape().empty() || dataset->shape()[0] < keep_frames)
                throw input_error("'" + path + "' holds fewer than " + std::to_string(keep_frames) +
                                  " frames in /" + group);
            dataset->set_rows(keep_frames);
        }
        return s;
    };
    std::optional<series> position;
    if (file.has(position_path)) position = open_series(position_path);
    series magnitude = open_series(magnitude_path);
    std::vector<series> observables;
    std::vector<std::size_t> widths;
    const std::vector<std::string> observable_names = file.open_group("observables").children();
    for (const auto& name : observable_names) {
        observables.push_back(open_series("observables/" + name));
        const auto shape = observables.back().value.shape();
        widths.push_back(shape.size() > 1 ? static_cast<std::size_t>(shape[1]) : 1);
    }
    // The cluster history up to the kept frames: labels like any series, the merge events
    // of the frames before keep_frames (appended in frame order, so a prefix).
    std::optional<series> labels, merges;
    std::optional<hdf5_dataset> clustering_time;
    hsize_t merge_rows = 0;
    if (file.has(label_path)) labels = open_series(label_path);
    if (file.has(merges_path)) {
        const hdf5_group g = file.open_group(merges_path);
        merges = series{g.open_dataset("value"), g.open_dataset("time"), g.open_dataset("step")};
        hsize_t rows = std::numeric_limits<hsize_t>::max();
        for (const hdf5_dataset* dataset : {&merges->value, &merges->time, &merges->step})
            rows = std::min(rows, dataset->shape().at(0));
        std::vector<std::int64_t> events(rows * merge_event_width);
        if (rows > 0) merges->value.read_rows(0, rows, H5T_NATIVE_INT64, events.data());
        while (merge_rows < rows &&
               events[merge_rows * merge_event_width] < static_cast<std::int64_t>(keep_frames))
            ++merge_rows;
        for (hdf5_dataset* dataset : {&merges->value, &merges->time, &merges->step})
            dataset->set_rows(merge_rows);
        clustering_time = file.open_dataset(clustering_time_path);
    }
    hdf5_group parameters = file.open_group("parameters");
    file.write_attribute("status", std::string(to_string(run_status::running)));
    file.flush();
    std::unique_ptr<trajectory_writer> writer(new trajectory_writer());
    writer->m_claim = std::move(claim);
    writer->m_path = path;
    writer->m_frames = keep_frames;
    writer->m_swmr = swmr && swmr_possible; // a --no-swmr file keeps the 1.8 format
    writer->m_impl = std::make_unique<impl>(impl{std::move(file),
                                                 std::move(parameters),
                                                 std::move(position),
                                                 std::move(magnitude),
                                                 std::move(observables),
                                                 observable_names,
                                                 {},
                                                 widths,
                                                 prefix_offsets(widths),
                                                 {},
                                                 {},
                                                 {},
                                                 0,
                                                 {},
                                                 {},
                                                 1,
                                                 0,
                                                 0,
                                                 0});
    writer->m_impl->labels = std::move(labels);
    writer->m_impl->merges = std::move(merges);
    writer->m_impl->clustering_time = std::move(clustering_time);
    writer->m_impl->merge_rows = merge_rows;
    writer->m_impl->set_buffering(buffering);
    writer->m_frames_on_disk = keep_frames;
    return writer;
}

trajectory_writer::~trajectory_writer() {
    if (!m_impl || m_impl->held.count == 0) return;
    try {
        flush();
    } catch (...) {
    }
}

void trajectory_writer::discard() noexcept {
    if (m_frames > 0) return;
    m_impl.reset();
    if (m_claim) m_claim->remove_file();
}

void trajectory_writer::write_parameters(const parameter_list& parameters) {
    std::uintmax_t bytes = metadata_margin;
    for (const auto& [name, value] : parameters.entries())
        bytes += 64 + name.size() + to_display_string(value).size();
    m_claim->reserve(bytes, "no space for the parameters of '" + m_path + "'");
    for (const auto& [name, value] : parameters.entries())
        m_impl->parameters.write_attribute(name, value);
    m_impl->file.flush();
}

void trajectory_writer::write_parameter_descriptions(
    const std::vector<std::pair<std::string, std::string>>& descriptions) {
    if (m_swmr_started)
        throw std::logic_error("trajectory_writer::write_parameter_descriptions after a frame");
    std::uintmax_t bytes = metadata_margin;
    for (const auto& [name, description] : descriptions)
        bytes += 64 + name.size() + description.size();
    m_claim->reserve(bytes, "no space for the parameters of '" + m_path + "'");
    hdf5_group group = m_impl->parameters.has(parameter_descriptions_group)
                           ? m_impl->parameters.open_group(parameter_descriptions_group)
                           : m_impl->parameters.create_group(parameter_descriptions_group, true);
    for (const auto& [name, description] : descriptions)
        group.write_attribute(name, description);
    m_impl->file.flush();
}

void trajectory_writer::write_parameter_matrix(const std::string& name, std::size_t rows,
                                               std::size_t cols, const double* data,
                                               std::size_t stack) {
    m_claim->reserve(metadata_margin + std::uintmax_t{rows} * cols * sizeof(double),
                     "no space for the parameter '" + name + "' of '" + m_path + "'");
    if (m_impl->parameters.has(name)) m_impl->parameters.remove(name);
    std::vector<hsize_t> shape{rows};
    if (stack != 0) shape = {stack, rows / stack};
    if (cols != 1 || stack != 0) shape.push_back(cols);
    m_impl->parameters.create_dataset(name, shape, data);
    m_impl->file.flush();
}

void trajectory_writer::set_value_names(const std::vector<std::string>& names,
                                        const std::vector<std::size_t>& widths) {
    impl& f = *m_impl;
    auto width_of = [&](std::size_t i) { return i < widths.size() ? widths[i] : 1; };
    // Where each name's values start in write_frame's vector.
    std::vector<std::size_t> starts;
    std::size_t count = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
        starts.push_back(count);
        count += width_of(i);
    }
    f.source.clear();
    for (std::size_t s = 0; s < f.observable_names.size(); ++s) {
        const std::string& name = f.observable_names[s];
        const auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end())
            throw input_error("'" + m_path + "' records an observable '" + name +
                              "' that this nadyn does not compute; it cannot be continued");
        const auto i = static_cast<std::size_t>(it - names.begin());
        if (width_of(i) != f.widths[s])
            throw input_error("'" + m_path + "' records " + std::to_string(f.widths[s]) +
                              " values of '" + name + "' per frame, this run computes " +
                              std::to_string(width_of(i)) + "; it cannot be continued");
        f.source.push_back(i);
        f.offsets[s] = starts[i];
    }
    m_value_count = count;
}

void trajectory_writer::write_frame(std::int64_t step, double time, const double* theta,
                                    const double* r, const std::vector<double>& observables,
                                    const cluster_record* clusters) {
    if (!m_impl) throw std::logic_error("trajectory_writer::write_frame after finish");
    impl& f = *m_impl;
    const std::size_t expected =
        f.source.empty() ? std::accumulate(f.widths.begin(), f.widths.end(), std::size_t{0})
                         : m_value_count;
    if (observables.size() != expected)
        throw std::invalid_argument("write_frame: " + std::to_string(observables.size()) +
                                    " observable values for " + std::to_string(expected) +
                                    " observables");
    if (!r || (f.position && !theta)) throw std::invalid_argument("write_frame: null frame data");
    // The room for this frame and the ones held before it, reserved now: a disk that cannot
    // take them stops the run here, at the frame it would stop at without the buffer, after
    // the held frames (whose room was reserved with them) are written.
    const std::uintmax_t frame_room = 2 * f.bytes_per_frame;
    auto reserve = [&](std::size_t frames) {
        m_claim->reserve(frames * frame_room + metadata_margin,
                         "no space left for another frame of '" + m_path + "'");
    };
    try {
        try {
            reserve(f.held.count + 1);
        } catch (const io_error&) {
            if (f.held.count == 0) throw;
            flush();
            reserve(1);
        }
    } catch (const io_error& error) {
        if (m_frames == 0)
            throw io_error(std::string(error.what()) +
                           "; no frame was written, so the file is removed");
        throw io_error(std::string(error.what()) + "; the frames written so far (" +
                       std::to_string(m_frames) + ") are intact");
    }
    if (m_swmr && !m_swmr_started) {
        f.file.flush();
        f.file.start_swmr_write();
        m_swmr_started = true;
    }
    f.hold(step, time, theta, r, observables, clusters);
    ++m_frames;
    // The first frame at once (the file then holds a result), then blocks: full, or old.
    if (!m_wrote_frame || f.held.count >= f.capacity ||
        std::chrono::steady_clock::now() - f.held.oldest >=
            std::chrono::duration<double>(f.buffering.max_seconds))
        flush();
}

void trajectory_writer::flush() {
    if (!m_impl) throw std::logic_error("trajectory_writer::flush after finish");
    impl& f = *m_impl;
    const std::size_t count = f.held.count;
    if (count == 0) return;
    f.write_held(m_frames_on_disk);
    m_frames_on_disk += count;
    m_wrote_frame = true;
}

namespace {

constexpr const char* plateaus_group = "plateaus";

// /plateaus from the file's own clusters series, so that a resumed run's table covers the
// frames written before the resume as well (docs/file-format.md).
void write_plateau_table(hdf5_file& file, const plateau_request& request) {
    if (!file.has("observables/clusters")) return;
    const hdf5_group clusters = file.open_group("observables/clusters");
    const hdf5_dataset value = clusters.open_dataset("value");
    const hdf5_dataset time = clusters.open_dataset("time");
    const std::size_t frames =
        static_cast<std::size_t>(std::min(value.shape().at(0), time.shape().at(0)));
    std::vector<double> counts(frames), times(frames);
    if (frames > 0) {
        value.read_rows(0, frames, H5T_NATIVE_DOUBLE, counts.data());
        time.read_rows(0, frames, H5T_NATIVE_DOUBLE, times.data());
    }
    const double min_length = request.threshold.time(request.horizon);
    const std::vector<plateau> table = find_plateaus(times, counts, min_length);
    const std::optional<plateau> longest = longest_plateau(table);

    if (file.has(plateaus_group)) file.remove(plateaus_group);
    hdf5_group group = file.create_group(plateaus_group, true);
    group.write_attribute(
        "description",
        std::string("metastable plateaus of the clusters series: each maximal stretch of frames "
                    "with one cluster count lasting at least min_length (docs/model.md "
                    "section 5.3)"));
    group.write_attribute("plateau_min", request.threshold.to_string());
    group.write_attribute("min_length", min_length);
    group.write_attribute("longest_length", longest ? longest->length() : 0.0);
    group.write_attribute("longest_clusters", longest ? longest->clusters : std::int64_t{-1});
    const hsize_t count = table.size();
    std::vector<double> start, end;
    std::vector<std::int64_t> number;
    std::vector<signed char> censored;
    for (const plateau& p : table) {
        start.push_back(p.start);
        end.push_back(p.end);
        number.push_back(p.clusters);
        censored.push_back(p.censored ? 1 : 0);
    }
    auto column = [&](const char* name, hid_t file_type, hid_t memory_type, const void* data,
                      const char* description, const char* unit) {
        hdf5_dataset dataset = group.create_dataset(name, file_type, {count});
        if (count > 0) dataset.write_all(memory_type, data);
        dataset.write_attribute("description", std::string(description));
        dataset.write_attribute("unit", std::string(unit));
    };
    column("start", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, start.data(),
           "time of the plateau's first frame", "time");
    column("end", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, end.data(),
           "time of the first frame at another cluster count; for a censored plateau, the "
           "time of the run's last frame",
           "time");
    column("clusters", H5T_STD_I64LE, H5T_NATIVE_INT64, number.data(),
           "the cluster count during the plateau", "count");
    column("censored", H5T_STD_I8LE, H5T_NATIVE_SCHAR, censored.data(),
           "1: the plateau lasts to the run's last frame, so its end is where the run stopped "
           "and its length a lower bound; 0: it ended within the run",
           "");
}

} // namespace

void trajectory_writer::finish(run_status status, const parameter_list& statistics,
                               const std::optional<plateau_request>& plateaus) {
    if (!m_impl) throw std::logic_error("trajectory_writer::finish called twice");
    flush(); // within the room reserved with the held frames
    // Within what the last frame reserved, unless the file has no frame yet; the plateau
    // table takes at most four numbers per frame and its headers.
    const std::uintmax_t table_bytes =
        plateaus ? (std::uintmax_t{16} << 10) + 32 * std::uintmax_t{m_frames} : 0;
    m_claim->reserve(finish_margin + table_bytes, "no space to close '" + m_path +
                                                      "' (its frames, " + std::to_string(m_frames) +
                                                      ", are intact; its status stays 'running')");
    if (m_swmr_started) {
        // SWMR forbids attribute writes: end it by closing every handle, then reopen.
        m_impl.reset();
        hdf5_file file = hdf5_file::open_read_write(m_path);
        if (plateaus) write_plateau_table(file, *plateaus);
        hdf5_group parameters = file.open_group("parameters");
        for (const auto& [name, value] : statistics.entries())
            parameters.write_attribute(name, value);
        file.write_attribute("status", std::string(to_string(status)));
        file.flush();
        return;
    }
    if (plateaus) write_plateau_table(m_impl->file, *plateaus);
    for (const auto& [name, value] : statistics.entries())
        m_impl->parameters.write_attribute(name, value);
    m_impl->file.write_attribute("status", std::string(to_string(status)));
    m_impl->file.flush();
    m_impl.reset();
}

// ---- trajectory_reader --------------------------------------------------------------------

namespace {

// The series groups of a trajectory: position (if present), magnitude, then observables.
std::vector<std::string> series_paths(const hdf5_file& file) {
    std::vector<std::string> paths;
    if (file.has(position_path)) paths.emplace_back(position_path);
    if (file.has(label_path)) paths.emplace_back(label_path);
    paths.emplace_back(magnitude_path);
    if (file.has("observables"))
        for (const auto& name : file.open_group("observables").children())
            paths.push_back("observables/" + name);
    return paths;
}

} // namespace

trajectory_reader::trajectory_reader(const std::string& path) {
    auto not_trajectory = [&](const std::string& why) {
        return input_error("'" + path + "' is not a nadyn trajectory file (" + why + ")");
    };
    if (!hdf5_file::is_hdf5(path)) {
        std::error_code ec;
        if (std::filesystem::file_size(path, ec) == 0 && !ec)
            throw not_trajectory("it is empty: the run that created it, if any, stopped before "
                                 "writing; a new run with this output replaces it");
        throw not_trajectory("not an HDF5 file");
    }
    try {
        m_file = std::make_unique<hdf5_file>(hdf5_file::open_read_only(path));
    } catch (const io_error&) {
        if (detail::holds_no_results(path))
            throw input_error("'" + path +
                              "' holds no frame: the run that created it stopped before its "
                              "first frame (a new run with this output replaces it)");
        throw;
    }
    const hdf5_file& file = *m_file;
    if (!file.has(std::string(magnitude_path) + "/value"))
        throw not_trajectory("no /particles/tokens/magnitude");

    if (file.has("h5md/modules/nadyn")) {
        const auto format = file.open_group("h5md/modules/nadyn").read_integers("version");
        if (format && !format->empty() && (*format)[0] > file_format_version)
            throw input_error("'" + path + "' uses nadyn file format " +
                              std::to_string((*format)[0]) + ", newer than this nadyn reads (" +
                              std::to_string(file_format_version) + "); use a newer nadyn");
    }

    const auto magnitude_shape = file.open_dataset(std::string(magnitude_path) + "/value").shape();
    if (magnitude_shape.size() != 2)
        throw not_trajectory("/particles/tokens/magnitude/value is not a (frames, n) array");
    m_n = magnitude_shape[1];
    m_has_positions = file.has(std::string(position_path) + "/value");
    if (m_has_positions) {
        const auto shape = file.open_dataset(std::string(position_path) + "/value").shape();
        if (shape.size() != 3 || shape[1] != m_n)
            throw not_trajectory("/particles/tokens/position/value is not a (frames, n, d) array");
        m_d = shape[2];
    }
    std::optional<parameter_value> dimension;
    if (file.has("particles/tokens/box"))
        dimension = file.open_group("particles/tokens/box").read_attribute("dimension");
    if (dimension && std::holds_alternative<std::int64_t>(*dimension)) {
        const auto box_d = std::get<std::int64_t>(*dimension);
        if (box_d <= 0 || (m_has_positions && static_cast<std::size_t>(box_d) != m_d))
            throw not_trajectory("box dimension " + std::to_string(box_d) +
                                 " does not match the positions");
        m_d = static_cast<std::size_t>(box_d);
    } else if (!m_has_positions) {
        throw not_trajectory("no dimension in /particles/tokens/box");
    }

    m_frames = std::numeric_limits<std::size_t>::max();
    for (const auto& group : series_paths(file)) {
        for (const char* member : {"value", "time", "step"}) {
            const std::string dataset = group + "/" + member;
            if (!file.has(dataset)) throw not_trajectory("no /" + dataset);
            const auto shape = file.open_dataset(dataset).shape();
            if (shape.empty()) throw not_trajectory("/" + dataset + " is a scalar");
            m_frames = std::min<std::size_t>(m_frames, shape[0]);
        }
    }

    if (file.has("parameters")) {
        const hdf5_group parameters = file.open_group("parameters");
        for (const auto& name : parameters.attribute_names())
            if (auto value = parameters.read_attribute(name))
                m_parameters.set(name, std::move(*value));
    }
}

trajectory_reader::~trajectory_reader() = default;

std::string trajectory_reader::status() const {
    const auto status = m_file->read_attribute("status");
    if (status && std::holds_alternative<std::string>(*status))
        return std::get<std::string>(*status);
    return "unknown";
}

std::vector<std::int64_t> trajectory_reader::steps() const {
    std::vector<std::int64_t> steps(m_frames);
    m_file->open_dataset(std::string(magnitude_path) + "/step")
        .read_rows(0, m_frames, H5T_NATIVE_INT64, steps.data());
    return steps;
}

std::vector<double> trajectory_reader::times() const {
    std::vector<double> times(m_frames);
    m_file->open_dataset(std::string(magnitude_path) + "/time")
        .read_rows(0, m_frames, H5T_NATIVE_DOUBLE, times.data());
    return times;
}

bool trajectory_reader::has_cluster_history() const {
    return m_file->has(merges_path);
}

std::vector<std::int64_t> trajectory_reader::cluster_labels(std::size_t frame) const {
    if (!m_file->has(std::string(label_path) + "/value"))
        throw input_error("'" + m_file->file_path() +
                          "' has no cluster labels (they are recorded with the positions, by "
                          "nadyn with cluster histories)");
    if (frame >= m_frames)
        throw input_error("frame " + std::to_string(frame) + " is not in '" + m_file->file_path() +
                          "' (" + std::to_string(m_frames) + " frames)");
    std::vector<std::int64_t> labels(m_n);
    m_file->open_dataset(std::string(label_path) + "/value")
        .read_rows(frame, 1, H5T_NATIVE_INT64, labels.data());
    return labels;
}

std::string trajectory_reader::no_cluster_history(const std::string& what) const {
    // A run that chose its observables without clusters has no history to record: not zero
    // events. (nadyn reduced's files have no tokens, hence no choice and no history.)
    const auto names = observable_names();
    if (m_parameters.find("observables") &&
        std::find(names.begin(), names.end(), "clusters") == names.end())
        return "'" + m_file->file_path() + "': " + what +
               " not recorded (add clusters to observables)";
    return "'" + m_file->file_path() + "' records no " + what +
           " (written by a nadyn without cluster histories)";
}

std::vector<merge_event> trajectory_reader::merge_events(std::size_t frames) const {
    if (!has_cluster_history()) throw input_error(no_cluster_history("merge events"));
    frames = std::min(frames, m_frames);
    const hdf5_group g = m_file->open_group(merges_path);
    const hdf5_dataset value = g.open_dataset("value"), time = g.open_dataset("time"),
                       step = g.open_dataset("step");
    // Events whose three rows are all written (a writer stopped mid-frame leaves fewer).
    const hsize_t rows = std::min({value.shape().at(0), time.shape().at(0), step.shape().at(0)});
    std::vector<std::int64_t> columns(rows * merge_event_width), steps(rows);
    std::vector<double> times(rows);
    if (rows > 0) {
        value.read_rows(0, rows, H5T_NATIVE_INT64, columns.data());
        time.read_rows(0, rows, H5T_NATIVE_DOUBLE, times.data());
        step.read_rows(0, rows, H5T_NATIVE_INT64, steps.data());
    }
    std::vector<merge_event> events;
    for (hsize_t i = 0; i < rows; ++i) {
        const std::int64_t* c = columns.data() + i * merge_event_width;
        if (c[0] < 0 || static_cast<std::size_t>(c[0]) >= frames) break; // in frame order
        merge_event e;
        e.frame = c[0];
        e.step = steps[i];
        e.time = times[i];
        e.label = c[1];
        e.absorbed = c[2];
        e.size = c[3];
        e.absorbed_size = c[4];
        e.clusters_after = c[5];
        events.push_back(e);
    }
    return events;
}

std::vector<double> trajectory_reader::clustering_times() const {
    if (!has_cluster_history()) throw input_error(no_cluster_history("clustering times"));
    const hdf5_dataset dataset = m_file->open_dataset(clustering_time_path);
    std::vector<double> times(dataset.shape().at(0));
    dataset.read_all(H5T_NATIVE_DOUBLE, times.data());
    return times;
}

std::vector<std::string> trajectory_writer::series_names() const {
    return m_impl->observable_names;
}

std::vector<std::string> trajectory_reader::observable_names() const {
    if (!m_file->has("observables")) return {};
    return m_file->open_group("observables").children();
}

observable_description trajectory_reader::describe_observable(const std::string& name) const {
    const std::string group = "observables/" + name;
    if (name.empty() || name.find('/') != std::string::npos || !m_file->has(group))
        throw input_error("'" + m_file->file_path() + "' has no observable '" + name + "'");
    const hdf5_group element = m_file->open_group(group);
    observable_description out;
    auto text = [&](const char* attribute) {
        const auto value = element.read_attribute(attribute);
        const std::string* s = value ? std::get_if<std::string>(&*value) : nullptr;
        return s ? *s : std::string();
    };
    out.description = text("description");
    out.unit = text("unit");
    return out;
}

std::vector<std::pair<std::string, std::string>> trajectory_reader::parameter_descriptions() const {
    std::vector<std::pair<std::string, std::string>> out;
    const std::string path = std::string("parameters/") + parameter_descriptions_group;
    if (!m_file->has(path)) return out;
    const hdf5_group group = m_file->open_group(path);
    for (const auto& name : group.attribute_names()) {
        const auto value = group.read_attribute(name);
        if (const std::string* s = value ? std::get_if<std::string>(&*value) : nullptr)
            out.emplace_back(name, *s);
    }
    return out;
}

std::optional<plateau_table> trajectory_reader::plateaus() const {
    if (!m_file->has(plateaus_group)) return std::nullopt;
    const hdf5_group group = m_file->open_group(plateaus_group);
    plateau_table table;
    const std::string where = "'" + m_file->file_path() + "': /plateaus";
    auto attribute = [&](const char* name) {
        const auto value = group.read_attribute(name);
        if (!value) throw input_error(where + " lacks the attribute " + name);
        return *value;
    };
    table.plateau_min = to_display_string(attribute("plateau_min"));
    const parameter_value min_length = attribute("min_length");
    if (const double* value = std::get_if<double>(&min_length)) table.min_length = *value;
    auto column = [&](const char* name) {
        const hdf5_dataset dataset = group.open_dataset(name);
        const auto shape = dataset.shape();
        if (shape.size() != 1) throw input_error(where + "/" + name + " is not one-dimensional");
        std::vector<double> values(static_cast<std::size_t>(shape[0]));
        if (!values.empty()) dataset.read_all(H5T_NATIVE_DOUBLE, values.data());
        return values;
    };
    const auto start = column("start"), end = column("end"), clusters = column("clusters"),
               censored = column("censored");
    if (end.size() != start.size() || clusters.size() != start.size() ||
        censored.size() != start.size())
        throw input_error(where + " has columns of different lengths");
    for (std::size_t i = 0; i < start.size(); ++i)
        table.plateaus.push_back(
            {start[i], end[i], static_cast<std::int64_t>(clusters[i]), censored[i] != 0.0});
    return table;
}

std::size_t trajectory_reader::observable_width(const std::string& name) const {
    const std::string dataset = "observables/" + name + "/value";
    if (name.empty() || name.find('/') != std::string::npos || !m_file->has(dataset))
        throw input_error("'" + m_file->file_path() + "' has no observable '" + name + "'");
    const auto shape = m_file->open_dataset(dataset).shape();
    return shape.size() > 1 ? static_cast<std::size_t>(shape[1]) : 1;
}

std::vector<double> trajectory_reader::observable(const std::string& name) const {
    const std::string dataset = "observables/" + name + "/value";
    if (name.empty() || name.find('/') != std::string::npos || !m_file->has(dataset))
        throw input_error("'" + m_file->file_path() + "' has no observable '" + name + "'");
    std::vector<double> values(m_frames * observable_width(name));
    m_file->open_dataset(dataset).read_rows(0, m_frames, H5T_NATIVE_DOUBLE, values.data());
    return values;
}

namespace {

void check_frame(const hdf5_file& file, std::size_t frame, std::size_t frames) {
    if (frame >= frames)
        throw input_error("frame " + std::to_string(frame) + " is out of range: '" +
                          file.file_path() + "' holds " + std::to_string(frames) + " frames");
}

} // namespace

std::vector<double> trajectory_reader::positions(std::size_t frame) const {
    if (!m_has_positions)
        throw input_error("'" + m_file->file_path() +
                          "' holds no positions (it was written with positions off)");
    check_frame(*m_file, frame, m_frames);
    std::vector<double> values(m_n * m_d);
    m_file->open_dataset(std::string(position_path) + "/value")
        .read_rows(frame, 1, H5T_NATIVE_DOUBLE, values.data());
    return values;
}

std::vector<double> trajectory_reader::magnitudes(std::size_t frame) const {
    check_frame(*m_file, frame, m_frames);
    std::vector<double> values(m_n);
    m_file->open_dataset(std::string(magnitude_path) + "/value")
        .read_rows(frame, 1, H5T_NATIVE_DOUBLE, values.data());
    return values;
}

std::optional<std::vector<double>> trajectory_reader::parameter_matrix(const std::string& name,
                                                                       std::size_t* rows,
                                                                       std::size_t* cols,
                                                                       std::size_t* stack) const {
    const std::string dataset = "parameters/" + name;
    if (name.empty() || !m_file->has(dataset)) return std::nullopt;
    const stack_shape_check any_stack = [](std::size_t, std::size_t, std::size_t) {};
    matrix_data matrix = read_matrix(*m_file, dataset, true, false, {}, &any_stack);
    if (stack) *stack = matrix.stack;
    if (rows) *rows = matrix.rows;
    if (cols) *cols = matrix.cols;
    return std::move(matrix.values);
}

namespace {

bool file_holds_no_results(const hdf5_file& file) {
    if (file.children().empty()) return true; // killed right after its creation
    const auto kind = file.read_attribute("nadyn_kind");
    if (kind && std::holds_alternative<std::string>(*kind) &&
        std::get<std::string>(*kind) == "sweep") {
        if (!file.has("status")) return true; // its datasets were not all created
        const hdf5_dataset status = file.open_dataset("status");
        std::size_t runs = 1;
        for (const hsize_t length : status.shape())
            runs *= length;
        std::vector<signed char> outcomes(runs);
        if (runs > 0) status.read_all(H5T_NATIVE_SCHAR, outcomes.data());
        return std::all_of(outcomes.begin(), outcomes.end(), [](signed char s) { return s == 0; });
    }
    if (kind && std::holds_alternative<std::string>(*kind) &&
        std::get<std::string>(*kind) == "density") { // nadyn meanfield (src/meanfield/)
        if (!file.has("density/time")) return true;
        const auto shape = file.open_dataset("density/time").shape();
        return !shape.empty() && shape[0] == 0;
    }
    if (!file.has("h5md/creator")) return false;
    const auto creator = file.open_group("h5md/creator").read_attribute("name");
    if (!creator || !std::holds_alternative<std::string>(*creator) ||
        std::get<std::string>(*creator) != "nadyn")
        return false;
    const std::string values = std::string(magnitude_path) + "/value";
    if (!file.has(values)) return true; // the header was not complete
    const auto shape = file.open_dataset(values).shape();
    return !shape.empty() && shape[0] == 0;
}

// A copy of a small file in the temporary directory, removed with this object.
struct temporary_copy {
    std::string path;
    explicit temporary_copy(const std::string& from) {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nadyn-check-XXXXXX").string();
        const int fd = ::mkstemp(pattern.data());
        if (fd < 0) return;
        ::close(fd);
        std::error_code ec;
        std::filesystem::copy_file(from, pattern, std::filesystem::copy_options::overwrite_existing,
                                   ec);
        if (ec) {
            ::unlink(pattern.c_str());
            return;
        }
        path = pattern;
    }
    ~temporary_copy() {
        if (!path.empty()) ::unlink(path.c_str());
    }
    temporary_copy(const temporary_copy&) = delete;
    temporary_copy& operator=(const temporary_copy&) = delete;
};

} // namespace

void verify_readable(const std::string& path) {
    hdf5_file::verify_readable(path);
}

bool clear_dead_writer_mark(const std::string& path) {
    return hdf5_file::clear_dead_writer_mark(path);
}

void silence_hdf5_error_stacks() {
    const auto guard = detail::hdf5_lock();
    detail::hdf5_guard::set_process_default(nullptr, nullptr);
}

namespace {

// A file killed between HDF5's creation and its first flush: the superblock's first bytes (48
// for the 1.10 format) or nothing. No complete HDF5 file is that small (an empty one takes
// about 800 bytes), so such a file cannot be anybody's data.
bool is_creation_stub(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec || size >= 512) return false;
    if (size == 0) return true;
    static constexpr unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    unsigned char head[8] = {};
    std::ifstream file(path, std::ios::binary);
    if (!file.read(reinterpret_cast<char*>(head), sizeof head)) return false;
    return std::equal(std::begin(head), std::end(head), std::begin(signature));
}

} // namespace

void check_output_path(const std::string& path, bool overwrite) {
    detail::output_claim::check(path, overwrite, detail::holds_no_results);
}

bool holds_no_results(const std::string& path) {
    return detail::holds_no_results(path);
}

void refuse_empty_output(const std::string& path) {
    if (detail::holds_no_results(path))
        throw input_error("'" + path +
                          "' holds no result: a run or sweep was stopped right after "
                          "creating it; a new run with the same output replaces it");
}

bool detail::holds_no_results(const std::string& path) {
    try {
        if (is_creation_stub(path)) return true;
        const auto guard = detail::hdf5_lock();
        if (!hdf5_file::is_hdf5(path)) return false;
        try {
            return file_holds_no_results(hdf5_file::open_read_only(path));
        } catch (const io_error&) {
        }
        // A writer killed before its first frame leaves the file marked open for writing
        // (not in SWMR mode), which no reader opens. Clearing the mark changes the file, so
        // a copy is cleared and read instead: small, as such a file is.
        std::error_code ec;
        const auto size = std::filesystem::file_size(path, ec);
        if (ec || size > (std::uintmax_t{64} << 20)) return false;
        const temporary_copy copy(path);
        if (copy.path.empty()) return false;
        return file_holds_no_results(hdf5_file::open_read_write(copy.path, true));
    } catch (const std::exception&) {
        return false;
    }
}

std::optional<matrix_data> read_matrix_dataset(const std::string& path, const std::string& name,
                                               bool allow_vector, const shape_check& check_shape) {
    const hdf5_file file = hdf5_file::open_read_only(path);
    if (name.empty() || !file.has(name)) return std::nullopt;
    return read_matrix(file, name, allow_vector, true, check_shape);
}

std::optional<matrix_data> read_matrix_stack_dataset(const std::string& path,
                                                     const std::string& name,
                                                     const stack_shape_check& check_shape) {
    const hdf5_file file = hdf5_file::open_read_only(path);
    if (name.empty() || !file.has(name)) return std::nullopt;
    return read_matrix(file, name, false, true, {}, &check_shape);
}

} // namespace nadyn
