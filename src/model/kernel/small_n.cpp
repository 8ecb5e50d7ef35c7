#include "small_n.hpp"

#include "call.hpp"

#include "../attention_entropy.hpp"
#include "../reductions.hpp"
#include "dimension.hpp"
#include "exp.hpp"
#include "nadyn/model/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace nadyn::detail {

namespace {

// Eight doubles (the reductions' lanes, src/model/reductions.hpp): one AVX-512 register (two AVX2
// ones). GCC's vector extension keeps the accumulators in registers, which plain arrays of
// partial sums did not (the compiler stored them to the stack on every component, a
// store-to-load chain per FMA).
constexpr std::size_t lanes = lane_count;
using lane_vector = reduction_lanes;

// Keys per pass of the logits loop: eight vectors of sums per query row, eight independent
// FMA chains, enough to cover the FMA latency (four chains left it latency-bound).
constexpr std::size_t chunk_vectors = 8;
constexpr std::size_t key_chunk = chunk_vectors * lanes;
constexpr std::size_t padded_limit = (small_n_limit + key_chunk - 1) / key_chunk * key_chunk;
constexpr std::size_t largest_d = 64;

// A loaded vector kept in a register for its several uses: without this GCC folds the load
// into each FMA that reads it (one load per use), and the pair loop below then issues more
// loads than FMAs. An empty asm statement changes nothing of the arithmetic.
inline void keep_in_register([[maybe_unused]] lane_vector& v) {
#if defined(__AVX512F__)
    asm("" : "+v"(v));
#endif
}

// row[j] = beta <q, key_j> for j < columns (a multiple of key_chunk), the keys transposed
// (d x stride).
void logits_row(const double* q, const double* keys_t, std::size_t stride, std::size_t d,
                double beta, std::size_t columns, double* row) {
    for (std::size_t j0 = 0; j0 < columns; j0 += key_chunk) {
        lane_vector s[chunk_vectors] = {};
        const double* column = keys_t + j0;
        for (std::size_t c = 0; c < d; ++c, column += stride) {
            const double qc = q[c];
            for (std::size_t u = 0; u < chunk_vectors; ++u)
                s[u] += qc * load_lanes(column + u * lanes);
        }
        for (std::size_t u = 0; u < chunk_vectors; ++u)
            store(row + j0 + u * lanes, beta * s[u]);
    }
}

// out += scale * sum_j w_j v_j over `count` keys, for d = V * lanes: the keys in four
// interleaved streams (4 V independent FMA chains), added in a fixed order at the end.
template <std::size_t V>
void add_weighted_values(const double* w, const double* values, std::size_t count, double scale,
                         double* out) {
    constexpr std::size_t streams = 4;
    lane_vector sum[streams][V] = {};
    std::size_t j = 0;
    for (; j + streams <= count; j += streams)
        for (std::size_t s = 0; s < streams; ++s) {
            const double* v = values + (j + s) * V * lanes;
            for (std::size_t u = 0; u < V; ++u)
                sum[s][u] += w[j + s] * load_lanes(v + u * lanes);
        }
    for (std::size_t s = 0; j < count; ++j, ++s) {
        const double* v = values + j * V * lanes;
        for (std::size_t u = 0; u < V; ++u)
            sum[s][u] += w[j] * load_lanes(v + u * lanes);
    }
    for (std::size_t u = 0; u < V; ++u)
        store(out + u * lanes, load_lanes(out + u * lanes) +
                                   scale * ((sum[0][u] + sum[1][u]) + (sum[2][u] + sum[3][u])));
}

// One row's sums in one stream of add_weighted_values_pair(), d = V * lanes: named members,
// not an array, so that GCC keeps them in registers (it kept arrays of vectors on the stack
// around the loop: a store and a load of every sum per call, and a memset to zero them).
template <std::size_t V> struct stream_sums;
template <> struct stream_sums<1> { lane_vector u0{}; };
template <> struct stream_sums<2> { lane_vector u0{}, u1{}; };

// Key j's value row added to two rows' sums of one stream, with weights a and b.
template <std::size_t V>
[[gnu::always_inline]] inline void add_key(stream_sums<V>& sum0, stream_sums<V>& sum1,
                                           const double* value, double a, double b) {
    lane_vector x0 = load_lanes(value);
    keep_in_register(x0);
    sum0.u0 += a * x0;
    sum1.u0 += b * x0;
    if constexpr (V == 2) {
        lane_vector x1 = load_lanes(value + lanes);
        keep_in_register(x1);
        sum0.u1 += a * x1;
        sum1.u1 += b * x1;
    }
}

// out += scale ((s0 + s1) + (s2 + s3)), add_weighted_values()'s final order.
template <std::size_t V>
void add_stream_sums(double* out, double scale, const stream_sums<V>& s0, const stream_sums<V>& s1,
                     const stream_sums<V>& s2, const stream_sums<V>& s3) {
    store(out, load_lanes(out) + scale * ((s0.u0 + s1.u0) + (s2.u0 + s3.u0)));
    if constexpr (V == 2)
        store(out + lanes, load_lanes(out + lanes) + scale * ((s0.u1 + s1.u1) + (s2.u1 + s3.u1)));
}

// The same for two query rows at once (their FMA chains interleave; each value is loaded
// once for both), each row's sums bitwise those of add_weighted_values<V>: the same four
// streams (key j in stream j mod 4), the same tail and the same final order.
template <std::size_t V>
void add_weighted_values_pair(const double* w0, const double* w1, const double* values,
                              std::size_t count, double scale0, double scale1, double* out0,
                              double* out1) {
    constexpr std::size_t d = V * lanes;
    stream_sums<V> a0, a1, a2, a3, b0, b1, b2, b3;
    std::size_t j = 0;
    for (; j + 4 <= count; j += 4) {
        add_key(a0, b0, values + j * d, w0[j], w1[j]);
        add_key(a1, b1, values + (j + 1) * d, w0[j + 1], w1[j + 1]);
        add_key(a2, b2, values + (j + 2) * d, w0[j + 2], w1[j + 2]);
        add_key(a3, b3, values + (j + 3) * d, w0[j + 3], w1[j + 3]);
    }
    // At most three keys left, to streams 0, 1, 2 as add_weighted_values() adds them.
    if (j < count) add_key(a0, b0, values + j * d, w0[j], w1[j]);
    if (j + 1 < count) add_key(a1, b1, values + (j + 1) * d, w0[j + 1], w1[j + 1]);
    if (j + 2 < count) add_key(a2, b2, values + (j + 2) * d, w0[j + 2], w1[j + 2]);
    add_stream_sums(out0, scale0, a0, a1, a2, a3);
    add_stream_sums(out1, scale1, b0, b1, b2, b3);
}

using weighted_values_pair_loop = void (*)(const double*, const double*, const double*, std::size_t,
                                           double, double, double*, double*);

// Pairs for d = 8 and 16 only: wider rows would need more registers than there are.
weighted_values_pair_loop weighted_values_pair_for(std::size_t d) {
    return kernel::dispatch_dimension<kernel::lane_dimensions>(
        d, [](auto D) -> weighted_values_pair_loop {
            if constexpr (D != 0 && D <= 2 * lanes)
                return add_weighted_values_pair<D / lanes>;
            else
                return nullptr;
        });
}

// Two query rows' logits at once, each bitwise logits_row()'s (every logit is the same
// chain of FMAs over the components; only the keys' columns are loaded once for both rows),
// and each row's largest logit over its first n columns (n a multiple of lanes), taken as
// max_of() takes it: the softmax then needs no pass of its own for the max.
void logits_pair(const double* q0, const double* q1, const double* keys_t, std::size_t stride,
                 std::size_t d, double beta, std::size_t n, double* row0, double* row1,
                 double& largest0, double& largest1) {
    constexpr double lowest = -std::numeric_limits<double>::infinity();
    lane_vector m0 = {lowest, lowest, lowest, lowest, lowest, lowest, lowest, lowest};
    lane_vector m1 = m0;
    for (std::size_t j0 = 0; j0 < stride; j0 += key_chunk) {
        lane_vector s0[chunk_vectors] = {}, s1[chunk_vectors] = {};
        const double* column = keys_t + j0;
        for (std::size_t c = 0; c < d; ++c, column += stride) {
            const double a = q0[c], b = q1[c];
            for (std::size_t u = 0; u < chunk_vectors; ++u) {
                lane_vector key = load_lanes(column + u * lanes);
                keep_in_register(key); // one load for both rows
                s0[u] += a * key;
                s1[u] += b * key;
            }
        }
        for (std::size_t u = 0; u < chunk_vectors; ++u) {
            const lane_vector x0 = beta * s0[u], x1 = beta * s1[u];
            store(row0 + j0 + u * lanes, x0);
            store(row1 + j0 + u * lanes, x1);
            if (j0 + u * lanes < n) {
                m0 = x0 > m0 ? x0 : m0;
                m1 = x1 > m1 ? x1 : m1;
            }
        }
    }
    largest0 = combine_maxima(m0);
    largest1 = combine_maxima(m1);
}

// exp(row[j] - largest) in place for j < count (a multiple of lanes) and 1 / their sum, each
// bitwise the separate passes' (the subtraction, detail::exp_in_place() and sum_then_tail()): the
// same exponential for the same elements (whole groups of four vectors, the rest by
// exp_lanes()) and the same order of the sum, in one pass over the row. Not inlined, so that
// a profile shows the exponentials' share (bench/ensemble.py reports it); a call per row.
[[gnu::noinline]] double exp_shifted_row(double* row, std::size_t count, double largest) {
#if defined(__AVX512F__)
    lane_vector total = {};
    std::size_t j = 0;
    for (; j + 4 * lanes <= count; j += 4 * lanes) {
        kernel::group_vector x[4];
        for (std::size_t v = 0; v < 4; ++v)
            x[v] = load_lanes(row + j + v * lanes) - largest;
        kernel::exp_groups(x);
        for (std::size_t v = 0; v < 4; ++v) {
            store(row + j + v * lanes, x[v]);
            total += x[v];
        }
    }
    for (std::size_t i = j; i < count; ++i)
        row[i] -= largest;
    kernel::exp_lanes(row + j, count - j);
    for (; j < count; j += lanes)
        total += load_lanes(row + j);
    return 1.0 / combine_sums(total);
#else
    for (std::size_t j = 0; j < count; ++j)
        row[j] -= largest;
    exp_in_place(row, count);
    return 1.0 / sum_then_tail(row, count);
#endif
}

// exp_shifted_row() at a frame: the same exponentials and 1 / their sum, bitwise, and from
// the same pass the sums of the row's entropy, rest = sum_{j != top} e_j and weighted =
// sum_j e_j s_j, bitwise those of attention_observables (detail::row_entropy(): the same
// shift s, the same exponentials e, the same partial sums added in the same order), for
// detail::entropies_of_sums(). top: the first index of the largest logit, whose term is the
// 1 kept out of rest (of weighted, it adds 1 x 0 here and 0 x 0 there: the same +0); the
// zeros with which row_entropy() pads its pieces add +0: nothing. Each vector goes into the
// sums as it comes out of the exponential: a copy of the logits, a pass over them and one
// over the exponentials, as before, took about 3 of the 34 us that observing added to an
// evaluation at n = 64, d = 16, 8 heads (`nadyn-bench observed`). Not inlined, so that a
// profile shows the frames' share (bench/ensemble.py).
[[gnu::noinline]] double exp_shifted_row_entropy(double* row, std::size_t count, double largest,
                                                 std::size_t top, double& rest_sum,
                                                 double& weighted_sum) {
    lane_vector total = {}, rest = {}, weighted = {};
    // The vector of e and of the shifted logits at row[first .. first + lanes).
    auto add = [&](lane_vector e, const lane_vector& shifted, std::size_t first) {
        total += e;
        if (top - first < lanes) e[top - first] = 0.0; // unsigned: top in this vector
        add_entropy_lanes(e, shifted, rest, weighted);
    };
    std::size_t j = 0;
    for (; j + 4 * lanes <= count; j += 4 * lanes) {
        kernel::group_vector x[4], shifted[4];
        for (std::size_t v = 0; v < 4; ++v)
            x[v] = shifted[v] = load_lanes(row + j + v * lanes) - largest;
        kernel::exp_groups(x);
        for (std::size_t v = 0; v < 4; ++v) {
            store(row + j + v * lanes, x[v]);
            add(x[v], shifted[v], j + v * lanes);
        }
    }
    // Fewer than four vectors left: exp_lanes(), as exp_shifted_row() takes them.
    alignas(64) double shifted[4 * lanes];
    const std::size_t left = count - j;
    for (std::size_t i = 0; i < left; ++i)
        shifted[i] = row[j + i] -= largest;
    kernel::exp_lanes(row + j, left);
    for (std::size_t i = 0; i < left; i += lanes)
        add(load_lanes(row + j + i), load_lanes(shifted + i), j + i);
    rest_sum = combine_sums(rest);
    weighted_sum = combine_sums(weighted);
    return 1.0 / combine_sums(total);
}

// The same for any d (up to largest_d).
void add_weighted_values_any(const double* w, const double* values, std::size_t count,
                             std::size_t d, double scale, double* out) {
    double sum[largest_d] = {};
    for (std::size_t j = 0; j < count; ++j)
        for (std::size_t c = 0; c < d; ++c)
            sum[c] += w[j] * values[j * d + c];
    for (std::size_t c = 0; c < d; ++c)
        out[c] += scale * sum[c];
}

using weighted_values_loop = void (*)(const double*, const double*, std::size_t, double, double*);

weighted_values_loop weighted_values_for(std::size_t d) {
    return kernel::dispatch_dimension<kernel::lane_dimensions>(
        d, [](auto D) -> weighted_values_loop {
            if constexpr (D != 0)
                return add_weighted_values<D / lanes>;
            else
                return nullptr;
        });
}

// The keys transposed into keys_t (d x stride, zeros beyond n); returns the stride (n
// padded to whole chunks). The callers keep keys_t on their stack, per call, so that runs on
// different threads share nothing.
std::size_t transpose_keys(const double* keys, std::size_t n, std::size_t d, double* keys_t) {
    const std::size_t stride = (n + key_chunk - 1) / key_chunk * key_chunk;
    for (std::size_t c = 0; c < d; ++c) {
        double* column = keys_t + c * stride;
        for (std::size_t j = 0; j < n; ++j)
            column[j] = keys[j * d + c];
        std::fill(column + n, column + stride, 0.0);
    }
    return stride;
}

} // namespace

namespace {

// One head's weights of a few rows, before the value product: the softmax's exponentials
// exp(logit - max) written over the logits, 1 / their sum returned, and at a frame each row's
// entropy taken from the same logits (the observables' own arithmetic,
// src/model/attention_entropy.hpp). Shared by the per-head rows and the rows whose heads are
// summed before one value product, so that both give each head's weights the same bits.
class softmax_rows {
  public:
    softmax_rows(const double* keys_t, std::size_t stride, std::size_t n, std::size_t d,
                 double beta, bool observing)
        : m_keys_t(keys_t), m_stride(stride), m_n(n), m_d(d), m_beta(beta),
          // Only a frame's call needs log n: the other calls of a run skip the libm call.
          m_log_n(observing ? std::log(static_cast<double>(n)) : 0.0) {}

    // Two query rows q0, q1 over all n keys into row0, row1 (stride doubles each, the second
    // right after the first); entropy0, entropy1: where their entropies go, or null.
    void pair(const double* q0, const double* q1, double* row0, double* row1, double& inverse0,
              double& inverse1, double* entropy0, double* entropy1) {
        if (m_n % lanes == 0) { // the max with the logits, the exp with the sum
            double largest0, largest1;
            logits_pair(q0, q1, m_keys_t, m_stride, m_d, m_beta, m_n, row0, row1, largest0,
                        largest1);
            if (entropy0 && m_n >= 2) {
                // The top keys (first_argmax()'s) from the logits, before the exponentials
                // replace them.
                const std::size_t top0 = first_index_of(row0, m_n, largest0);
                const std::size_t top1 = first_index_of(row1, m_n, largest1);
                double rest[2], weighted[2], entropy[2];
                inverse0 = exp_shifted_row_entropy(row0, m_n, largest0, top0, rest[0], weighted[0]);
                inverse1 = exp_shifted_row_entropy(row1, m_n, largest1, top1, rest[1], weighted[1]);
                entropies_of_sums(rest, weighted, m_log_n, entropy);
                *entropy0 = entropy[0];
                *entropy1 = entropy[1];
            } else {
                observe(row0, m_n, entropy0);
                observe(row1, m_n, entropy1);
                inverse0 = exp_shifted_row(row0, m_n, largest0);
                inverse1 = exp_shifted_row(row1, m_n, largest1);
            }
        } else {
            logits_row(q0, m_keys_t, m_stride, m_d, m_beta, m_stride, row0);
            logits_row(q1, m_keys_t, m_stride, m_d, m_beta, m_stride, row1);
            observe(row0, m_n, entropy0);
            observe(row1, m_n, entropy1);
            inverse0 = softmax(row0, m_n);
            inverse1 = softmax(row1, m_n);
        }
    }

    // One query row q over its first `visible` keys into row.
    double one(const double* q, std::size_t visible, double* row, double* entropy) {
        const std::size_t columns = (visible + key_chunk - 1) / key_chunk * key_chunk;
        logits_row(q, m_keys_t, m_stride, m_d, m_beta, columns, row);
        observe(row, visible, entropy);
        return softmax(row, visible);
    }

  private:
    // The softmax of `row` in place (max subtraction, log-sum-exp: beta up to 1e4 stays
    // finite); returns 1 / sum.
    static double softmax(double* row, std::size_t visible) {
        const double largest = max_of(row, visible);
        for (std::size_t j = 0; j < visible; ++j)
            row[j] -= largest;
        exp_in_place(row, visible);
        return 1.0 / sum_then_tail(row, visible);
    }
    void observe(const double* row, std::size_t visible, double* entropy) {
        if (!entropy) return;
        if (m_n < 2) {
            *entropy = 0.0;
            return;
        }
        std::copy(row, row + visible, m_copy);
        *entropy = row_entropy(m_copy, visible, first_argmax(m_copy, visible), m_log_n);
    }

    const double* m_keys_t;
    std::size_t m_stride, m_n, m_d;
    double m_beta, m_log_n;
    // A single row's entropy (observe()) from its logits before the softmax overwrites them,
    // on a copy.
    alignas(64) double m_copy[padded_limit];
};

// The rows [first_row, end_row) against keys_t (d x stride, from transpose_keys()).
void add_rows(const double* queries, const double* keys_t, std::size_t stride, const double* values,
              std::size_t n, std::size_t d, double beta, bool causal, std::size_t first_row,
              std::size_t end_row, double* out, double* entropy) {
    softmax_rows weights(keys_t, stride, n, d, beta, entropy != nullptr);
    auto entropy_of = [entropy](std::size_t token) { return entropy ? entropy + token : nullptr; };
    const weighted_values_loop weighted_values = weighted_values_for(d);
    const weighted_values_pair_loop weighted_values_pair = weighted_values_pair_for(d);
    // Two rows' logits: the second row right after the first's padded columns.
    alignas(64) double rows[2 * padded_limit];
    end_row = std::min(end_row, n);
    std::size_t k = first_row;
    // Without the mask, rows two at a time: each row's arithmetic is that of a row alone
    // (the same loops, exp element by element), so the pairing never changes a bit.
    if (!causal && weighted_values_pair) {
        for (; k + 2 <= end_row; k += 2) {
            double* row0 = rows;
            double* row1 = rows + stride;
            double inverse0, inverse1;
            weights.pair(queries + k * d, queries + (k + 1) * d, row0, row1, inverse0, inverse1,
                         entropy_of(k), entropy_of(k + 1));
            weighted_values_pair(row0, row1, values, n, inverse0, inverse1, out + k * d,
                                 out + (k + 1) * d);
        }
    }
    for (; k < end_row; ++k) {
        const std::size_t visible = causal ? k + 1 : n;
        const double inverse_total = weights.one(queries + k * d, visible, rows, entropy_of(k));
        if (weighted_values)
            weighted_values(rows, values, visible, inverse_total, out + k * d);
        else
            add_weighted_values_any(rows, values, visible, d, inverse_total, out + k * d);
    }
}

// sum += inverse * e over count entries: one head's normalised weights added to the heads'.
inline void add_scaled(double* sum, const double* e, double inverse, std::size_t count) {
    for (std::size_t j = 0; j < count; ++j)
        sum[j] += inverse * e[j];
}

// The rows [first_row, end_row) of heads that share their keys (keys_t) and values: each
// head's normalised weights summed per row, in head order, then one value product.
void add_rows_shared_values(const double* const* queries, std::size_t heads, const double* keys_t,
                            std::size_t stride, const double* values, double value_scale,
                            std::size_t n, std::size_t d, double beta, bool causal,
                            std::size_t first_row, std::size_t end_row, double* out,
                            double* entropy) {
    softmax_rows weights(keys_t, stride, n, d, beta, entropy != nullptr);
    auto entropy_of = [entropy, n](std::size_t h, std::size_t token) {
        return entropy ? entropy + h * n + token : nullptr;
    };
    const weighted_values_loop weighted_values = weighted_values_for(d);
    const weighted_values_pair_loop weighted_values_pair = weighted_values_pair_for(d);
    alignas(64) double rows[2 * padded_limit];
    alignas(64) double sums[2 * padded_limit];
    end_row = std::min(end_row, n);
    std::size_t k = first_row;
    if (!causal && weighted_values_pair) {
        for (; k + 2 <= end_row; k += 2) {
            std::fill(sums, sums + 2 * stride, 0.0);
            for (std::size_t h = 0; h < heads; ++h) {
                double inverse0, inverse1;
                weights.pair(queries[h] + k * d, queries[h] + (k + 1) * d, rows, rows + stride,
                             inverse0, inverse1, entropy_of(h, k), entropy_of(h, k + 1));
                add_scaled(sums, rows, inverse0, n);
                add_scaled(sums + stride, rows + stride, inverse1, n);
            }
            weighted_values_pair(sums, sums + stride, values, n, value_scale, value_scale,
                                 out + k * d, out + (k + 1) * d);
        }
    }
    for (; k < end_row; ++k) {
        const std::size_t visible = causal ? k + 1 : n;
        std::fill(sums, sums + visible, 0.0);
        for (std::size_t h = 0; h < heads; ++h) {
            const double inverse = weights.one(queries[h] + k * d, visible, rows, entropy_of(h, k));
            add_scaled(sums, rows, inverse, visible);
        }
        if (weighted_values)
            weighted_values(sums, values, visible, value_scale, out + k * d);
        else
            add_weighted_values_any(sums, values, visible, d, value_scale, out + k * d);
    }
}

} // namespace

void add_small_n_attention(const double* queries, const double* keys, const double* values,
                           std::size_t n, std::size_t d, double beta, bool causal,
                           std::size_t first_row, std::size_t end_row, double* out,
                           double* entropy) {
    alignas(64) double keys_t[largest_d * padded_limit];
    const std::size_t stride = transpose_keys(keys, n, d, keys_t);
    add_rows(queries, keys_t, stride, values, n, d, beta, causal, first_row, end_row, out, entropy);
}

void transpose_small_n_keys(const double* keys, std::size_t n, std::size_t d, small_n_keys& out) {
    out.columns.resize(largest_d * padded_limit);
    out.n = n;
    out.d = d;
    out.stride = transpose_keys(keys, n, d, out.columns.data());
}

void add_small_n_attention(const double* queries, const small_n_keys& keys, const double* values,
                           std::size_t n, std::size_t d, double beta, bool causal,
                           std::size_t first_row, std::size_t end_row, double* out,
                           double* entropy) {
    if (keys.n != n || keys.d != d)
        throw std::logic_error("add_small_n_attention: the transposed keys are of another shape");
    add_rows(queries, keys.columns.data(), keys.stride, values, n, d, beta, causal, first_row,
             end_row, out, entropy);
}

void add_small_n_shared_values(const double* const* queries, std::size_t heads,
                               const small_n_keys& keys, const double* values, double value_scale,
                               std::size_t n, std::size_t d, double beta, bool causal,
                               std::size_t first_row, std::size_t end_row, double* out,
                               double* entropy) {
    if (keys.n != n || keys.d != d)
        throw std::logic_error(
            "add_small_n_shared_values: the transposed keys are of another shape");
    add_rows_shared_values(queries, heads, keys.columns.data(), keys.stride, values, value_scale, n,
                           d, beta, causal, first_row, end_row, out, entropy);
}

} // namespace nadyn::detail

namespace nadyn::detail {

void small_n_logits(const double* queries, const double* keys, std::size_t n, std::size_t d,
                    double beta, std::size_t first_row, std::size_t rows, double* logits,
                    std::size_t leading) {
    alignas(64) double keys_t[largest_d * padded_limit];
    const std::size_t stride = transpose_keys(keys, n, d, keys_t);
    alignas(64) double row[padded_limit];
    for (std::size_t i = 0; i < rows; ++i) {
        logits_row(queries + (first_row + i) * d, keys_t, stride, d, beta, stride, row);
        std::copy(row, row + n, logits + i * leading);
    }
}

} // namespace nadyn::detail

namespace nadyn::detail {

namespace {

// Four tokens at a time, V vectors each: 4 V independent FMA chains over the d components.
template <std::size_t V>
void project_rows(const double* tokens, std::size_t n, const double* m_t, double* out) {
    constexpr std::size_t d = V * lanes, group = 4;
    std::size_t k = 0;
    for (; k + group <= n; k += group) {
        lane_vector sum[group][V] = {};
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t u = 0; u < V; ++u) {
                const lane_vector column = load_lanes(m_t + c * d + u * lanes);
                for (std::size_t g = 0; g < group; ++g)
                    sum[g][u] += tokens[(k + g) * d + c] * column;
            }
        for (std::size_t g = 0; g < group; ++g)
            for (std::size_t u = 0; u < V; ++u)
                store(out + (k + g) * d + u * lanes, sum[g][u]);
    }
    for (; k < n; ++k) {
        lane_vector sum[V] = {};
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t u = 0; u < V; ++u)
                sum[u] += tokens[k * d + c] * load_lanes(m_t + c * d + u * lanes);
        for (std::size_t u = 0; u < V; ++u)
            store(out + k * d + u * lanes, sum[u]);
    }
}

} // namespace

namespace {

using project_loop = void (*)(const double*, std::size_t, const double*, double*);

project_loop project_rows_for(std::size_t d) {
    return kernel::dispatch_dimension<kernel::lane_dimensions>(d, [](auto D) -> project_loop {
        if constexpr (D != 0)
            return project_rows<D / lanes>;
        else
            return nullptr;
    });
}

// m_t = M^T, row-major (row c holds M's column c: a token's projection is a sum of rows).
void transpose_map(const matrix& m, double* m_t) {
    const auto d = static_cast<std::size_t>(m.rows());
    for (std::size_t e = 0; e < d; ++e)
        for (std::size_t c = 0; c < d; ++c)
            m_t[c * d + e] = m(static_cast<Eigen::Index>(e), static_cast<Eigen::Index>(c));
}

} // namespace

bool takes_small_n_projection(std::size_t n, std::size_t d) {
    return takes_small_n(n, d) && project_rows_for(d) != nullptr;
}

void small_n_project_transposed(const double* tokens, std::size_t n, std::size_t d,
                                const double* m_t, matrix& out) {
    out.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
    project_rows_for(d)(tokens, n, m_t, out.data());
}

small_n_weights::entry& small_n_weights::slot(std::size_t head, std::size_t which) {
    const std::size_t index = 4 * head + which;
    if (m_entries.size() <= index) m_entries.resize(index + 1);
    return m_entries[index];
}

const double* small_n_weights::transposed(std::size_t head, std::size_t which, const matrix& m) {
    entry& e = slot(head, which);
    if (!e.valid || !same_projection(e.first, m)) {
        e.first = m;
        e.value.resize(static_cast<std::size_t>(m.size()));
        transpose_map(m, e.value.data());
        e.single.clear();
        e.valid = true;
    }
    return e.value.data();
}

const double* small_n_weights::folded(std::size_t head, const matrix& q, const matrix& k) {
    entry& e = slot(head, 3);
    if (!e.valid || !same_projection(e.first, q) || !same_projection(e.second, k)) {
        e.first = q;
        e.second = k;
        // (K^T Q)^T = Q^T K, with an empty map the identity.
        const matrix value = q.size() == 0   ? k
                             : k.size() == 0 ? matrix(q.transpose())
                                             : matrix(q.transpose() * k);
        e.value.assign(value.data(), value.data() + value.size());
        e.single.clear();
        e.valid = true;
    }
    return e.value.data();
}

const float* small_n_weights::single_of(entry& e) {
    if (e.single.size() != e.value.size()) e.single.assign(e.value.begin(), e.value.end());
    return e.single.data();
}

const float* small_n_weights::transposed_float(std::size_t head, std::size_t which,
                                               const matrix& m) {
    transposed(head, which, m);
    return single_of(slot(head, which));
}

const float* small_n_weights::folded_float(std::size_t head, const matrix& q, const matrix& k) {
    folded(head, q, k);
    return single_of(slot(head, 3));
}

} // namespace nadyn::detail
