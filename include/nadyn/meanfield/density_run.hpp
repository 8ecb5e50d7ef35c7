#pragma once
// One run of the density solver (`nadyn meanfield`, docs/model.md §16): its inputs
// (meanfield_config, the flags of `nadyn simulate` where they mean the same), the time
// integration (Odeint's adaptive Dormand-Prince, landing on the frame times), the frames'
// observables and the resolution check that ends a run whose grid no longer holds the density.
#include "nadyn/meanfield/density_init.hpp"
#include "nadyn/meanfield/geometry.hpp"
#include "nadyn/model/parameters.hpp"
#include "nadyn/model/weights.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nadyn::meanfield {

enum class geometry_kind { automatic, circle, sphere, zonal };
geometry_kind parse_geometry(const std::string& text); // input_error naming the choices
std::string to_string(geometry_kind kind);

struct meanfield_config {
    geometry_kind geometry = geometry_kind::automatic; // circle (d = 2), sphere (d = 3), else zonal
    std::size_t d = 2;
    std::size_t points = 1024; // the circle's nodes
    std::size_t degree = 64;   // the sphere's and the zonal geometry's highest degree
    double beta = 4.0;
    double r0 = 1.0; // every token's starting magnitude (the kinetic form of pre-ln, peri-ln)
    scheme_parameters scheme{scheme::post_ln};
    std::optional<double> t_switch; // mix-ln: must be >= T (the solver has no magnitude)
    double T = 20.0;
    double dt = 0.01;        // the first step, and the frame spacing's unit
    std::int64_t every = 10; // a frame every `every * dt`
    double rtol = 1e-9, atol = 1e-11;
    density_init init;
    weights_spec weights;
    head_combine combine = head_combine::mean;
    std::uint64_t seed = 1;
    std::size_t modes = 8;
    // The resolution check: the largest coefficient in the top third of the spectral space
    // relative to the mean, and the most negative value relative to the largest, may not
    // exceed this.
    double resolution_tol = 1e-8;
    double peak_floor = 2.0; // peaks are local maxima above this (the uniform level is 1)
    int threads = 0;
    std::string command_line;

    // The geometry `automatic` resolves to.
    [[nodiscard]] geometry_kind resolved_geometry() const;
    // input_error naming the first invalid input and what is valid.
    void validate() const;
    // Every input, for /parameters; from_parameters reads it back (resume).
    [[nodiscard]] parameter_list to_parameters() const;
    static meanfield_config from_parameters(const parameter_list& parameters);
};

// The frame times of an uninterrupted run: 0, every * dt, 2 every * dt, ..., T.
std::vector<double> density_frame_times(const meanfield_config& config);

// The observables of a frame, under the particles' names (docs/model.md §16.6).
struct density_frame {
    double time = 0.0;
    double mass = 0.0;         // integral rho dsigma
    double mean_cos = 0.0;     // ‖integral x rho dsigma‖^2
    double r_mean = 0.0;       // integral r rho dsigma (r0 where the scheme has no magnitude)
    double energy = 0.0;       // (1/beta) log integral integral exp(beta <x, y>) rho rho
    std::vector<double> modes; // m_1..m_K
    std::int64_t peaks = 0;
    double tail = 0.0; // the resolution diagnostic
    double min_density = 0.0;
    double step_size = 0.0; // the step the integrator tries next
    // The integrated state when it is not the nodal values the sink gets (the zonal
    // geometry's coefficients): what a resume needs to continue bit for bit. Else empty.
    std::vector<double> state;
};

enum class density_outcome { complete, interrupted, unresolved };
const char* to_string(density_outcome outcome);

struct density_summary {
    density_outcome outcome = density_outcome::complete;
    std::size_t frames = 0;
    double last_time = 0.0;
    std::int64_t steps = 0, rejected = 0, evaluations = 0;
    double unresolved_time = 0.0; // the time of the first unresolved state (outcome unresolved)
    double unresolved_tail = 0.0;
    double wall_seconds = 0.0;
};

// Where a run starts: t = 0 from the configured density, or a resumed file's last frame.
struct density_start {
    std::vector<double> rho; // the state
    double time = 0.0;
    double step = 0.0;     // the step to try first
    std::size_t frame = 0; // the index of the frame at `time` (already written)
};

// Receives each frame's observables and the density at the nodes (followed, in the kinetic
// form, by log r at the nodes).
using density_frame_sink =
    std::function<void(const density_frame& frame, const std::vector<double>& rho)>;

class density_solver {
  public:
    // Validates, builds the geometry and the starting density (input_error on bad input).
    explicit density_solver(meanfield_config config);
    ~density_solver();
    density_solver(const density_solver&) = delete;
    density_solver& operator=(const density_solver&) = delete;

    [[nodiscard]] const meanfield_config& config() const { return m_config; }
    [[nodiscard]] density_geometry& geometry() { return *m_geometry; }
    [[nodiscard]] const std::vector<double>& initial_density() const { return m_initial; }
    // The frame times of an uninterrupted run: 0, every * dt, 2 every * dt, ..., T.
    [[nodiscard]] std::vector<double> frame_times() const;
    // The observables of the state at time t.
    density_frame observe(const std::vector<double>& state, double t, double step);
    // The nodal values of a state (the density, then log r in the kinetic form).
    [[nodiscard]] std::vector<double> nodal_values(const std::vector<double>& state) const;
    // Whether a frame passes the resolution check (tail and negativity within resolution_tol).
    [[nodiscard]] bool resolved(const density_frame& frame) const;

    // Integrates from `start` (the frame there is already recorded, except for a fresh start,
    // whose frame 0 is given to `sink` first) to T, giving each frame to `sink`. Stops early
    // when `stop` is set (the state then is the last frame: interrupted) or when the density
    // is no longer resolved (the last resolved state is the last frame: unresolved).
    // numerical_fault (integrate.hpp) on a non-finite density.
    density_summary run(const density_frame_sink& sink, const std::atomic<bool>* stop,
                        const std::optional<density_start>& start = std::nullopt);

  private:
    meanfield_config m_config;
    std::unique_ptr<density_geometry> m_geometry;
    std::vector<double> m_initial;
    double m_log_w0 = 0.0; // log of the kernel's degree-0 multiplier, for the energy
};

// Writes the run to an HDF5 file (layout in density_file.hpp); `overwrite` as --force.
density_summary run_to_file(density_solver& solver, const std::string& path, bool overwrite,
                            const std::atomic<bool>* stop);
// Continues the run of the file at `path` from its last frame, bitwise as if uninterrupted.
density_summary resume_file(const std::string& path, const std::atomic<bool>* stop,
                            std::unique_ptr<density_solver>* solver_out = nullptr);

} // namespace nadyn::meanfield
