#pragma once
// One simulation as an object: built from a run_config (validated, initial state and
// weights prepared, no file touched), then run to a trajectory file or to an observer.
// A sweep holds many of these.
#include "nadyn/experiment/run_config.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/model/observables.hpp"
#include "nadyn/model/system.hpp"
#include "nadyn/model/token_exchange.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nadyn {

namespace detail {
class frame_sink; // src/experiment/frame_sink.hpp
}

struct run_summary {
    integration_outcome outcome = integration_outcome::complete;
    frame_observables last; // observables of the last frame
    double last_time = 0.0;
    std::size_t frames = 0;
    solver_statistics statistics;
    double wall_seconds = 0.0;
};

// Progress in [0, 1] (t / T), called at most a few times per second by the run.
using progress_callback = std::function<void(double fraction)>;

class simulation {
  public:
    // Validates the configuration and prepares the initial state and the weights; throws
    // input_error for any bad input (unknown file, wrong shape, ...).
    explicit simulation(run_config config);
    // A run with a given initial state and weights (rerun and resume use the ones recorded
    // in a file, so they do not depend on regenerating them).
    simulation(run_config config, const initial_state& start, attention_weights weights);
    // The same with layernorm's gain and bias given (rerun and resume: the recorded ones);
    // the constructors above read them from the configuration's --ln-params file.
    simulation(run_config config, const initial_state& start, attention_weights weights,
               layer_norm_affine affine);

    // The run recorded in a trajectory file (its /parameters, theta0, r_initial and Q, K, V):
    // `nadyn rerun` runs it again; the result is bitwise identical.
    static simulation from_file(const std::string& path);

    // Continues the run in `path` from its last frame, appending to the file; `horizon`
    // (when given) extends T. Frames written only because the run was stopped are dropped
    // first, so the finished file is frame for frame the one an uninterrupted run writes.
    // Needs positions in the file (--positions all).
    run_summary
    resume_file(const std::string& path, std::optional<double> horizon,
                const std::atomic<bool>* stop = nullptr, const progress_callback& progress = {},
                const std::function<void(double t, std::int64_t step)>& after_frame = {});

    // Runs and writes the trajectory to `path`; an existing file is an input_error unless
    // overwrite. `after_frame` (optional) is called once each frame is on disk (live
    // plotting, or a test stopping the run at a chosen frame). On a numerical fault the frames so
    // far stay, status is "failed", and the fault is rethrown.
    run_summary
    run_to_file(const std::string& path, bool overwrite, const std::atomic<bool>* stop = nullptr,
                const progress_callback& progress = {},
                const std::function<void(double t, std::int64_t step)>& after_frame = {});

    // Runs without a file, calling `on_frame` with the observables of each frame.
    using frame_callback = std::function<void(const state_type& x, double t, std::int64_t step,
                                              const frame_observables& observables)>;
    run_summary run(const frame_callback& on_frame, const std::atomic<bool>* stop = nullptr,
                    const progress_callback& progress = {}, const resume_point* resume = nullptr);

    // Shares the run among the processes of `exchange` by its tokens (token_exchange.hpp;
    // not owned, must outlive the runs): every process calls the same run_to_file(),
    // resume_file() or run(); the writer process alone writes (or appends to) the file and
    // computes the frames' observables, the others step the same state without a file. The
    // trajectory is bitwise that of one process. nullptr: the run is this process's alone.
    void share_tokens(token_exchange* exchange) { m_exchange = exchange; }

    [[nodiscard]] const run_config& config() const { return m_config; }
    // Where the run's warnings go (diagnostics.hpp); by default they are discarded.
    void set_warning_sink(warning_sink sink) { m_config.integration.warn = std::move(sink); }
    [[nodiscard]] const state_type& state() const { return m_state; }
    [[nodiscard]] const attention_weights& weights() const { return m_weights; }
    // The flops of one evaluation of the run's attention (its first layer's weights, heads
    // combined and norm noise drawn as the run draws them) by the algorithm the kernel runs
    // for them (attention_kernel::flops): what `nadyn sweep --dry-run` counts.
    [[nodiscard]] double attention_flops() const;
    // Layernorm's gain and bias (empty: a = 1, b = 0; docs/model.md §10).
    [[nodiscard]] const layer_norm_affine& affine() const { return m_affine; }
    // The record of the inputs (parameters + provenance) written to /parameters.
    [[nodiscard]] parameter_list parameters() const;
    // The content hash of each input file the run read (input_files.hpp), as recorded:
    // attribute name (init_sha256, ...) and SHA-256. A run from a file carries the file's.
    [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& input_hashes() const {
        return m_input_hashes;
    }
    // A hash of everything the trajectory depends on: the parameter record (without the
    // command line and provenance), every input file's content hash and the initial state,
    // weights, gain and bias as read. The ranks of an MPI job compare it before they start.
    [[nodiscard]] std::string inputs_digest() const;
    // For a run from a file (from_file) about to be resumed: input_error naming the first
    // input file whose content differs from the SHA-256 the file recorded, since the resumed
    // run would continue a record that no longer describes its inputs. Files written before
    // the hashes were recorded have none; a file that is gone is not needed (the run reads
    // the recorded matrices). resume_file checks it first.
    void check_inputs_unchanged(const std::string& path) const;

  private:
    void set_start(const initial_state& start); // the state of t = 0 (and of displacement)
    void write_header(trajectory_writer& writer, const parameter_list& parameters) const;
    // Names the values of the run's frames in the writer's file (an older file keeps its
    // series' own names).
    void name_values(trajectory_writer& writer) const;
    // A new trajectory file at `path` with its header (`parameters` the record of the inputs)
    // and value names, removed again if the header cannot be written.
    std::unique_ptr<trajectory_writer> create_file(const std::string& path,
                                                   const trajectory_layout& layout, bool overwrite,
                                                   const parameter_list& parameters) const;
    // Whether the run's frames come a few milliseconds apart at most, so that its file may be
    // made on another thread meanwhile (run_to_file).
    [[nodiscard]] bool frames_come_soon() const;
    run_summary run_with_writer(detail::frame_sink& sink, const std::atomic<bool>* stop,
                                const progress_callback& progress, const resume_point* resume,
                                const solver_statistics& previous,
                                const std::function<void(double, std::int64_t)>& after_frame);

    // Reads where `path` resumes from: the state (into m_state), the resume point, the
    // frames to keep and the statistics so far; extends T to `horizon`.
    resume_point read_resume(const std::string& path, std::optional<double> horizon,
                             std::size_t& keep, solver_statistics& previous);
    // The writer's outcome of opening its file, agreed by every process of a shared run:
    // throws (quietly, the writer speaks) on the others when the writer failed.
    void agree_on_file(bool opened) const;

    run_config m_config;
    token_exchange* m_exchange = nullptr;
    attention_weights m_weights;
    layer_norm_affine m_affine;
    state_type m_state;
    std::vector<double> m_theta_initial;
    // The directions of a resumed file's last kept frame (read_resume): the previous frame of
    // the optional observables pair_change and angle.
    std::vector<double> m_resume_previous;
    // The cluster history of a resumed file up to its last kept frame (read_resume): the
    // labels there, the merge events so far, and the times and cluster counts of the kept
    // frames; the tracker of the resumed run restarts from them (cluster_tracker::restore).
    bool m_resume_tracks_clusters = false;
    std::size_t m_resume_frames = 0;
    std::vector<std::int64_t> m_resume_labels;
    std::vector<merge_event> m_resume_merges;
    std::vector<double> m_resume_times, m_resume_counts;
    std::vector<double> m_r_initial;
    std::vector<std::pair<std::string, std::string>> m_input_hashes;
};

// A new descriptive file name in `directory`: scheme, n, d, beta and the UTC time, with a
// counter when that name is taken. The name is reserved by creating the file exclusively
// (O_EXCL), so runs started at the same second, in one process or several, never share a
// file; the caller then writes it with overwrite = true.
std::string reserve_output_name(const run_config& config, const std::string& directory = ".");

// What every /parameters entry of a trajectory file means: the registry's descriptions (with
// units) and the provenance and statistics entries; written to /parameters/descriptions.
std::vector<std::pair<std::string, std::string>> parameter_descriptions();

// Refuses (input_error, naming what is degenerate) parameters that make the attention output
// A_k zero for every state in a scheme that divides by ‖A_k‖ (peri-ln, ngpt): every head's
// V = 0, or under --norm layernorm a zero gain whose bias b leaves V b nothing after centring.
// The simulation's constructors call it; a sweep calls it for its input files up front.
void check_attention_output(const run_config& config, const attention_weights& weights,
                            const layer_norm_affine& affine);

} // namespace nadyn
