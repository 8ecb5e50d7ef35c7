#pragma once
// Trajectory files in the H5MD 1.1 layout (https://www.nongnu.org/h5md/h5md.html).
//
//   /h5md                      version = [1, 1]; groups author (name), creator (name, version)
//   /h5md/modules/nadyn        version of nadyn's file format, what the elements mean, the
//                              model (equations as text, the scheme's layer, speed divisor and
//                              radial rate) and the specification it follows (docs/model.md)
//   /particles/tokens/box      dimension = d, boundary = ["none", ...] (d entries)
//   /particles/tokens/position {step, time, value (frames, n, d)}  directions theta
//   /particles/tokens/magnitude {step, time, value (frames, n)}    magnitudes r
//   /observables/<name>        {step, time, value (frames)}        one per observable; the
//                              group and its value carry `description` and `unit` attributes
//                              (observables.hpp); counts (clusters) are int64
//   /particles/tokens/cluster_label {step, time, value (frames, n) int64}  the cluster
//                              history's label of every token (with positions only)
//   /cluster_history/merges    {step, time (events), value (events, 6) int64}: the merge
//                              events, appended as they happen (cluster_history.hpp)
//   /cluster_history/clustering_time {k, value}  t_k for k = 1, 2, 4, ... (NaN: not yet)
//   /parameters                every input as an attribute; datasets theta0 (n x d),
//                              r_initial (n), and Q, K, V (d x d) when not the identity;
//                              solver statistics and wall time once the run ends
//   /parameters/descriptions   group: one string attribute per parameter name, saying what
//                              it means (an attribute cannot carry attributes itself)
//   /plateaus                  the metastable plateaus of the clusters series (plateaus.hpp):
//                              datasets start, end, clusters, censored (one entry each);
//                              attributes plateau_min, min_length, longest_*; written when
//                              the run ends
//   /  attribute status        "running", then "complete", "interrupted" or "failed"
//
// Every time series is extendible along frames, chunked one frame per chunk (split along
// tokens when a frame exceeds a few MiB). Frames are held in memory and written as one block
// per series (frame_buffering: at most 64 frames and 1 MiB, and never older than half a
// second), each block followed by a flush; the first frame, a stop, a failure and the end of
// the run flush at once, so a run that is stopped or fails leaves a readable file holding
// every frame it computed, and one killed (SIGKILL) every frame but those of its last moment.
#include "nadyn/model/cluster_history.hpp"
#include "nadyn/model/parameters.hpp"
#include "nadyn/model/plateaus.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nadyn {

// 2: descriptions and units, integer clusters, step_error, the model in the module group.
inline constexpr int file_format_version = 2;
// The account of the model the files refer to.
inline constexpr const char* model_specification = "docs/model.md, version 2";
inline constexpr const char* parameter_descriptions_group = "descriptions";

// What an observable in a file means (empty strings when the file does not say).
struct observable_description {
    std::string description, unit;
};

namespace detail {
class hdf5_file;
class output_claim;
} // namespace detail

enum class run_status { running, complete, interrupted, failed };

// What finish() needs to write the plateau table: the threshold and the run's horizon T it is
// relative to.
struct plateau_request {
    plateau_threshold threshold;
    double horizon = 0.0;
};

// A file's plateau table (/plateaus), as written by finish().
struct plateau_table {
    std::string plateau_min; // the threshold as given ("5%", "2.5")
    double min_length = 0.0; // the threshold as a time
    std::vector<plateau> plateaus;
};
const char* to_string(run_status status);

struct observable; // observables.hpp

// How trajectory_writer holds frames before writing them (one HDF5 write per series and one
// flush per block of frames instead of per frame: a small run's frames cost a tenth).
struct frame_buffering {
    // Frames held at most; 0: as many as fit in max_bytes, at most 64. 1: every frame is
    // written and flushed when it is given (the behaviour before the buffer).
    std::size_t frames = 0;
    std::size_t max_bytes = std::size_t{1} << 20;
    // Held frames are written at the next frame once the oldest is this old: a reader of the
    // live file (SWMR) lags by about this much, and a killed run loses at most this much.
    double max_seconds = 0.5;
};

struct trajectory_layout {
    std::size_t n = 0;
    std::size_t d = 0;
    bool positions = true; // false: magnitudes and observables only (large n)
    bool compress = false; // deflate + shuffle on the position and magnitude values
    // Single-writer/multiple-reader mode from the first frame on (HDF5 1.10 file format):
    // h5py (swmr=True) and nadyn inspect can read the file while it grows, and a writer
    // killed at any moment leaves every flushed frame intact.
    bool swmr = true;
    // The observables, in file order: /observables/<name>, `width` values per frame (a width
    // above 1 makes its value (frames, width) instead of (frames)), and the row of the
    // observables' table that says what it is (its description, unit and type; nullptr: an
    // undescribed float64 series).
    struct observable_column {
        std::string name;
        std::size_t width = 1;
        const observable* row = nullptr;
    };
    std::vector<observable_column> observables;
    std::string scheme; // recorded in /h5md/modules/nadyn
    // The cluster history (cluster_history.hpp): /cluster_history with the merge events and
    // t_k, and /particles/tokens/cluster_label when positions are recorded.
    bool cluster_history = false;
    frame_buffering buffering;
};

// What write_frame writes of the cluster history at a frame: n labels (ignored without
// positions), the frame's merge events and t_k (clustering_levels(n) values).
struct cluster_record {
    const std::int64_t* labels = nullptr;
    const std::vector<merge_event>* merges = nullptr;
    const std::vector<double>* clustering_times = nullptr;
};

// Writes one trajectory file. Construction creates the file (an input_error if it exists and
// overwrite is false, unless it holds no frame; if it is not a regular file; if another
// process writes it; or if it cannot be created), writes the H5MD header, the box and empty
// datasets, and sets status = "running". The file stays locked against other writers until
// the writer is destroyed, and every write first reserves the disk space it needs
// (src/files/output_claim.hpp): a full disk or a file size limit stops a write with an io_error
// before HDF5 starts it, so the file stays whole and readable.
class trajectory_writer {
  public:
    trajectory_writer(const std::string& path, const trajectory_layout& layout, bool overwrite);
    // Reopens an existing trajectory to append frames after its first `keep_frames` (the rest
    // are dropped); status becomes "running" again.
    static std::unique_ptr<trajectory_writer> append(const std::string& path,
                                                     std::size_t keep_frames, bool swmr = true,
                                                     const frame_buffering& buffering = {});
    // Writes the frames still held in memory (a run ended by an exception finish() did not
    // see); an error then is ignored (destructors do not throw).
    ~trajectory_writer();
    trajectory_writer(const trajectory_writer&) = delete;
    trajectory_writer& operator=(const trajectory_writer&) = delete;

    // Attributes of /parameters (may be called again to add or replace entries).
    void write_parameters(const parameter_list& parameters);
    // What each parameter means: (name, description) pairs written as string attributes of
    // the group /parameters/descriptions (created on first use, entries replaced). Call it
    // before the first frame (SWMR mode forbids attribute writes afterwards).
    void write_parameter_descriptions(
        const std::vector<std::pair<std::string, std::string>>& descriptions);
    // A row-major rows x cols dataset under /parameters (weights Q, K, V; theta0; r_initial),
    // replacing one of that name. cols == 1 writes a 1-D dataset of length rows (r_initial), which
    // parameter_matrix reads back as rows x 1.
    // stack > 0 writes a 3-D stack x (rows / stack) x cols dataset (the heads' weights).
    void write_parameter_matrix(const std::string& name, std::size_t rows, std::size_t cols,
                                const double* data, std::size_t stack = 0);

    // Names the values write_frame receives, in order, when they differ from the file's
    // observables: a file written before an observable existed (e.g. step_error) is
    // continued with the ones it has. input_error if the file has one not in `names`.
    // `widths`: values per frame of each name (empty: one each); a series whose width differs
    // from its name's is an input_error.
    void set_value_names(const std::vector<std::string>& names,
                         const std::vector<std::size_t>& widths = {});
    // The names of the file's observables, in file order.
    [[nodiscard]] std::vector<std::string> series_names() const;

    // Appends one frame: theta is n*d row-major (ignored when positions are off),
    // r has n entries, observables the values of each name of the layout (or of
    // set_value_names), in order: `width` values for a name of that width.
    // `clusters`: the cluster history at this frame, for a file that records one (ignored
    // otherwise; a file that records one and gets none leaves it unchanged at this frame).
    // Its merge events and labels are written before the frame's times, so a reader that
    // counts frames by their times sees no event of a frame it does not see.
    // The frame may be held in memory (frame_buffering) until flush(), finish() or the
    // writer's destruction writes it; the disk space it needs is reserved at once, so a full
    // disk stops the run at the same frame as without the buffer.
    void write_frame(std::int64_t step, double time, const double* theta, const double* r,
                     const std::vector<double>& observables,
                     const cluster_record* clusters = nullptr);
    // Writes the frames held in memory and flushes the file: every frame given so far is on
    // disk (for readers of the live file, and before anything that may end the process).
    void flush();
    // Frames given to write_frame (and those the file held when appending), on disk or held.
    [[nodiscard]] std::size_t frames_written() const { return m_frames; }
    // Frames on disk: frames_written() less those held in memory.
    [[nodiscard]] std::size_t frames_on_disk() const { return m_frames_on_disk; }
    // Closes and removes a file that holds no frame yet (its header could not be written);
    // only the file this writer created or truncated. Nothing may follow.
    void discard() noexcept;

    // Writes the frames held in memory, then the end-of-run attributes (status, and
    // `statistics` as attributes of /parameters) and flushes; in SWMR mode (which forbids attribute
    // writes) the file is closed and reopened first. No frame may follow. With `plateaus`, first
    // (re)writes the group /plateaus from the clusters series the file holds, every frame of a
    // resumed run included.
    void finish(run_status status, const parameter_list& statistics,
                const std::optional<plateau_request>& plateaus = std::nullopt);

    [[nodiscard]] const std::string& path() const { return m_path; }
    // Whether the path held a file without a frame (left by a run stopped before its first
    // frame), which this writer replaced without being asked to overwrite.
    [[nodiscard]] bool replaced_empty() const { return m_replaced_empty; }

  private:
    trajectory_writer() = default;
    struct impl;
    // The lock and the disk space reservations (declared first: it outlives the file).
    std::unique_ptr<detail::output_claim> m_claim;
    std::unique_ptr<impl> m_impl;
    std::string m_path;
    std::size_t m_frames = 0;
    std::size_t m_frames_on_disk = 0;
    std::size_t m_value_count = 0; // values per frame after set_value_names
    bool m_swmr = false;           // enter SWMR mode before the first frame
    bool m_swmr_started = false;
    bool m_wrote_frame = false; // a frame of this writer's is on disk
    bool m_replaced_empty = false;
};

// Reads every object header, attribute and the first and last value of every dataset of the
// HDF5 file at `path` with bounded SWMR retries; io_error or input_error at the first damage.
// For readers without a bound of their own on HDF5's SWMR retries (h5py: nadyn.open).
void verify_readable(const std::string& path);

// Clears the "open for writing" mark a killed writer left in the file at `path` (what
// `h5clear -s` does) when no writer holds the file any more, so that readers without nadyn's
// own check (h5py: nadyn.open) can open it; says whether it did. nadyn's readers do this by
// themselves. Never touches a file a live nadyn writer or another HDF5 writer holds.
bool clear_dead_writer_mark(const std::string& path);

// Whether the file at `path` holds no result of nadyn's: what a run or sweep leaves when it is
// stopped before its first frame or run, down to a stub of the first bytes of an HDF5 file
// killed before its first flush. A new run with that output replaces such a file; inspect and
// --resume say so instead of reporting a damaged file.
bool holds_no_results(const std::string& path);

// Refuses an output path that is empty, a directory, or (unless overwrite) an existing file
// that holds results (one holds_no_results() says is empty may be replaced), with a message
// that says which. Nothing is created: for failing early, before a run starts.
void check_output_path(const std::string& path, bool overwrite);

// input_error naming `path` when another process writes it now (a run or sweep still going):
// for --resume, before anything reads the file (a file without SWMR cannot be read while it
// is written, and the reader's error would hide the reason).
void refuse_live_output(const std::string& path);

// input_error naming `path` when it holds no result (for inspect and --resume).
void refuse_empty_output(const std::string& path);

// For a program that is nadyn alone (the command line): HDF5 prints no error stack anywhere
// in the process, at exit included (where it reports a damaged file it could not close).
// The library itself only silences HDF5 around its own calls (detail::hdf5_guard), so a
// host program's or h5py's setting stands.
void silence_hdf5_error_stacks();

// Reads a trajectory file written by trajectory_writer (also one whose run was stopped).
class trajectory_reader {
  public:
    explicit trajectory_reader(const std::string& path); // io_error/input_error if unreadable
    ~trajectory_reader();
    trajectory_reader(const trajectory_reader&) = delete;
    trajectory_reader& operator=(const trajectory_reader&) = delete;

    [[nodiscard]] std::string status() const;
    [[nodiscard]] const parameter_list& parameters() const { return m_parameters; }
    [[nodiscard]] std::size_t n() const { return m_n; }
    [[nodiscard]] std::size_t d() const { return m_d; }
    [[nodiscard]] bool has_positions() const { return m_has_positions; }
    // Frames present in every series (the minimum over series, so a run stopped between
    // two dataset writes still reads consistently).
    [[nodiscard]] std::size_t frame_count() const { return m_frames; }
    [[nodiscard]] std::vector<std::int64_t> steps() const;
    [[nodiscard]] std::vector<double> times() const;
    [[nodiscard]] std::vector<std::string> observable_names() const;
    // frames x width values, row-major (width: observable_width).
    [[nodiscard]] std::vector<double> observable(const std::string& name) const;
    // Values per frame of an observable: 1, or K for modes ((frames, K) in the file).
    [[nodiscard]] std::size_t observable_width(const std::string& name) const;
    // The `description` and `unit` attributes of /observables/<name> (input_error if absent).
    [[nodiscard]] observable_description describe_observable(const std::string& name) const;
    // (name, description) of /parameters/descriptions, in creation order (a replaced entry
    // comes last); empty for files without it.
    [[nodiscard]] std::vector<std::pair<std::string, std::string>> parameter_descriptions() const;
    // The plateau table /plateaus; nullopt when the file has none (a run still going or
    // killed, or a file from before nadyn recorded plateaus).
    [[nodiscard]] std::optional<plateau_table> plateaus() const;
    [[nodiscard]] std::vector<double> positions(std::size_t frame) const;  // n*d
    [[nodiscard]] std::vector<double> magnitudes(std::size_t frame) const; // n
    // Whether the file records a cluster history (/cluster_history; files from nadyn
    // before it do not).
    [[nodiscard]] bool has_cluster_history() const;
    // The labels of frame `frame` (n); input_error without them (no positions, older file).
    [[nodiscard]] std::vector<std::int64_t> cluster_labels(std::size_t frame) const;
    // The merge events of the frames before `frames` (all of frame_count() by default).
    [[nodiscard]] std::vector<merge_event> merge_events(std::size_t frames = SIZE_MAX) const;
    // t_k as written at the last frame, and the k: clustering_levels(n).
    [[nodiscard]] std::vector<double> clustering_times() const;
    // A /parameters dataset, row-major; nullopt if absent. rows/cols receive the shape.
    [[nodiscard]] std::optional<std::vector<double>>
    // A 3-D dataset reads as (stack rows) x cols with *stack its leading dimension (0 for
    // 1-D and 2-D datasets).
    parameter_matrix(const std::string& name, std::size_t* rows = nullptr,
                     std::size_t* cols = nullptr, std::size_t* stack = nullptr) const;

  private:
    // Why the file has no cluster history: not recorded (no clusters observable), or older.
    [[nodiscard]] std::string no_cluster_history(const std::string& what) const;

    std::unique_ptr<detail::hdf5_file> m_file;
    parameter_list m_parameters;
    std::size_t m_n = 0, m_d = 0, m_frames = 0;
    bool m_has_positions = false;
};

// A two-dimensional dataset of doubles from any HDF5 file (init and weights files).
// Returns nullopt when the dataset is absent; throws input_error naming the file and
// the dataset when the file cannot be opened or the dataset is not a 2-D (or, with
// allow_vector, 1-D) array of numbers. `check_shape`, when given, sees rows and cols
// before any value is read and throws to refuse them: a malformed file can declare any
// shape, and reading first would allocate it (an input_error too when it exceeds memory).
struct matrix_data {
    std::size_t stack = 0; // leading dimension of a 3-D dataset (read as (stack rows) x cols)
    std::size_t rows = 0, cols = 0;
    std::vector<double> values; // row-major
};
using shape_check = std::function<void(std::size_t rows, std::size_t cols)>;
std::optional<matrix_data> read_matrix_dataset(const std::string& path, const std::string& name,
                                               bool allow_vector = false,
                                               const shape_check& check_shape = {});
// The same for a 2-D (rows x cols) or 3-D (stack x rows x cols) dataset, read as
// (stack rows) x cols; `check_shape` sees (stack, rows, cols), stack 0 for 2-D, before any
// value is read.
using stack_shape_check =
    std::function<void(std::size_t stack, std::size_t rows, std::size_t cols)>;
std::optional<matrix_data> read_matrix_stack_dataset(const std::string& path,
                                                     const std::string& name,
                                                     const stack_shape_check& check_shape);

} // namespace nadyn
