#pragma once
// The density on the circle S^1 (d = 2) on N equispaced nodes theta_j = 2 pi j / N,
// x_j = (cos theta_j, sin theta_j) (docs/model.md §16.2). With Q = K = V = I the attention's
// integrals are convolutions with exp(beta cos), whose Fourier multipliers are
// 2 pi I_k(beta): two FFTs each (FFTW). Other weights (any 2 x 2 Q, K, V, several heads) are
// integrated by the trapezoidal rule on the nodes, O(N^2) per evaluation, which is
// spectrally accurate for the smooth periodic integrands of a resolved density.
#include "nadyn/meanfield/geometry.hpp"
#include "nadyn/model/weights.hpp"

#include <memory>

namespace nadyn::meanfield {

class circle_geometry final : public density_geometry {
  public:
    // points >= 8 and even; weights: empty heads or identity heads take the FFT path.
    circle_geometry(std::size_t points, const field_parameters& field,
                    const attention_weights& weights = {});
    ~circle_geometry() override;

    [[nodiscard]] std::string name() const override { return "circle"; }
    [[nodiscard]] std::size_t dimension() const override { return 2; }
    [[nodiscard]] std::size_t max_degree() const override { return size() / 2 - 1; }

    void rate(const double* rho, double t, double* drho) override;
    void modes(const double* rho, std::size_t count, double* out) override;
    double pair_integral(const double* rho) override;
    double tail(const double* rho) override;
    [[nodiscard]] std::size_t peaks(const double* rho, double floor) const override;
    void add_white_noise(std::uint64_t seed, double eps, std::size_t kmax,
                         double* rho) const override;

    // The complex Fourier coefficients c_k = integral exp(-i k theta) rho dsigma, k = 0..N/2.
    void coefficients(const double* rho, std::vector<double>& real, std::vector<double>& imag);

  private:
    struct fft;
    void attention_by_convolution(const double* rho, double t);
    void attention_by_quadrature(const double* rho, double t);

    field_parameters m_field;
    attention_weights m_attention;
    bool m_identity;
    std::vector<double> m_ratios, m_radial;                // w_k / w_0 and (dw_k/dbeta) / w_0
    std::vector<double> m_velocity;                        // X at the nodes (tangential component)
    std::vector<double> m_keys, m_values, m_attention_out; // the quadrature path's buffers
    std::unique_ptr<fft> m_fft;
};

} // namespace nadyn::meanfield
