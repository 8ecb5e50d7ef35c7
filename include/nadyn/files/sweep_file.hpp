#pragma once
// The sweep file (docs/file-format.md, "Sweep files"): every run of a sweep in one HDF5 file,
// each result an array over the sweep's axes, the axes' values HDF5 dimension scales, so that
// xarray opens it with named dimensions and h5py reads plain arrays:
//
//   /<axis>            coordinate of each sweep axis (dimension scale)
//   /time              frame times (dimension scale), when every run has the same frames;
//                      otherwise /frame (scale) and /time over (axes..., frame)
//   /<observable>      (axes..., time) float64 (counts int64, -1 the _FillValue), NaN where a
//                      run has no such frame; a vector observable (modes) over (..., mode)
//   /positions         final: (axes..., token, dim); all: (axes..., time, token, dim)
//   /magnitudes        final: (axes..., token);      all: (axes..., time, token)
//   /clustering_time   (axes..., k); /merges (axes..., merge, merge_field); /merge_count
//                      (-1, the _FillValue: not run, or a run that does not record clusters)
//   /recorded          (axes..., observable) int8, only when some run does not record an
//                      observable another records: 1 where the run records it, 0 where its
//                      entries are fill values (the cluster history and plateau follow clusters)
//   /status            (axes...) int8: 0 not run, 1 complete, 2 interrupted, 3 failed
//   /frames, /rhs_evaluations, /accepted_steps (axes...) int64; /wall_time (axes...)
//   /plateau_length, /plateau_clusters (axes...): each run's longest plateau
//   /checksum          (axes...) uint64: hash of each run's results as written (0: none)
//   /parameters        (axes...) string: each run's full parameter record
//   root attributes    nadyn_kind = "sweep", the experiment's text and overrides, the axes,
//                      positions, version, compiler, flags, status of the sweep
//
// The engine that schedules the runs (nadyn::experiment's sweep, the MPI sweep) describes the
// file by a `sweep_layout`, hands each run's results over as a `sweep_record` and never sees
// the format. No HDF5 type appears here: the HDF5 calls are in src/files/sweep_file.cpp,
// through the checked wrappers of src/files/hdf5.hpp.
#include "nadyn/model/cluster_history.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace nadyn {

// What a sweep file keeps of the positions: nothing, the last frame, or every frame.
enum class sweep_positions { none, final, all };
std::string_view to_string(sweep_positions positions);

// One axis of the sweep: a dimension scale named after the swept parameter.
struct sweep_file_axis {
    std::string name;
    std::string description;         // the scale's description attribute
    std::vector<std::string> labels; // the values as the experiment writes them
    // The values as the coordinate holds them: integers, numbers or text (the parameter's type).
    std::variant<std::vector<std::int64_t>, std::vector<double>, std::vector<std::string>> values;
    [[nodiscard]] std::size_t size() const { return labels.size(); }
};

// The shape of the file, fixed before any run starts.
struct sweep_layout {
    std::vector<sweep_file_axis> axes;
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
    // Whether each observable is a count (int64 in the file, sweep_record::missing_count its
    // fill value and _FillValue; float64 and NaN otherwise), and what the file says it is.
    std::vector<bool> counts;
    std::vector<std::string> descriptions;
    sweep_positions positions = sweep_positions::final;
    // Which observables each run records, run-major (runs() x observables.size()), when some
    // run does not record one that another does (an observables or observe axis); empty when
    // every run records every observable. The file keeps it as /recorded.
    std::vector<bool> recorded;

    // Whether run `index` records observable o (its entries are measurements, not fill); false
    // for an o beyond the observables (find() of a name the sweep does not record).
    [[nodiscard]] bool records(std::size_t index, std::size_t o) const {
        if (o >= observables.size()) return false;
        return recorded.empty() || recorded[index * observables.size() + o];
    }
    // The index of observable `name` in `observables` (observables.size() if absent).
    [[nodiscard]] std::size_t find(std::string_view name) const;
    [[nodiscard]] std::size_t width(std::size_t o) const {
        return o < widths.size() ? widths[o] : 1;
    }
    [[nodiscard]] bool count(std::size_t o) const { return o < counts.size() && counts[o]; }
    [[nodiscard]] std::string description(std::size_t o) const {
        return o < descriptions.size() ? descriptions[o] : std::string();
    }
    // The runs: the product of the axes' lengths (1 without axes).
    [[nodiscard]] std::size_t runs() const;
    // The axis indices of run `index`, row-major (the last axis varies fastest).
    [[nodiscard]] std::vector<std::size_t> coordinates(std::size_t index) const;
};

// What the file records of the experiment that made it (root attributes).
struct sweep_provenance {
    std::string experiment;             // the experiment file's text
    std::string source;                 // its path, or a label
    std::vector<std::string> overrides; // --set key=value, in order
    // The experiment's hash at creation (absent in files written before it was recorded).
    std::optional<std::string> digest;
    // Every input file the runs read and its SHA-256, in the same order (absent when the runs
    // read none, and in files written before they were recorded).
    std::optional<std::vector<std::string>> input_files, input_sha256;
};

// The outcome of one run, as the file's `status` holds it.
enum class sweep_run_status : signed char {
    not_run = 0,
    complete = 1,
    interrupted = 2,
    failed = 3
};

// What one run produced: everything the file keeps of it.
struct sweep_record {
    // A frame a count (clusters, plateau_clusters) does not have; the datasets' _FillValue.
    static constexpr std::int64_t missing_count = -1;

    std::size_t index = 0; // the run's index in the sweep (sweep_layout::coordinates)
    sweep_run_status status = sweep_run_status::not_run;
    // per observable of the layout, per frame (times its width: frame-major; NaN: absent)
    std::vector<std::vector<double>> observables;
    std::vector<double> times;                 // when the time grid is per run
    std::vector<double> positions, magnitudes; // final or all frames, padded with NaN
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
    std::string parameters; // "name=value; ..."
    std::string failure;    // why a failed run failed (not written to the file)
};

// The writer of a sweep file. Not thread-safe by itself: the callers write one record at a
// time (every call takes the library's HDF5 lock).
class sweep_file {
  public:
    // Creates the file with every dataset at its full size (filled with NaN / 0). The path is
    // claimed first: not a regular file, another writer's, or an existing file without
    // `overwrite` (unless it holds no result) is an input_error; a disk without room for the
    // header an io_error, and no file is left.
    static sweep_file create(const std::string& path, const sweep_provenance& provenance,
                             const sweep_layout& layout, bool overwrite);
    // Opens an existing sweep file to fill in what is missing; input_error while another
    // process writes it.
    static sweep_file open(const std::string& path, const sweep_layout& layout);

    sweep_file(sweep_file&&) noexcept;
    sweep_file& operator=(sweep_file&&) noexcept;
    ~sweep_file();

    // Each run's outcome, by run index.
    [[nodiscard]] std::vector<sweep_run_status> statuses();
    // The runs a resume may skip: marked complete, and their results in the file are the ones
    // written (the checksum recorded with the mark matches; in files from before checksums,
    // the run has frames and a finite first mean_cos). `distrusted` counts the runs marked
    // complete that fail this, to be run again.
    [[nodiscard]] std::vector<bool> trusted_runs(std::size_t& distrusted);
    // The results of run `index` as the file holds them: the observables, the per-run times
    // and the positions (what the checksum covers).
    [[nodiscard]] sweep_record read(std::size_t index);
    // Writes one run's results. The outcome (status, counters, checksum) is written and
    // flushed only after the results are: a file whose disk filled up, or a process killed
    // in between, never marks a run complete that it does not hold. The space both need is
    // reserved first (a full disk stops the sweep here, with the file whole: io_error).
    void write(const sweep_record& record);
    // The sweep's end: status "complete", "interrupted" or "failed".
    void finish(const std::string& status, std::size_t runs_failed);
    // Marks the sweep failed after an error that stopped it (a disk that filled up, the file
    // size limit, a write that failed): status "failed" and the error as `failure`, in the
    // room the last write kept beyond its results. Never throws: the error that stopped the
    // sweep is the one to report, and a file that cannot take even this keeps its runs and
    // its status "running".
    void finish_failed(const std::string& failure, std::size_t runs_failed) noexcept;

  private:
    struct impl;
    explicit sweep_file(std::unique_ptr<impl> state);
    std::unique_ptr<impl> m_impl;
};

// Whether `path` is a sweep file (root attribute nadyn_kind = "sweep"); input_error if it
// does not exist.
bool is_sweep_file(const std::string& path);

// The experiment a sweep file records. input_error when the file lacks its text or source,
// io_error when it lacks its overrides.
sweep_provenance read_sweep_provenance(const std::string& path);

// What `nadyn inspect` shows of a sweep file beside its layout.
struct sweep_file_overview {
    // The sweep's status ("unknown" if unrecorded), and why it failed when it says so.
    std::string status, failure;
    std::vector<sweep_run_status> runs; // by run index
    // Per name asked for that the file records: each run's last value on the grid (NaN:
    // none).
    std::map<std::string, std::vector<double>> last;
};
sweep_file_overview read_sweep_overview(const std::string& path, const sweep_layout& layout,
                                        const std::vector<std::string>& observables);

// The cluster history of one run of a sweep file (docs/model.md §5.2), as nadyn inspect
// --merges prints it.
struct sweep_run_history {
    std::string label;                    // the run's point, "beta=4, seed=1"
    std::vector<merge_event> merges;      // the events the file holds (at most n - 1)
    std::size_t merge_count = 0;          // events the run had
    std::vector<std::int64_t> levels;     // k of t_k
    std::vector<double> clustering_times; // t_k
};
// The history of run `index` (without its label); input_error for a file without cluster
// histories, or a run that does not record clusters ("merge events not recorded (add clusters
// to observables)").
sweep_run_history read_sweep_history(const std::string& path, const sweep_layout& layout,
                                     std::size_t index);

} // namespace nadyn
