// The small-n loops in single precision (src/model/kernel/small_n_float.hpp).
#include "small_n_float.hpp"

#include "../reductions.hpp"
#include "dimension.hpp"
#include "exp.hpp"
#include "small_n.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace nadyn::kernel {

namespace {

// Sixteen floats: one AVX-512 register (two AVX2 ones), the float exp's group.
using vector = float_group_vector;
constexpr std::size_t lanes = 16;

// Keys per pass of the logits loop: four vectors of sums per row, 4 R independent FMA chains
// for R rows at once (add_small_n_float_attention()).
constexpr std::size_t chunk_vectors = 4;
constexpr std::size_t key_chunk = chunk_vectors * lanes;
constexpr std::size_t padded_limit =
    (detail::small_n_limit + key_chunk - 1) / key_chunk * key_chunk;
constexpr std::size_t largest_d = 64;

[[gnu::always_inline]] inline vector load_vector(const float* x) {
    vector v;
    detail::load(v, x);
    return v;
}

// x stored at `to`, from a copy: detail::store() of an array's element takes its address, and
// GCC then kept the whole array of sums on the stack (stored and reloaded on every group of
// rows: two fifths of the projection's time).
[[gnu::always_inline]] inline void store_vector(float* to, vector x) {
    detail::store(to, x);
}

// A loaded vector kept in a register for its several uses (GCC would otherwise fold the load
// into each FMA that reads it: one load per use). Changes nothing of the arithmetic.
[[gnu::always_inline]] inline void keep_in_register([[maybe_unused]] vector& v) {
#if defined(__AVX512F__)
    asm("" : "+v"(v));
#endif
}

// Zeros in a register: an array of sums written `= {}` was cleared by a `rep stos` through the
// stack and reloaded (a third of the projection's time, a tenth of the weighted values');
// zeros the compiler cannot see are copied from a register instead.
[[gnu::always_inline]] inline vector zeros() {
    vector z = {};
    keep_in_register(z);
    return z;
}

std::size_t round_up(std::size_t count, std::size_t multiple) {
    return (count + multiple - 1) / multiple * multiple;
}

// The sixteen floats of x widened to double and added to two vectors of partial sums.
[[gnu::always_inline]] inline void add_widened(const vector& x, detail::reduction_lanes& low,
                                               detail::reduction_lanes& high) {
#if defined(__AVX512F__)
    // Two whole-register conversions: GCC lowers __builtin_convertvector of eight floats as
    // four conversions of four and two inserts (x86-64-v4's tuning prefers 256-bit vectors).
    const __m512 all = reinterpret_cast<__m512>(x);
    low += reinterpret_cast<detail::reduction_lanes>(_mm512_cvtps_pd(_mm512_castps512_ps256(all)));
    high += reinterpret_cast<detail::reduction_lanes>(
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(all), 1))));
#else
    using half = float __attribute__((vector_size(8 * sizeof(float))));
    const half a = __builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7);
    const half b = __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15);
    low += __builtin_convertvector(a, detail::reduction_lanes);
    high += __builtin_convertvector(b, detail::reduction_lanes);
#endif
}

[[gnu::always_inline]] inline vector larger(const vector& a, const vector& b) {
    return a > b ? a : b;
}

// The largest of the sixteen lanes in every lane: a butterfly of four shuffles (a chain of
// fifteen scalar maxima per row was a tenth of the path's time).
[[gnu::always_inline]] inline vector all_lanes_max(vector m) {
    m = larger(m,
               __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));
    m = larger(m,
               __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));
    m = larger(m,
               __builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
    return larger(
        m, __builtin_shufflevector(m, m, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
}

// row[r][j] = beta <q[r], key_j> for j < columns (a multiple of key_chunk) and R rows at once:
// every logit is the same chain of FMAs over the components whatever R, only the keys'
// columns are loaded once for the R rows. With `largest`, also each row's largest logit over
// its first n columns (n a multiple of lanes) in every lane, taken as it is stored, in the
// order softmax_rows()' own pass takes it (the same value): the softmax then needs no pass
// of its own for the max (that pass, its loads, padding and butterfly, drew about 5% of the
// float sweep's profile).
template <std::size_t R>
void logits_rows(const float* const* q, const float* keys_t, std::size_t stride, std::size_t d,
                 float beta, std::size_t columns, float* const* row, std::size_t n = 0,
                 vector* largest = nullptr) {
    vector m[R];
    for (std::size_t r = 0; r < R; ++r)
        m[r] = vector{} - std::numeric_limits<float>::infinity();
    for (std::size_t j0 = 0; j0 < columns; j0 += key_chunk) {
        vector s[R][chunk_vectors];
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t u = 0; u < chunk_vectors; ++u)
                s[r][u] = zeros();
        const float* column = keys_t + j0;
        for (std::size_t c = 0; c < d; ++c, column += stride) {
#pragma GCC unroll 4
            for (std::size_t u = 0; u < chunk_vectors; ++u) {
                vector key = load_vector(column + u * lanes);
                keep_in_register(key);
#pragma GCC unroll 4
                for (std::size_t r = 0; r < R; ++r)
                    s[r][u] += q[r][c] * key;
            }
        }
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t u = 0; u < chunk_vectors; ++u) {
                const vector x = beta * s[r][u];
                detail::store(row[r] + j0 + u * lanes, x);
                if (largest && j0 + u * lanes < n) m[r] = larger(m[r], x);
            }
    }
    if (largest)
        for (std::size_t r = 0; r < R; ++r)
            largest[r] = all_lanes_max(m[r]);
}

// The sum of the eight lanes by halving the vector (three adds; detail::combine_sums()'s
// order of pairs became seven scalar adds and six extracts per row).
[[gnu::always_inline]] inline double lanes_sum(const detail::reduction_lanes& x) {
    using quarter = double __attribute__((vector_size(2 * sizeof(double))));
    using half = double __attribute__((vector_size(4 * sizeof(double))));
    const half h =
        __builtin_shufflevector(x, x, 0, 1, 2, 3) + __builtin_shufflevector(x, x, 4, 5, 6, 7);
    const quarter q = __builtin_shufflevector(h, h, 0, 1) + __builtin_shufflevector(h, h, 2, 3);
    return q[0] + q[1];
}

// inverse[r] = 1 / (the eight lanes of low[r] + high[r] summed), in float, for R = 1, 2 or 4
// rows: each row's lanes added in lanes_sum()'s order (lanes i and i + 4, then i and i + 2,
// then the two left), the rows side by side in the vector, and one division for all of
// them. Row by row, each division waited on its horizontal sum, and the conversion on the
// division: that chain drew about a tenth of the float sweep's profile samples.
template <std::size_t R>
[[gnu::always_inline]] inline void inverse_sums(const detail::reduction_lanes* low,
                                                const detail::reduction_lanes* high,
                                                float* inverse) {
    using lanes8 = detail::reduction_lanes;
    using lanes4 = double __attribute__((vector_size(4 * sizeof(double))));
    using lanes2 = double __attribute__((vector_size(2 * sizeof(double))));
    // Two rows' eight lanes into four each: a's i + a's i + 4, then b's.
    const auto halve = [](const lanes8& a, const lanes8& b) {
        return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11) +
               __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15);
    };
    if constexpr (R == 1) {
        inverse[0] = static_cast<float>(1.0 / lanes_sum(low[0] + high[0]));
    } else if constexpr (R == 2) {
        const lanes8 t = halve(low[0] + high[0], low[1] + high[1]);
        const lanes4 u =
            __builtin_shufflevector(t, t, 0, 1, 4, 5) + __builtin_shufflevector(t, t, 2, 3, 6, 7);
        const lanes2 sums =
            __builtin_shufflevector(u, u, 0, 2) + __builtin_shufflevector(u, u, 1, 3);
        const lanes2 one = {1.0, 1.0};
        const auto result =
            __builtin_convertvector(one / sums, float __attribute__((vector_size(8))));
        inverse[0] = result[0];
        inverse[1] = result[1];
    } else {
        static_assert(R == 4, "inverse_sums: 1, 2 or 4 rows");
        const lanes8 t01 = halve(low[0] + high[0], low[1] + high[1]);
        const lanes8 t23 = halve(low[2] + high[2], low[3] + high[3]);
        const lanes8 u = __builtin_shufflevector(t01, t23, 0, 1, 4, 5, 8, 9, 12, 13) +
                         __builtin_shufflevector(t01, t23, 2, 3, 6, 7, 10, 11, 14, 15);
        const lanes4 sums =
            __builtin_shufflevector(u, u, 0, 2, 4, 6) + __builtin_shufflevector(u, u, 1, 3, 5, 7);
        const lanes4 one = {1.0, 1.0, 1.0, 1.0};
        const auto result =
            __builtin_convertvector(one / sums, float __attribute__((vector_size(16))));
        for (std::size_t r = 0; r < 4; ++r)
            inverse[r] = result[r];
    }
}

// For R rows at once (their dependent chains of max, exp and sum interleave): exp(row[r][j] -
// max) in place for j < visible, zeros from there to the next whole vector (the rows have
// room: their logits were written in whole chunks), and in low[r] + high[r] the row's sum
// (softmax_rows() then takes inverse[r] = 1 / it by inverse_sums()), summed in double as
// the exponentials are stored (a float sum of n terms would add an
// error growing with n to every weight; only each lane's four terms of a 64-key block are
// added in float first; the padding's zeros add nothing). Each row's arithmetic is the same
// whatever R. given: the rows' largest logits in every lane (from logits_rows()), or null
// for the pass here.
template <std::size_t R>
[[gnu::always_inline]] inline void exp_rows(float* const* row, std::size_t visible,
                                            const vector* given, detail::reduction_lanes* low,
                                            detail::reduction_lanes* high) {
    const std::size_t end = round_up(visible, lanes);
    vector largest[R];
    for (std::size_t r = 0; r < R; ++r) {
        if (given) {
            largest[r] = given[r];
            continue;
        }
        std::fill(row[r] + visible, row[r] + end, -std::numeric_limits<float>::infinity());
        vector m = load_vector(row[r]);
        for (std::size_t j = lanes; j < end; j += lanes)
            m = larger(m, load_vector(row[r] + j));
        largest[r] = all_lanes_max(m);
    }
    for (std::size_t r = 0; r < R; ++r)
        low[r] = high[r] = detail::reduction_lanes{};
    std::size_t j = 0;
    for (; j + 4 * lanes <= end; j += 4 * lanes) {
        // One row's four vectors at a time: the exponential's intermediates for more rows
        // (2 or 4, as the logits take them) outgrow the 32 registers and spill, which cost
        // a fifth of the sweep's time.
        for (std::size_t r = 0; r < R; ++r) {
            vector x[4];
            for (std::size_t v = 0; v < 4; ++v)
                x[v] = load_vector(row[r] + j + v * lanes) - largest[r];
            exp_groups_nonpositive(x);
            for (std::size_t v = 0; v < 4; ++v)
                detail::store(row[r] + j + v * lanes, x[v]);
            // The four vectors summed pairwise in float, then widened: each lane's sum of
            // four terms carries at most two roundings (2^-23 of it), and the conversions
            // to double are done once per 64 keys instead of once per 16 (the float sweep
            // at simuformer's shape 2% faster).
            add_widened((x[0] + x[1]) + (x[2] + x[3]), low[r], high[r]);
        }
    }
    for (; j < end; j += lanes) {
        vector x[R];
        for (std::size_t r = 0; r < R; ++r)
            x[r] = load_vector(row[r] + j) - largest[r];
        exp_groups_nonpositive(x); // -inf (the padding) gives 0
        for (std::size_t r = 0; r < R; ++r) {
            detail::store(row[r] + j, x[r]);
            add_widened(x[r], low[r], high[r]);
        }
    }
}

template <std::size_t R>
[[gnu::always_inline]] inline void softmax_rows(float* const* row, std::size_t visible,
                                                float* inverse, const vector* given = nullptr) {
    detail::reduction_lanes low[R], high[R];
    exp_rows<R>(row, visible, given, low, high);
    inverse_sums<R>(low, high, inverse);
}

// out[r] += scale[r] * sum_j w[r][j] v_j over `count` keys for R rows, d = V * lanes: the keys
// in four interleaved streams (key j in stream j mod 4), added in a fixed order at the end;
// each row's sums are the same whatever R (each value row is loaded once for the R rows).
template <std::size_t V, std::size_t R>
void add_weighted_values(const float* const* w, const float* values, std::size_t count,
                         const float* scale, float* const* out) {
    constexpr std::size_t d = V * lanes, streams = 4;
    vector sum[R][streams][V];
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t s = 0; s < streams; ++s)
            for (std::size_t u = 0; u < V; ++u)
                sum[r][s][u] = zeros();
    auto add_key = [&](std::size_t j, std::size_t s) {
        for (std::size_t u = 0; u < V; ++u) {
            vector x = load_vector(values + j * d + u * lanes);
            keep_in_register(x);
            for (std::size_t r = 0; r < R; ++r)
                sum[r][s][u] += w[r][j] * x;
        }
    };
    std::size_t j = 0;
    for (; j + streams <= count; j += streams)
        for (std::size_t s = 0; s < streams; ++s)
            add_key(j + s, s);
    for (std::size_t s = 0; j < count; ++j, ++s)
        add_key(j, s);
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t u = 0; u < V; ++u)
            detail::store(out[r] + u * lanes, load_vector(out[r] + u * lanes) +
                                                  scale[r] * ((sum[r][0][u] + sum[r][1][u]) +
                                                              (sum[r][2][u] + sum[r][3][u])));
}

// The same for one row and any d (no compiled loop for it).
void add_weighted_values_any(const float* w, const float* values, std::size_t count, std::size_t d,
                             float scale, float* out) {
    float sum[largest_d] = {};
    for (std::size_t j = 0; j < count; ++j)
        for (std::size_t c = 0; c < d; ++c)
            sum[c] += w[j] * values[j * d + c];
    for (std::size_t c = 0; c < d; ++c)
        out[c] += scale * sum[c];
}

using weighted_values_loop = void (*)(const float* const*, const float*, std::size_t, const float*,
                                      float* const*);

// R rows' loop for d = 16, 32, 64 (null otherwise) while their 4 R d / 16 sums fit in 16
// registers (more would spill).
template <std::size_t R> weighted_values_loop weighted_values_for(std::size_t d) {
    return dispatch_dimension<dimension_set<16, 32, 64>>(d, [](auto D) -> weighted_values_loop {
        if constexpr (D != 0 && R * D <= 4 * lanes)
            return add_weighted_values<D / lanes, R>;
        else
            return nullptr;
    });
}

// Softmax of a group of R rows (softmax_rows), two rows at a time: their chains of max, exp,
// sum and division interleave (four at a time spilled the exp's registers, no faster).
// largest: the rows' largest logits from logits_rows(), or null.
template <std::size_t R>
[[gnu::always_inline]] inline void softmax_group(float* const* row, std::size_t n, float* inverse,
                                                 const vector* largest) {
    if constexpr (R % 2 == 0) {
        for (std::size_t r = 0; r < R; r += 2)
            softmax_rows<2>(row + r, n, inverse + r, largest ? largest + r : nullptr);
    } else {
        for (std::size_t r = 0; r < R; ++r)
            softmax_rows<1>(row + r, n, inverse + r, largest ? largest + r : nullptr);
    }
}

// A group's logits (logits_rows()) over all n keys, with their largest in `largest` where n
// is whole vectors (no padding to leave out): returns `largest` then, else null (the softmax
// takes the max in a pass of its own).
template <std::size_t R>
[[gnu::always_inline]] inline const vector*
group_logits(const float* const* q, const float* keys_t, std::size_t stride, std::size_t d,
             float beta, std::size_t n, float* const* row, vector* largest) {
    if (n % lanes != 0) {
        logits_rows<R>(q, keys_t, stride, d, beta, stride, row);
        return nullptr;
    }
    logits_rows<R>(q, keys_t, stride, d, beta, stride, row, n, largest);
    return largest;
}

// The rows first_row .. end_row - 1 as both routes of the attention take them: without a
// causal mask R = 4 rows at a time (2 where no loop of 4 rows exists for d), group(k, R,
// loop) for rows k .. k + R - 1 with R a std::integral_constant and `loop` their weighted
// values' loop; then the rows left one at a time, row(k, loop), `loop` the one-row loop (null
// for a d without one: add_row_values() takes the loop for any d).
template <class Group, class Row>
[[gnu::always_inline]] inline void for_row_groups(std::size_t first_row, std::size_t end_row,
                                                  std::size_t d, bool causal, Group&& group,
                                                  Row&& row) {
    std::size_t k = first_row;
    const auto groups = [&](auto size, weighted_values_loop loop) {
        constexpr std::size_t R = decltype(size)::value;
        for (; k + R <= end_row; k += R)
            group(k, size, loop);
    };
    if (!causal) {
        if (const weighted_values_loop four = weighted_values_for<4>(d))
            groups(std::integral_constant<std::size_t, 4>{}, four);
        else if (const weighted_values_loop two = weighted_values_for<2>(d))
            groups(std::integral_constant<std::size_t, 2>{}, two);
    }
    const weighted_values_loop one = weighted_values_for<1>(d);
    for (; k < end_row; ++k)
        row(k, one);
}

// out_row += scale * sum_j w_j values_j over `visible` keys: through `one` (the one-row loop of
// weighted_values_for<1>) or, null, the loop for any d.
inline void add_row_values(weighted_values_loop one, const float* w, const float* values,
                           std::size_t visible, std::size_t d, float scale, float* out_row) {
    if (one) {
        const float* const weights[1] = {w};
        float* const o[1] = {out_row};
        const float scales[1] = {scale};
        one(weights, values, visible, scales, o);
    } else {
        add_weighted_values_any(w, values, visible, d, scale, out_row);
    }
}

// Tokens at a time, V vectors each: `group` V independent FMA chains over the components.
template <std::size_t V>
void project_rows(const float* tokens, std::size_t n, const float* m_t, float* out) {
    constexpr std::size_t d = V * lanes, group = V <= 2 ? 8 : 4;
    std::size_t k = 0;
    for (; k + group <= n; k += group) {
        vector sum[group][V];
        for (std::size_t g = 0; g < group; ++g)
            for (std::size_t u = 0; u < V; ++u)
                sum[g][u] = zeros();
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t u = 0; u < V; ++u) {
                vector column = load_vector(m_t + c * d + u * lanes);
                keep_in_register(column);
                for (std::size_t g = 0; g < group; ++g)
                    sum[g][u] += tokens[(k + g) * d + c] * column;
            }
        for (std::size_t g = 0; g < group; ++g)
            for (std::size_t u = 0; u < V; ++u)
                store_vector(out + (k + g) * d + u * lanes, sum[g][u]);
    }
    for (; k < n; ++k) {
        vector sum[V] = {};
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t u = 0; u < V; ++u)
                sum[u] += tokens[k * d + c] * load_vector(m_t + c * d + u * lanes);
        for (std::size_t u = 0; u < V; ++u)
            store_vector(out + k * d + u * lanes, sum[u]);
    }
}

void project_rows_any(const float* tokens, std::size_t n, std::size_t d, const float* m_t,
                      float* out) {
    for (std::size_t k = 0; k < n; ++k) {
        float* row = out + k * d;
        std::fill(row, row + d, 0.0f);
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t e = 0; e < d; ++e)
                row[e] += tokens[k * d + c] * m_t[c * d + e];
    }
}

} // namespace

void transpose_small_n_float_keys(const float* keys, std::size_t n, std::size_t d,
                                  small_n_float_keys& out) {
    if (!detail::takes_small_n(n, d))
        throw std::logic_error("transpose_small_n_float_keys: not a small-n shape");
    out.n = n;
    out.d = d;
    out.stride = round_up(n, key_chunk);
    out.columns.resize(d * out.stride);
    // A column at a time, written in order, the padding keys zeros: zeroing the whole
    // matrix first and writing it a key at a time (d columns apart) was 2% of simuformer's
    // float sweep.
    for (std::size_t c = 0; c < d; ++c) {
        float* column = out.columns.data() + c * out.stride;
        for (std::size_t j = 0; j < n; ++j)
            column[j] = keys[j * d + c];
        std::fill(column + n, column + out.stride, 0.0f);
    }
}

void add_small_n_float_attention(const float* queries, const small_n_float_keys& keys,
                                 const float* values, float value_scale, std::size_t n,
                                 std::size_t d, double beta, bool causal, std::size_t first_row,
                                 std::size_t end_row, float* out) {
    if (keys.n != n || keys.d != d)
        throw std::logic_error(
            "add_small_n_float_attention: the transposed keys are of another shape");
    const float* keys_t = keys.columns.data();
    const std::size_t stride = keys.stride;
    const auto b = static_cast<float>(beta);
    // Rows R at a time: the logits' and the weighted values' FMA chains of R rows
    // interleave (4 R chains each: one row's 4 were latency-bound) and each key or value
    // vector is loaded once for the R rows.
    alignas(64) float rows[4 * padded_limit];
    const auto group = [&](std::size_t k, auto size, weighted_values_loop weighted_values) {
        constexpr std::size_t R = decltype(size)::value;
        float* row[R];
        const float* q[R];
        float* o[R];
        for (std::size_t r = 0; r < R; ++r) {
            row[r] = rows + r * padded_limit;
            q[r] = queries + (k + r) * d;
            o[r] = out + (k + r) * d;
        }
        float scale[R];
        vector largest[R];
        softmax_group<R>(row, n, scale, group_logits<R>(q, keys_t, stride, d, b, n, row, largest));
        for (std::size_t r = 0; r < R; ++r)
            scale[r] *= value_scale;
        weighted_values(row, values, n, scale, o);
    };
    const auto one_row = [&](std::size_t k, weighted_values_loop one) {
        const std::size_t visible = causal ? k + 1 : n;
        float* const row[1] = {rows};
        const float* const q[1] = {queries + k * d};
        logits_rows<1>(q, keys_t, stride, d, b, round_up(visible, key_chunk), row);
        float scale[1];
        softmax_rows<1>(row, visible, scale);
        add_row_values(one, rows, values, visible, d, scale[0] * value_scale, out + k * d);
    };
    for_row_groups(first_row, std::min(end_row, n), d, causal, group, one_row);
}

namespace {

// sum += inverse * e over count entries: one head's normalised weights added to the heads'.
inline void add_scaled(float* sum, const float* e, float inverse, std::size_t count) {
    for (std::size_t j = 0; j < count; ++j)
        sum[j] += inverse * e[j];
}

} // namespace

void add_small_n_float_shared_values(const float* const* queries, std::size_t heads,
                                     const small_n_float_keys& keys, const float* values,
                                     float value_scale, std::size_t n, std::size_t d, double beta,
                                     bool causal, std::size_t first_row, std::size_t end_row,
                                     float* out) {
    if (keys.n != n || keys.d != d)
        throw std::logic_error(
            "add_small_n_float_shared_values: the transposed keys are of another shape");
    const float* keys_t = keys.columns.data();
    const std::size_t stride = keys.stride;
    const auto b_beta = static_cast<float>(beta);
    // Rows R at a time as in add_small_n_float_attention(), each head's weights of the R rows
    // added to the rows' sums, then one product of the sums with the values. The heads in
    // blocks: every head's exponentials of the block first, then their 1 / sums all at
    // once, then the block's weights added. A head's weights added right after its own
    // softmax waited on its sum and division (that wait drew about a tenth of the float
    // sweep's profile samples; the whole change made the sweep 4-8% faster); the sums are
    // the same, in the same order.
    constexpr std::size_t head_block = 8;
    alignas(64) float exps[head_block * 4 * padded_limit];
    alignas(64) float sums[4 * padded_limit];
    const auto group = [&](std::size_t k, auto size, weighted_values_loop weighted_values) {
        constexpr std::size_t R = decltype(size)::value;
        float* sum[R];
        float* o[R];
        float scale[R];
        for (std::size_t r = 0; r < R; ++r) {
            sum[r] = sums + r * padded_limit;
            o[r] = out + (k + r) * d;
        }
        for (std::size_t h0 = 0; h0 < heads; h0 += head_block) {
            const std::size_t block = std::min(head_block, heads - h0);
            detail::reduction_lanes low[head_block * R], high[head_block * R];
            for (std::size_t b = 0; b < block; ++b) {
                const float* q[R];
                float* row[R];
                for (std::size_t r = 0; r < R; ++r) {
                    q[r] = queries[h0 + b] + (k + r) * d;
                    row[r] = exps + (b * R + r) * padded_limit;
                }
                vector largest[R];
                exp_rows<R>(row, n, group_logits<R>(q, keys_t, stride, d, b_beta, n, row, largest),
                            low + b * R, high + b * R);
            }
            float inverse[head_block * R];
            for (std::size_t b = 0; b < block; ++b)
                inverse_sums<R>(low + b * R, high + b * R, inverse + b * R);
            // sum[r][j] += inverse * e, head after head: the exps' vectors from L1, the sum
            // in a register.
            for (std::size_t r = 0; r < R; ++r)
                for (std::size_t j = 0; j < n; j += lanes) {
                    vector acc = h0 == 0 ? zeros() : load_vector(sum[r] + j);
                    for (std::size_t b = 0; b < block; ++b)
                        acc +=
                            inverse[b * R + r] * load_vector(exps + (b * R + r) * padded_limit + j);
                    store_vector(sum[r] + j, acc);
                }
        }
        for (std::size_t r = 0; r < R; ++r)
            scale[r] = value_scale;
        weighted_values(sum, values, n, scale, o);
    };
    const auto one_row = [&](std::size_t k, weighted_values_loop one) {
        const std::size_t visible = causal ? k + 1 : n;
        float* const row[1] = {exps};
        std::fill(sums, sums + visible, 0.0f);
        for (std::size_t h = 0; h < heads; ++h) {
            const float* const q[1] = {queries[h] + k * d};
            logits_rows<1>(q, keys_t, stride, d, b_beta, round_up(visible, key_chunk), row);
            float inverse[1];
            softmax_rows<1>(row, visible, inverse);
            add_scaled(sums, exps, inverse[0], visible);
        }
        add_row_values(one, sums, values, visible, d, value_scale, out + k * d);
    };
    for_row_groups(first_row, std::min(end_row, n), d, causal, group, one_row);
}

void project_small_n_float(const float* tokens, std::size_t n, std::size_t d, const float* m_t,
                           detail::row_major_matrix<float>& out) {
    out.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
    using loop = void (*)(const float*, std::size_t, const float*, float*);
    const loop compiled = dispatch_dimension<dimension_set<16, 32, 64>>(d, [](auto D) -> loop {
        if constexpr (D != 0)
            return project_rows<D / lanes>;
        else
            return nullptr;
    });
    if (compiled)
        compiled(tokens, n, m_t, out.data());
    else
        project_rows_any(tokens, n, d, m_t, out.data());
}

} // namespace nadyn::kernel
