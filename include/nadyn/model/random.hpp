#pragma once
// Seeded randomness that gives the same numbers on every platform: std::mt19937_64 is
// fully specified by the standard, but std::normal_distribution and
// std::uniform_real_distribution are not, so the transforms are our own.
#include <cstddef>
#include <cstdint>
#include <random>

namespace nadyn {

// An independent stream for each purpose (initial condition, weights of layer l, ...):
// the seed and a stream id mixed by SplitMix64.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream);

class random_source {
  public:
    explicit random_source(std::uint64_t seed) : m_engine(seed) {}
    // Uniform on [0, 1) with 53 random bits.
    double uniform();
    // Standard normal by the Marsaglia polar method (needs only log and sqrt).
    double normal();
    // Gamma(shape, 1), shape > 0, by Marsaglia and Tsang's squeeze (ACM TOMS 26 (2000)
    // 363-372): O(1) normals and uniforms per draw; shape < 1 as Gamma(shape + 1) U^(1/shape).
    double gamma(double shape);

  private:
    std::mt19937_64 m_engine;
    double m_spare = 0.0;
    bool m_has_spare = false;
};

// A uniform point of S^{d-1} into x: a standard Gaussian vector, normalised (redrawn in the
// null event that it is zero).
void uniform_unit_vector(random_source& source, double* x, std::size_t d);

// Stream ids.
inline constexpr std::uint64_t initial_stream = 1;
inline constexpr std::uint64_t weights_stream = 2;
inline constexpr std::uint64_t layer_weights_stream = 1000; // + layer index
// Heads h >= 1: + (h << 42) + (layer + 1), above every layer stream of head 0 (layers stay
// below 2^40, heads below 2^20).
inline constexpr std::uint64_t head_weights_stream = std::uint64_t{1} << 62;

// Norm noise (docs/model.md §11) of head h in layer l (l >= 0): norm_noise_stream + (h << 42) +
// l, below every head stream (2^62) and above every layer stream (1000 + l, l < 2^40).
inline constexpr std::uint64_t norm_noise_stream = std::uint64_t{1} << 61;

// The stream of head `head`'s weights for `layer` (< 0: the run's fixed weights). Head 0
// keeps the streams of the one-head model (weights_stream, layer_weights_stream + layer).
std::uint64_t weights_stream_id(std::int64_t layer, std::size_t head);
// The stream of head `head`'s norm-noise factors in layer `layer` (a layer-time interval of
// the ODE integrators).
std::uint64_t norm_noise_stream_id(std::int64_t layer, std::size_t head);

} // namespace nadyn
