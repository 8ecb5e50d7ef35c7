#include "nadyn/experiment/unselectable.hpp"

#include "nadyn/model/random.hpp"

#include <Eigen/LU>
#include <boost/multiprecision/cpp_int.hpp>
#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace nadyn {

namespace {

using exact = boost::multiprecision::cpp_rational;

constexpr double unit_roundoff = std::numeric_limits<double>::epsilon() / 2.0;

// gamma_k = k u / (1 - k u) bounds the relative rounding error of a sum of k products
// (Higham, Accuracy and Stability of Numerical Algorithms, §3.1); the factor 1.01 covers
// the rounding of the bounds themselves, which are sums of positive terms.
double gamma(std::size_t k) {
    const double ku = static_cast<double>(k) * unit_roundoff;
    return 1.01 * ku / (1.0 - ku);
}

// An absolute term against underflow in the products of a bound with k terms.
double tiny(std::size_t k) {
    return static_cast<double>(k + 1) * std::numeric_limits<double>::denorm_min() * 4.0;
}

// A double as the rational it is: m 2^e with an integer m of at most 53 bits.
exact to_exact(double x) {
    if (x == 0.0) return exact(0);
    int e = 0;
    const double m = std::frexp(x, &e);
    boost::multiprecision::cpp_int mantissa(static_cast<std::int64_t>(std::ldexp(m, 53)));
    e -= 53;
    if (e >= 0) return exact(mantissa << e);
    return exact(mantissa, boost::multiprecision::cpp_int(1) << -e);
}

// The decision of each key of one set. Key j is unselectable exactly when it lies in the
// convex hull of the other keys; each decision rests on a certificate checked with rigorous
// error bounds, or on exact rational arithmetic, never on a solver's tolerance:
//
//   1. a copy of another key (compared exactly): unselectable;
//   2. a query q with <q, key_j> > <q, key_i> for every i != j, checked in floating point
//      with a bound on the rounding of the scores, and where a difference lies within its
//      bound, exactly in rationals: selectable. The candidates are q = key_j (it selects
//      every key of a set on a sphere about the origin) and the query of GLPK's margin
//      program below;
//   3. convex weights: the support of that program's dual (d + 1 affinely independent keys)
//      and the weights lambda solving sum lambda_i key_i = key_j, sum lambda_i = 1, verified
//      with a rigorous bound on the error of the floating-point solution (an approximate
//      inverse R with ||I - R M|| < 1): every weight provably positive: unselectable;
//   4. otherwise the feasibility program itself, lambda >= 0, sum lambda_i = 1,
//      sum lambda_i key_i = key_j, solved by the simplex method in exact rational arithmetic
//      (Bland's rule, so it ends): feasible means unselectable.
//
// The margin program, for key j:
//
//     maximise  <q, key_j> - s   over q in [-1, 1]^d and s free,
//     subject to <q, key_i> - s <= 0 for every i != j,
//
// whose optimum is the largest margin max_q (<q, key_j> - max_{i != j} <q, key_i>) of a
// query in the box: positive exactly when some query selects key j, and 0 when key_j is in
// the convex hull of the others (its dual's row values are then the convex weights). One
// GLPK problem serves all keys: row i holds key_i; program j frees row j and takes key_j as
// its objective, so each solve starts from the previous program's basis.
// GLPK keeps an environment per thread (glp_init_env on first use) that only glp_free_env
// releases: a sweep's worker threads would each leave theirs behind when they end. This frees
// it when the thread that used GLPK ends (the main thread's at exit).
struct glpk_environment_release {
    ~glpk_environment_release() { glp_free_env(); }
};
thread_local glpk_environment_release release_glpk_at_thread_exit;

class hull_membership {
  public:
    hull_membership(const double* keys, std::size_t n, std::size_t d)
        : m_keys(keys), m_n(n), m_d(d), m_problem(create_problem()),
          m_previous_terminal(glp_term_out(GLP_OFF)) {
        glp_set_obj_dir(m_problem, GLP_MAX);
        glp_add_rows(m_problem, static_cast<int>(n));
        glp_add_cols(m_problem, static_cast<int>(d + 1));
        for (std::size_t c = 0; c < d; ++c)
            glp_set_col_bnds(m_problem, static_cast<int>(c + 1), GLP_DB, -1.0, 1.0);
        const int s = static_cast<int>(d + 1);
        glp_set_col_bnds(m_problem, s, GLP_FR, 0.0, 0.0);
        glp_set_obj_coef(m_problem, s, -1.0);
        // GLPK's arrays are 1-based: entry 0 is unused.
        std::vector<int> rows(1), cols(1);
        std::vector<double> values(1);
        for (std::size_t i = 0; i < n; ++i) {
            const int row = static_cast<int>(i + 1);
            glp_set_row_bnds(m_problem, row, GLP_UP, 0.0, 0.0);
            for (std::size_t c = 0; c < d; ++c) {
                const double value = keys[i * d + c];
                if (value == 0.0) continue;
                rows.push_back(row);
                cols.push_back(static_cast<int>(c + 1));
                values.push_back(value);
            }
            rows.push_back(row);
            cols.push_back(s);
            values.push_back(-1.0);
        }
        glp_load_matrix(m_problem, static_cast<int>(values.size() - 1), rows.data(), cols.data(),
                        values.data());
        glp_init_smcp(&m_settings);
        m_settings.msg_lev = GLP_MSG_OFF;
        m_settings.presolve = GLP_OFF; // keep the basis between programs
        m_query.resize(d);
    }
    ~hull_membership() {
        glp_delete_prob(m_problem);
        glp_term_out(m_previous_terminal);
    }
    hull_membership(const hull_membership&) = delete;
    hull_membership& operator=(const hull_membership&) = delete;

  private:
    static glp_prob* create_problem() {
        (void)&release_glpk_at_thread_exit; // constructed in this thread, so destroyed with it
        return glp_create_prob();
    }

  public:
    bool unselectable(std::size_t j) {
        if (has_twin(j)) return true;
        std::copy(key(j), key(j) + m_d, m_query.begin());
        if (separates(j)) return false;
        if (solve_margin_program(j)) {
            for (std::size_t c = 0; c < m_d; ++c)
                m_query[c] = glp_get_col_prim(m_problem, static_cast<int>(c + 1));
            if (separates(j)) return false;
            if (convex_weights_verified(j)) return true;
        }
        return exactly_in_hull(j);
    }

  private:
    const double* key(std::size_t i) const { return m_keys + i * m_d; }

    bool has_twin(std::size_t j) const {
        for (std::size_t i = 0; i < m_n; ++i)
            if (i != j && std::equal(key(i), key(i) + m_d, key(j))) return true;
        return false;
    }

    // Whether the query m_query gives key j a strictly higher score than every other key.
    // In floating point, |fl(<q, k>) - <q, k>| <= gamma_d sum_c |q_c k_c|; a difference of
    // scores within the sum of both bounds is decided exactly.
    bool separates(std::size_t j) {
        const double g = gamma(m_d + 1);
        auto score = [&](std::size_t i, double& bound) {
            double sum = 0.0, magnitude = 0.0;
            for (std::size_t c = 0; c < m_d; ++c) {
                const double term = m_query[c] * key(i)[c];
                sum += term;
                magnitude += std::abs(term);
            }
            bound = g * magnitude + tiny(m_d);
            return sum;
        };
        double bound_j = 0.0;
        const double score_j = score(j, bound_j);
        m_unsure.clear();
        for (std::size_t i = 0; i < m_n; ++i) {
            if (i == j) continue;
            double bound_i = 0.0;
            const double difference = score_j - score(i, bound_i);
            const double bound = 1.01 * (bound_j + bound_i);
            if (difference > bound) continue;
            if (difference < -bound) return false;
            m_unsure.push_back(i);
        }
        if (m_unsure.empty()) return true;
        std::vector<exact> query(m_d);
        for (std::size_t c = 0; c < m_d; ++c)
            query[c] = to_exact(m_query[c]);
        for (std::size_t i : m_unsure) {
            exact difference = 0;
            for (std::size_t c = 0; c < m_d; ++c)
                if (key(j)[c] != key(i)[c])
                    difference += query[c] * (to_exact(key(j)[c]) - to_exact(key(i)[c]));
            if (difference <= 0) return false;
        }
        return true;
    }

    // Solves program j; false when GLPK finds no optimum (the exact program decides then).
    bool solve_margin_program(std::size_t j) {
        if (m_free != 0) glp_set_row_bnds(m_problem, m_free, GLP_UP, 0.0, 0.0);
        m_free = static_cast<int>(j + 1);
        glp_set_row_bnds(m_problem, m_free, GLP_FR, 0.0, 0.0);
        for (std::size_t c = 0; c < m_d; ++c)
            glp_set_obj_coef(m_problem, static_cast<int>(c + 1), key(j)[c]);
        if (glp_simplex(m_problem, &m_settings) == 0 && glp_get_status(m_problem) == GLP_OPT)
            return true;
        // A basis left singular by the previous program: start afresh once.
        glp_adv_basis(m_problem, 0);
        return glp_simplex(m_problem, &m_settings) == 0 && glp_get_status(m_problem) == GLP_OPT;
    }

    // Whether key j is provably a convex combination of the d + 1 keys whose constraints
    // are active in GLPK's optimal basis. With M the (d + 1) x (d + 1) matrix of columns
    // (key_i, 1) and b = (key_j, 1), the floating-point solution x of M x = b is within
    // |R r| / (1 - ||I - R M||) of the exact one (R an approximate inverse, r = b - M x,
    // both bounded with their rounding: Rump's verification of linear systems); when every
    // x_i exceeds that distance, the exact weights are positive.
    bool convex_weights_verified(std::size_t j) {
        std::vector<std::size_t> support;
        for (std::size_t i = 0; i < m_n; ++i)
            if (i != j && glp_get_row_stat(m_problem, static_cast<int>(i + 1)) == GLP_NU)
                support.push_back(i);
        const std::size_t m = m_d + 1;
        if (support.size() != m) return false;
        Eigen::MatrixXd M(m, m);
        Eigen::VectorXd b(m);
        for (std::size_t a = 0; a < m; ++a) {
            for (std::size_t c = 0; c < m_d; ++c)
                M(Eigen::Index(c), Eigen::Index(a)) = key(support[a])[c];
            M(Eigen::Index(m_d), Eigen::Index(a)) = 1.0;
        }
        for (std::size_t c = 0; c < m_d; ++c)
            b(Eigen::Index(c)) = key(j)[c];
        b(Eigen::Index(m_d)) = 1.0;
        const Eigen::PartialPivLU<Eigen::MatrixXd> lu(M);
        const Eigen::VectorXd x = lu.solve(b);
        const Eigen::MatrixXd R = lu.inverse();
        if (!x.allFinite() || !R.allFinite()) return false;
        const double g = gamma(m + 1);
        const Eigen::Index size = Eigen::Index(m);
        // rho >= |b - M x| componentwise, the residual with its rounding.
        Eigen::VectorXd rho(size);
        for (Eigen::Index r = 0; r < size; ++r) {
            double residual = b(r), magnitude = std::abs(b(r));
            for (Eigen::Index a = 0; a < size; ++a) {
                residual -= M(r, a) * x(a);
                magnitude += std::abs(M(r, a) * x(a));
            }
            rho(r) = 1.01 * (std::abs(residual) + g * magnitude) + tiny(m);
        }
        // alpha >= ||I - R M||_inf and step >= || |R| rho ||_inf, with their rounding.
        double alpha = 0.0, step = 0.0;
        for (Eigen::Index r = 0; r < size; ++r) {
            double row = 0.0, correction = 0.0;
            for (Eigen::Index a = 0; a < size; ++a) {
                double entry = r == a ? 1.0 : 0.0, magnitude = r == a ? 1.0 : 0.0;
                for (Eigen::Index k = 0; k < size; ++k) {
                    entry -= R(r, k) * M(k, a);
                    magnitude += std::abs(R(r, k) * M(k, a));
                }
                row += std::abs(entry) + g * magnitude + tiny(m);
                correction += std::abs(R(r, a)) * rho(a);
            }
            alpha = std::max(alpha, 1.01 * row);
            step = std::max(step, (1.0 + g) * 1.01 * correction + tiny(m));
        }
        if (!(alpha < 0.5)) return false;
        const double distance = 1.01 * step / (1.0 - alpha);
        return x.minCoeff() > distance;
    }

    // The feasibility program lambda >= 0, sum lambda_i = 1, sum lambda_i key_i = key_j in
    // exact rational arithmetic: phase 1 of the simplex method, one artificial variable per
    // row, Bland's rule (smallest index enters and leaves), so that it cannot cycle. Feasible
    // (the artificial sum reaches 0) means key j is in the hull of the others.
    bool exactly_in_hull(std::size_t j) const {
        const std::size_t rows = m_d + 1, columns = m_n - 1, width = columns + rows + 1;
        std::vector<exact> table(rows * width);
        auto at = [&](std::size_t r, std::size_t c) -> exact& { return table[r * width + c]; };
        std::vector<std::size_t> basis(rows);
        for (std::size_t r = 0; r < rows; ++r) {
            const bool coordinate = r < m_d;
            exact rhs = coordinate ? to_exact(key(j)[r]) : exact(1);
            const bool flip = rhs < 0;
            std::size_t column = 0;
            for (std::size_t i = 0; i < m_n; ++i) {
                if (i == j) continue;
                exact value = coordinate ? to_exact(key(i)[r]) : exact(1);
                at(r, column++) = flip ? exact(-value) : value;
            }
            at(r, columns + r) = 1;
            at(r, width - 1) = flip ? exact(-rhs) : rhs;
            basis[r] = columns + r;
        }
        // Reduced costs of minimising the sum of the artificials, and that sum.
        std::vector<exact> cost(width, exact(0));
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < width; ++c)
                if (c < columns || c == width - 1) cost[c] -= at(r, c);
        while (true) {
            std::size_t entering = width;
            for (std::size_t c = 0; c + 1 < width && entering == width; ++c)
                if (cost[c] < 0) entering = c;
            if (entering == width) break;
            std::size_t leaving = rows;
            exact best;
            for (std::size_t r = 0; r < rows; ++r) {
                if (at(r, entering) <= 0) continue;
                const exact ratio = at(r, width - 1) / at(r, entering);
                if (leaving == rows || ratio < best ||
                    (ratio == best && basis[r] < basis[leaving])) {
                    leaving = r;
                    best = ratio;
                }
            }
            if (leaving == rows) break; // cannot happen: phase 1 is bounded below by 0
            const exact pivot = at(leaving, entering);
            for (std::size_t c = 0; c < width; ++c)
                at(leaving, c) /= pivot;
            for (std::size_t r = 0; r < rows; ++r) {
                if (r == leaving || at(r, entering) == 0) continue;
                const exact factor = at(r, entering);
                for (std::size_t c = 0; c < width; ++c)
                    if (at(leaving, c) != 0) at(r, c) -= factor * at(leaving, c);
            }
            if (cost[entering] != 0) {
                const exact factor = cost[entering];
                for (std::size_t c = 0; c < width; ++c)
                    if (at(leaving, c) != 0) cost[c] -= factor * at(leaving, c);
            }
            basis[leaving] = entering;
        }
        return cost[width - 1] == 0; // minus the artificials' sum at the optimum
    }

    const double* m_keys;
    std::size_t m_n, m_d;
    glp_prob* m_problem;
    int m_previous_terminal;
    glp_smcp m_settings{};
    int m_free = 0; // the row left free (the key being tested), 0: none yet
    std::vector<double> m_query;
    std::vector<std::size_t> m_unsure;
};

void check_shape(std::size_t n, std::size_t d) {
    if (d == 0 && n > 0) throw std::invalid_argument("unselectable keys: dimension d is 0");
    // GLPK indexes rows and columns with int.
    if (n >= static_cast<std::size_t>(1) << 30 || d >= static_cast<std::size_t>(1) << 30)
        throw std::invalid_argument("unselectable keys: n or d too large for GLPK");
}

} // namespace

bool unselectable_key(const double* keys, std::size_t n, std::size_t d, std::size_t j) {
    check_shape(n, d);
    if (j >= n) throw std::invalid_argument("unselectable keys: key index out of range");
    if (n < 2) return false;
    hull_membership hull(keys, n, d);
    return hull.unselectable(j);
}

double unselectable_fraction(const double* keys, std::size_t n, std::size_t d) {
    check_shape(n, d);
    if (n < 2) return 0.0;
    hull_membership hull(keys, n, d);
    std::size_t inside = 0;
    for (std::size_t j = 0; j < n; ++j)
        if (hull.unselectable(j)) ++inside;
    return static_cast<double>(inside) / static_cast<double>(n);
}

double unselectable_fraction(const double* inputs, std::size_t n, std::size_t d,
                             const attention_weights& weights, std::vector<double>& keys) {
    if (weights.heads.empty() || n == 0) return 0.0;
    double sum = 0.0;
    for (const attention_head& head : weights.heads) {
        if (head.K.size() == 0) {
            sum += unselectable_fraction(inputs, n, d);
            continue;
        }
        keys.resize(n * d);
        using const_map = Eigen::Map<const matrix>;
        const const_map y(inputs, static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
        Eigen::Map<matrix> k(keys.data(), static_cast<Eigen::Index>(n),
                             static_cast<Eigen::Index>(d));
        k.noalias() = y * head.K.transpose(); // row j: (K y_j)^T, as the kernel projects
        sum += unselectable_fraction(keys.data(), n, d);
    }
    return sum / static_cast<double>(weights.heads.size());
}

namespace {

// Streams of the study's keys, away from the simulation's (initial, weights, layers).
constexpr std::uint64_t unselectable_stream = 1u << 20;

} // namespace

std::vector<double> gaussian_keys(std::uint64_t seed, std::size_t n, std::size_t d) {
    random_source source(stream_seed(seed, unselectable_stream + 4096 * n + d));
    std::vector<double> keys(n * d);
    for (double& x : keys)
        x = source.normal();
    return keys;
}

} // namespace nadyn
