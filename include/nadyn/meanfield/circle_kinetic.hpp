#pragma once
// The kinetic form on the circle of the schemes whose speed reads each token's magnitude
// (pre-ln, peri-ln; docs/model.md §16.7). Their mean-field state is a measure in (theta, r);
// started, as every density start is, with one magnitude r0 for all tokens, it stays on the
// graph r = R(t, theta) (monokinetic): the flow in (theta, r) carries the curve r = r0 to a
// curve, which stays a graph over theta until it folds. The state is then the density
// rho(theta) and S = log R at the N nodes:
//
//     d rho/dt = -d(rho v)/d theta,            v   = g <e_theta, A> e^{-S}
//     d S/dt   = -v dS/d theta + g <x, A> e^{-S}
//
// with g = 1 (pre-ln) or 1 / ‖A‖ (peri-ln), A from rho alone (attention reads directions).
// A fold steepens S without bound before it happens, which the resolution check of S's
// coefficients catches: the run then stops as unresolved instead of following a graph that no
// longer describes the tokens.
#include "nadyn/meanfield/geometry.hpp"

#include <memory>

namespace nadyn::meanfield {

class circle_kinetic_geometry final : public density_geometry {
  public:
    // points >= 8 and even; scheme pre-ln or peri-ln; r0 > 0 the starting magnitude.
    circle_kinetic_geometry(std::size_t points, const field_parameters& field, double r0);
    ~circle_kinetic_geometry() override;

    [[nodiscard]] std::string name() const override { return "circle"; }
    [[nodiscard]] std::size_t dimension() const override { return 2; }
    [[nodiscard]] std::size_t max_degree() const override { return size() / 2 - 1; }
    [[nodiscard]] std::size_t state_size() const override { return 2 * size(); }
    void extend_state(std::vector<double>& state) const override;

    void rate(const double* state, double t, double* rate) override;
    double state_tail(const double* state) override;
    [[nodiscard]] double mean_magnitude(const double* state) const override;
    void modes(const double* rho, std::size_t count, double* out) override;
    double pair_integral(const double* rho) override;
    double tail(const double* rho) override;
    [[nodiscard]] std::size_t peaks(const double* rho, double floor) const override;
    void add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                         double* rho) const override;

  private:
    struct parts;
    std::unique_ptr<density_geometry> m_density; // the plain circle: observables of rho
    std::unique_ptr<parts> m_parts;
    field_parameters m_field;
    double m_r0;
};

} // namespace nadyn::meanfield
