// The density solver's runs (density_solver, the adaptive integration, the file and resume)
// against the mean-field theory: linear growth through the integrator, conservation of mass,
// positivity, stationary states, the energy's monotonicity, spectral convergence under grid
// refinement, and bitwise resume.
#include "nadyn/meanfield/density_file.hpp"
#include "nadyn/meanfield/density_run.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/growth_rates.hpp"
#include "nadyn/model/initial.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/start_density.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <vector>

using namespace nadyn;
using namespace nadyn::meanfield;

namespace {

struct recorded {
    std::vector<density_frame> frames;
    std::vector<std::vector<double>> values;
};

recorded run_in_memory(density_solver& solver, density_summary* summary = nullptr) {
    recorded r;
    const density_summary s = solver.run(
        [&](const density_frame& frame, const std::vector<double>& rho) {
            r.frames.push_back(frame);
            r.values.push_back(rho);
        },
        nullptr);
    if (summary) *summary = s;
    return r;
}

meanfield_config base(std::size_t d, geometry_kind geometry, double beta, const std::string& init) {
    meanfield_config c;
    c.d = d;
    c.geometry = geometry;
    c.beta = beta;
    c.init = density_init::parse(init);
    c.points = 256;
    c.degree = 32;
    c.rtol = 1e-12;
    c.atol = 1e-14;
    c.threads = 1;
    return c;
}

std::string scratch(const std::string& name) {
    const std::string dir = std::string(NADYN_TEST_TMPDIR) + "/meanfield_solver";
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/" + name;
    std::filesystem::remove(path);
    return path;
}

// Runs `c` into `path` and stops it once `frames` frames are written (the stop is polled
// before each step): a file for --resume to continue. Returns the run's outcome.
density_outcome run_stopped_after(const meanfield_config& c, const std::string& path,
                                  std::size_t frames) {
    density_solver solver(c);
    density_writer writer(path, solver, false);
    std::atomic<bool> stop{false};
    const density_summary s = solver.run(
        [&](const density_frame& frame, const std::vector<double>& rho) {
            writer.write_frame(frame, rho);
            if (writer.frames() == frames) stop = true;
        },
        &stop);
    writer.finish(to_string(s.outcome), s);
    return s.outcome;
}

} // namespace

TEST_CASE("perturbed:3,1e-4 grows at lambda_3 through the integrator") {
    // An odd degree: the quadratic term of the dynamics (products of two degree-3 functions,
    // even) cannot feed degree 3, so the measured rate is lambda_3 up to O(eps^2) = 1e-8.
    struct geometry_case {
        std::size_t d;
        geometry_kind kind;
    };
    for (const geometry_case g :
         {geometry_case{2, geometry_kind::circle}, geometry_case{3, geometry_kind::sphere},
          geometry_case{5, geometry_kind::zonal}, geometry_case{64, geometry_kind::zonal}}) {
        const double beta = 4.0;
        meanfield_config c = base(g.d, g.kind, beta, "perturbed:3,1e-4");
        c.T = 1.0;
        c.every = 50;
        c.dt = 0.01;
        density_solver solver(c);
        const recorded r = run_in_memory(solver);
        REQUIRE(r.frames.size() == 3);
        const double m0 = r.frames.front().modes[2], m1 = r.frames.back().modes[2];
        const double measured = std::log(m1 / m0) / (2.0 * c.T);
        const double expected = growth_rate(3, beta, g.d, attention_kind::softmax);
        CAPTURE(g.d);
        CHECK(std::abs(measured / expected - 1.0) < 1e-4);
        // The other odd degrees stay at round-off.
        CHECK(r.frames.back().modes[0] < 1e-25);
        CHECK(r.frames.back().modes[4] < 1e-25);
    }
}

TEST_CASE("mass to 1e-12 and no negative density in any frame, up to the resolution limit") {
    for (const auto kind : {geometry_kind::circle, geometry_kind::sphere}) {
        meanfield_config c = base(kind == geometry_kind::circle ? 2 : 3, kind, 6.0, "noise:0.02,6");
        c.points = 512;
        c.degree = 48;
        c.rtol = 1e-9;
        c.atol = 1e-11;
        c.T = 60.0;
        c.every = 10;
        density_solver solver(c);
        density_summary summary;
        const recorded r = run_in_memory(solver, &summary);
        // Long enough for the clusters to outgrow the grid: the run ends unresolved, and
        // every frame it wrote is still resolved.
        CHECK(summary.outcome == density_outcome::unresolved);
        CHECK(r.frames.size() > 8);
        for (std::size_t f = 0; f < r.frames.size(); ++f) {
            CHECK(std::abs(r.frames[f].mass - 1.0) < 1e-12);
            const auto& rho = r.values[f];
            const double low = *std::min_element(rho.begin(), rho.end());
            const double high = *std::max_element(rho.begin(), rho.end());
            CHECK(low >= -c.resolution_tol * high);
            CHECK(r.frames[f].tail <= c.resolution_tol);
        }
    }
}

TEST_CASE("the uniform density is stationary") {
    for (const auto& [d, kind] : {std::pair{std::size_t{2}, geometry_kind::circle},
                                  std::pair{std::size_t{3}, geometry_kind::sphere},
                                  std::pair{std::size_t{16}, geometry_kind::zonal}}) {
        meanfield_config c = base(d, kind, 5.0, "uniform");
        c.T = 10.0;
        c.every = 100;
        density_solver solver(c);
        const recorded r = run_in_memory(solver);
        // The rate of the uniform density is 0 up to the transforms' round-off (about 1e-16 per
        // evaluation); over the run's evaluations it adds to about 1e-12, with the instruction
        // set deciding the last bits (the sanitizer build measured 1.1e-12).
        for (const double v : r.values.back())
            CHECK(std::abs(v - 1.0) < 1e-11);
    }
}

TEST_CASE("q equally spaced von Mises clusters keep their centres and masses") {
    // Each bump contracts (its own attention pulls it together) but, by the q-fold symmetry,
    // its centre and its mass stay: the density is stationary up to the bumps' shape.
    const std::size_t q = 3, n = 768;
    meanfield_config c = base(2, geometry_kind::circle, 10.0, "vonmises:3,30");
    c.points = n;
    c.T = 1.5;
    c.every = 50;
    density_solver solver(c);
    density_summary summary;
    const recorded r = run_in_memory(solver, &summary);
    REQUIRE(summary.outcome == density_outcome::complete);
    const auto& points = solver.geometry().points();
    for (const auto& rho : r.values) {
        // The peaks sit on the centres c_j = cos(2 pi j/3) e_2 + sin(2 pi j/3) e_1.
        std::vector<std::size_t> tops;
        for (std::size_t j = 0; j < n; ++j)
            if (rho[j] > rho[(j + 1) % n] && rho[j] > rho[(j + n - 1) % n] && rho[j] > 2.0)
                tops.push_back(j);
        REQUIRE(tops.size() == q);
        for (std::size_t m = 0; m < q; ++m) {
            const double a = 2.0 * std::numbers::pi * double(m) / double(q);
            double best = 0.0;
            for (const std::size_t j : tops)
                best =
                    std::max(best, points[2 * j] * std::sin(a) + points[2 * j + 1] * std::cos(a));
            CHECK(best > std::cos(1.01 * std::numbers::pi / double(n)));
        }
    }
    // The modes the symmetry forbids (3 does not divide k) stay at round-off, and the
    // bumps narrow: m_3 grows towards 1.
    for (const auto& f : r.frames) {
        CHECK(f.modes[0] < 1e-26);
        CHECK(f.modes[1] < 1e-26);
        CHECK(f.modes[3] < 1e-26);
    }
    CHECK(r.frames.back().modes[2] > r.frames.front().modes[2]);
}

TEST_CASE("the energy never decreases (identity weights make the field a gradient)") {
    for (const auto id : {scheme::post_ln, scheme::sqrt_scaling, scheme::ngpt}) {
        for (const auto& [d, kind] : {std::pair{std::size_t{2}, geometry_kind::circle},
                                      std::pair{std::size_t{3}, geometry_kind::sphere},
                                      std::pair{std::size_t{8}, geometry_kind::zonal}}) {
            meanfield_config c = base(d, kind, 5.0, "noise:0.02,5");
            c.scheme.id = id;
            c.T = 15.0;
            c.every = 10;
            c.rtol = 1e-10;
            c.atol = 1e-12;
            density_solver solver(c);
            const recorded r = run_in_memory(solver);
            REQUIRE(r.frames.size() > 3);
            for (std::size_t f = 1; f < r.frames.size(); ++f)
                CHECK(r.frames[f].energy >= r.frames[f - 1].energy - 1e-12);
            CHECK(r.frames.back().energy > r.frames.front().energy);
        }
    }
}

TEST_CASE("spectral convergence under grid refinement") {
    // A von Mises start on the circle, integrated to T = 2 on N = 32 ... 96 nodes, against
    // N = 960; the coarse nodes are among the fine ones (node j of N is node j 960/N). The
    // error falls geometrically in N (exponential convergence, no algebraic order): each
    // refinement by 16 nodes divides it by at least 10 until round-off.
    const auto solve = [](std::size_t n) {
        meanfield_config c = base(2, geometry_kind::circle, 4.0, "vonmises:1,3");
        c.points = n;
        c.T = 2.0;
        c.every = 200;
        c.resolution_tol = 0.5; // the coarse grids are under-resolved on purpose
        density_solver solver(c);
        return run_in_memory(solver).values.back();
    };
    const std::vector<double> reference = solve(960);
    std::vector<double> errors;
    for (const std::size_t n : {32u, 48u, 64u, 80u, 96u}) {
        const std::vector<double> rho = solve(n);
        double error = 0.0;
        for (std::size_t j = 0; j < n; ++j)
            error = std::max(error, std::abs(rho[j] - reference[j * (960 / n)]));
        errors.push_back(error);
        MESSAGE("N = " << n << ": max error " << error);
    }
    for (std::size_t i = 1; i < errors.size(); ++i)
        CHECK((errors[i] < errors[i - 1] / 10.0 || errors[i] < 1e-11));
    CHECK(errors.back() < 1e-6);
}

TEST_CASE("a resumed run continues bit for bit") {
    const std::string whole = scratch("whole.h5"), parted = scratch("parted.h5");
    meanfield_config c = base(2, geometry_kind::circle, 5.0, "noise:0.02,8");
    c.T = 4.0;
    c.every = 25;
    c.rtol = 1e-9;
    c.atol = 1e-11;
    {
        density_solver solver(c);
        CHECK(run_to_file(solver, whole, false, nullptr).outcome == density_outcome::complete);
    }
    REQUIRE(run_stopped_after(c, parted, 4) == density_outcome::interrupted);
    CHECK(read_density_file(parted).frames < read_density_file(whole).frames);
    CHECK(resume_file(parted, nullptr).outcome == density_outcome::complete);
    const density_file a = read_density_file(whole), b = read_density_file(parted);
    REQUIRE(a.frames == b.frames);
    CHECK(a.time == b.time);
    CHECK(a.value == b.value); // bitwise
    CHECK(a.step_size == b.step_size);
    CHECK(b.status == "complete");
    CHECK_THROWS_AS(resume_file(parted, nullptr), input_error);
}

TEST_CASE("bad input is refused before anything is built") {
    meanfield_config c = base(3, geometry_kind::sphere, 5.0, "uniform");
    c.scheme.id = scheme::pre_ln;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("magnitude"), input_error);
    c = base(2, geometry_kind::circle, 5.0, "uniform");
    c.scheme.id = scheme::no_norm;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("r_k theta_k"), input_error);
    c.scheme.id = scheme::mix_ln;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("t-switch"), input_error);
    c.t_switch = c.T;
    CHECK_NOTHROW(c.validate());
    c = base(2, geometry_kind::circle, 400.0, "uniform");
    c.points = 64;
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("too small for beta"), input_error);
    c = base(5, geometry_kind::sphere, 1.0, "uniform");
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--d 3"), input_error);
    c = base(3, geometry_kind::zonal, 1.0, "uniform");
    c.weights = weights_spec::parse("gaussian");
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("identity weights only"), input_error);
    CHECK_THROWS_AS(density_init::parse("perturbed:3"), input_error);
    CHECK_THROWS_AS(density_init::parse("vonmises:2,-1"), input_error);
    CHECK_THROWS_AS(density_init::parse("gauss"), input_error);
    c = base(2, geometry_kind::circle, 1.0, "noise:0.5,100");
    c.points = 512;
    CHECK_THROWS_WITH_AS(density_solver{c}, doctest::Contains("negative density"), input_error);
}

TEST_CASE("the kinetic form of pre-ln and peri-ln: the uniform state's magnitude and clock") {
    // At the uniform density every token sees <x, A> = a = I_1/I_0 and ‖A‖ = a: pre-ln's
    // magnitude grows as r0 + a t, peri-ln's as r0 + t (docs/model.md §13.3), and a small
    // perturbation of degree 3 grows like exp(lambda_3 tau(t)) on the scheme's clock.
    const double beta = 5.0, r0 = 1.5;
    for (const auto id : {scheme::pre_ln, scheme::peri_ln}) {
        meanfield_config c = base(2, geometry_kind::circle, beta, "perturbed:3,1e-4");
        c.scheme.id = id;
        c.r0 = r0;
        c.T = 6.0;
        c.every = 100;
        density_solver solver(c);
        const recorded r = run_in_memory(solver);
        REQUIRE(r.frames.size() == 7);
        scheme_parameters p;
        p.id = id;
        const double a = uniform_alignment(beta, 2, attention_kind::softmax);
        for (const auto& f : r.frames) {
            const double expected = id == scheme::pre_ln ? r0 + a * f.time : r0 + f.time;
            // The perturbation moves r at O(eps) only in the degree-3 part, which averages
            // out of r_mean to O(eps^2).
            CHECK(std::abs(f.r_mean - expected) < 1e-7 * expected);
            CHECK(std::abs(f.mass - 1.0) < 1e-12);
        }
        const double tau = uniform_clock(p, c.T, beta, 2, attention_kind::softmax, r0);
        const double measured =
            std::log(r.frames.back().modes[2] / r.frames.front().modes[2]) / (2.0 * tau);
        CHECK(std::abs(measured / growth_rate(3, beta, 2, attention_kind::softmax) - 1.0) < 1e-4);
    }
}

TEST_CASE("the kinetic form resumes bit for bit, its magnitudes included") {
    const std::string whole = scratch("kinetic_whole.h5"), parted = scratch("kinetic_parted.h5");
    meanfield_config c = base(2, geometry_kind::circle, 5.0, "noise:0.02,8");
    c.scheme.id = scheme::peri_ln;
    c.T = 6.0;
    c.every = 50;
    {
        density_solver solver(c);
        REQUIRE(run_to_file(solver, whole, false, nullptr).outcome == density_outcome::complete);
    }
    run_stopped_after(c, parted, 5);
    CHECK(resume_file(parted, nullptr).outcome == density_outcome::complete);
    const density_file a = read_density_file(whole), b = read_density_file(parted);
    CHECK(a.value == b.value);
    CHECK(!a.log_magnitude.empty());
    CHECK(a.log_magnitude == b.log_magnitude);
}

TEST_CASE("the zonal geometry integrates coefficients: d = 512 runs, and resumes bit for bit") {
    // At d = 512 the outer Gauss nodes' p_k reach 1e22: nodal values there are amplified
    // round-off, which the coefficient state keeps out of the integrator and of the checks.
    const std::string whole = scratch("zonal_whole.h5"), parted = scratch("zonal_parted.h5");
    meanfield_config c = base(512, geometry_kind::zonal, 5.0, "perturbed:1,0.01");
    c.degree = 64;
    c.T = 4.0;
    c.every = 50;
    c.rtol = 1e-9;
    c.atol = 1e-11;
    {
        density_solver solver(c);
        density_summary s;
        const recorded r = run_in_memory(solver, &s);
        CHECK(s.outcome == density_outcome::complete);
        CHECK(s.steps < 200); // no collapse of the step onto round-off
        for (const auto& f : r.frames) {
            CHECK(std::abs(f.mass - 1.0) < 1e-12);
            CHECK(f.peaks == 0);
        }
        // lambda_1 at d = 512 from the first mode's growth: m_1 grows like exp(2 lambda_1 t).
        const double measured =
            std::log(r.frames.back().modes[0] / r.frames.front().modes[0]) / (2.0 * c.T);
        CHECK(std::abs(measured / growth_rate(1, 5.0, 512, attention_kind::softmax) - 1.0) < 1e-2);
    }
    {
        density_solver solver(c);
        CHECK(run_to_file(solver, whole, false, nullptr).outcome == density_outcome::complete);
    }
    run_stopped_after(c, parted, 2);
    CHECK(resume_file(parted, nullptr).outcome == density_outcome::complete);
    CHECK(read_density_file(whole).value == read_density_file(parted).value);
}

TEST_CASE("the circle's noise start: the particles are drawn from the solver's very density") {
    // The same seed gives the same coefficients to both pictures: the solver's frame-0
    // density is circle_noise_density at its nodes, and the particles' empirical Fourier
    // coefficients match eps a_k / sqrt 2 within 5 standard errors (n = 200000).
    const double eps = 0.05;
    const std::size_t kmax = 6;
    meanfield_config c = base(2, geometry_kind::circle, 3.0, "noise:0.05,6");
    c.seed = 7;
    density_solver solver(c);
    random_source replay(stream_seed(7, initial_stream));
    const std::vector<double> coefficients = draw_circle_noise(replay, kmax);
    const auto& points = solver.geometry().points();
    for (std::size_t j = 0; j < solver.geometry().size(); ++j) {
        const double theta = std::atan2(points[2 * j + 1], points[2 * j]);
        CHECK(std::abs(solver.initial_density()[j] -
                       circle_noise_density(coefficients, eps, theta)) < 1e-13);
    }
    const std::size_t n = 200000;
    const initial_state particles = make_initial(initial_spec::parse("noise:0.05,6"), n, 2, 7, 1.0);
    for (std::size_t k = 1; k <= kmax; ++k) {
        double cosine = 0.0, sine = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double theta = std::atan2(particles.theta[2 * i + 1], particles.theta[2 * i]);
            cosine += std::cos(double(k) * theta) / double(n);
            sine += std::sin(double(k) * theta) / double(n);
        }
        // Var cos(k theta) is about 1/2 under a near-uniform density.
        const double error = 5.0 * std::sqrt(0.5 / double(n));
        CHECK(std::abs(cosine - eps * coefficients[2 * k - 2] / std::sqrt(2.0)) < error);
        CHECK(std::abs(sine - eps * coefficients[2 * k - 1] / std::sqrt(2.0)) < error);
    }
    CHECK_THROWS_WITH_AS(make_initial(initial_spec::parse("noise:0.05"), 8, 3, 1, 1.0),
                         doctest::Contains("circle"), input_error);
    CHECK_THROWS_AS(make_initial(initial_spec::parse("noise:0.9,60"), 8, 2, 1, 1.0), input_error);
}
