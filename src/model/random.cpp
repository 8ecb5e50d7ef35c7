#include "nadyn/model/random.hpp"

#include <cmath>

namespace nadyn {

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::uint64_t weights_stream_id(std::int64_t layer, std::size_t head) {
    if (head == 0)
        return layer < 0 ? weights_stream
                         : layer_weights_stream + static_cast<std::uint64_t>(layer);
    return head_weights_stream + (static_cast<std::uint64_t>(head) << 42) +
           static_cast<std::uint64_t>(layer + 1);
}

std::uint64_t norm_noise_stream_id(std::int64_t layer, std::size_t head) {
    return norm_noise_stream + (static_cast<std::uint64_t>(head) << 42) +
           static_cast<std::uint64_t>(layer < 0 ? 0 : layer);
}

double random_source::uniform() {
    return static_cast<double>(m_engine() >> 11) * 0x1.0p-53;
}

double random_source::normal() {
    if (m_has_spare) {
        m_has_spare = false;
        return m_spare;
    }
    double u, v, s;
    do {
        u = 2.0 * uniform() - 1.0;
        v = 2.0 * uniform() - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double factor = std::sqrt(-2.0 * std::log(s) / s);
    m_spare = v * factor;
    m_has_spare = true;
    return u * factor;
}

double random_source::gamma(double shape) {
    if (shape < 1.0) {
        // The density of Gamma(a + 1) U^(1/a) is Gamma(a)'s (Marsaglia and Tsang, section 6).
        const double u = uniform();
        return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
        double x = 0.0, v = 0.0;
        do {
            x = normal();
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        const double u = uniform();
        // The squeeze accepts most draws without a log; the second test is the exact one.
        if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
        if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
}

void uniform_unit_vector(random_source& source, double* x, std::size_t d) {
    double norm2 = 0.0;
    do {
        norm2 = 0.0;
        for (std::size_t a = 0; a < d; ++a) {
            x[a] = source.normal();
            norm2 += x[a] * x[a];
        }
    } while (norm2 == 0.0);
    const double inverse = 1.0 / std::sqrt(norm2);
    for (std::size_t a = 0; a < d; ++a)
        x[a] *= inverse;
}

} // namespace nadyn
