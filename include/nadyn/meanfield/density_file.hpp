#pragma once
// The density solver's file (docs/file-format.md, "Density files"):
//
//   /density/value       (frames, points)  rho at the nodes, w.r.t. the uniform probability
//   /density/time        (frames)
//   /density/points      (points, d)       the nodes (for zonal files: a point of each ring)
//   /density/weights     (points)          quadrature weights: sum_i w_i rho_i is the mass
//   /density/log_magnitude (frames, points) log r at the nodes (pre-ln, peri-ln: §16.7)
//   /observables/<name>  {value, time, step}: mass, mean_cos, r_mean, energy, modes (frames, K),
//                        peaks, tail, min_density, step_size
//   /parameters          every input as an attribute (model = "meanfield"), the solver's
//                        statistics once the run ends
//   /  attributes        status ("running", "complete", "interrupted", "unresolved",
//                        "failed"), and unresolved_time when the grid lost the density
//
// Frames are appended and flushed one by one (SWMR, as trajectories), so a stopped run
// leaves every frame written so far.
#include "nadyn/meanfield/density_run.hpp"

#include <memory>
#include <string>
#include <vector>

namespace nadyn::meanfield {

// Names of the per-frame observables, in file order (modes has width K).
inline constexpr const char* density_observable_names[] = {
    "mass", "mean_cos", "r_mean", "energy", "modes", "peaks", "tail", "min_density", "step_size"};

class density_writer {
  public:
    // Creates the file (input_error if it exists and !overwrite, unless it holds no frame).
    density_writer(const std::string& path, const density_solver& solver, bool overwrite);
    // Reopens a file to append after its first `keep_frames` frames.
    density_writer(const std::string& path, std::size_t keep_frames);
    ~density_writer();
    density_writer(const density_writer&) = delete;
    density_writer& operator=(const density_writer&) = delete;

    void write_frame(const density_frame& frame, const std::vector<double>& rho);
    // Status and statistics; no frame may follow.
    void finish(const char* status, const density_summary& summary);
    [[nodiscard]] std::size_t frames() const { return m_frames; }

  private:
    struct impl;
    std::unique_ptr<impl> m_impl;
    std::string m_path;
    std::size_t m_frames = 0;
};

// What a density file holds, read whole (for inspect, resume and tests).
struct density_file {
    parameter_list parameters;
    std::string status;
    std::size_t points = 0, d = 0, frames = 0;
    std::vector<double> time;        // frames
    std::vector<double> value;       // frames x points
    std::vector<double> log_magnitude; // frames x points, the kinetic form's log r (else empty)
    std::vector<double> node_points; // points x d
    std::vector<double> weights;     // points
    std::vector<double> step_size;   // frames
    std::vector<double> tail;        // frames
    // Every observable in file order: name, values per frame, frames x width values.
    struct series {
        std::string name;
        std::size_t width = 1;
        std::vector<double> values;
    };
    std::vector<series> observables;
    double unresolved_time = 0.0; // when status is "unresolved"
};

// Whether the HDF5 file at `path` is a density file (its /parameters says model =
// "meanfield").
bool is_density_file(const std::string& path);
density_file read_density_file(const std::string& path, bool with_values = true);

} // namespace nadyn::meanfield
