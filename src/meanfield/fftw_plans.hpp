#pragma once
// A real FFT of one size with its plans and aligned buffers (FFTW). Private to the density
// solver.
//
// Plans are made with FFTW_ESTIMATE: FFTW_MEASURE picks its algorithm by timing, so two runs
// (or a run and its resume) could round differently. FFTW's planner is not reentrant, and a
// sweep builds geometries on several threads, so planning takes one library-wide lock;
// executing a plan on its own buffers is thread-safe.
#include <fftw3.h>

#include <array>
#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

namespace nadyn::meanfield {

inline std::mutex& fftw_planner_lock() {
    static std::mutex lock;
    return lock;
}

struct real_fft {
    std::size_t n;
    double* real = nullptr;
    fftw_complex* spectrum = nullptr; // the coefficients after analyse()
    fftw_complex* scratch = nullptr;  // what a synthesis consumes (c2r destroys its input)
    fftw_plan forward = nullptr, backward = nullptr;
    std::array<std::vector<double>, 3> buffers;

    explicit real_fft(std::size_t size) : n(size) {
        real = fftw_alloc_real(n);
        spectrum = fftw_alloc_complex(n / 2 + 1);
        scratch = fftw_alloc_complex(n / 2 + 1);
        if (!real || !spectrum || !scratch) {
            release();
            throw std::bad_alloc();
        }
        {
            const std::lock_guard lock(fftw_planner_lock());
            forward = fftw_plan_dft_r2c_1d(static_cast<int>(n), real, spectrum, FFTW_ESTIMATE);
            backward = fftw_plan_dft_c2r_1d(static_cast<int>(n), scratch, real, FFTW_ESTIMATE);
        }
        for (auto& b : buffers) b.assign(n, 0.0);
    }
    ~real_fft() { release(); }
    real_fft(const real_fft&) = delete;
    real_fft& operator=(const real_fft&) = delete;

    std::vector<double>& work(std::size_t i) { return buffers[i]; }

    // spectrum[k] = c_k = (1/N) sum_j values_j exp(-2 pi i j k / N), k = 0..N/2.
    void analyse(const double* values) {
        std::copy(values, values + n, real);
        fftw_execute(forward);
        const double scale = 1.0 / static_cast<double>(n);
        for (std::size_t k = 0; k <= n / 2; ++k) {
            spectrum[k][0] *= scale;
            spectrum[k][1] *= scale;
        }
    }

    // out_j = sum_k m_k c_k exp(i k theta_j) (times i k when `derivative`), over k in Z with
    // m_{-k} = m_k, from the spectrum (kept). The Nyquist mode is dropped from derivatives:
    // i (N/2) cos(pi j) has no real value on the nodes.
    void filter(const double* multipliers, bool derivative, double* out) {
        const std::size_t half = n / 2;
        for (std::size_t k = 0; k <= half; ++k) {
            const double m = multipliers ? multipliers[k] : 1.0;
            double re = m * spectrum[k][0], im = m * spectrum[k][1];
            if (derivative) {
                const double kk = k == half ? 0.0 : static_cast<double>(k);
                const double t = re;
                re = -kk * im;
                im = kk * t;
            }
            scratch[k][0] = re;
            scratch[k][1] = im;
        }
        fftw_execute(backward);
        std::copy(real, real + n, out);
    }

    // out = scale * d/dtheta of the analysed function (its band-limited interpolant).
    void derivative(double scale, double* out) {
        for (std::size_t k = 0; k <= n / 2; ++k) {
            spectrum[k][0] *= scale;
            spectrum[k][1] *= scale;
        }
        filter(nullptr, true, out);
    }

  private:
    void release() {
        {
            const std::lock_guard lock(fftw_planner_lock());
            if (forward) fftw_destroy_plan(forward);
            if (backward) fftw_destroy_plan(backward);
        }
        fftw_free(real);
        fftw_free(spectrum);
        fftw_free(scratch);
    }
};

} // namespace nadyn::meanfield
