#include "nadyn/unselectable.hpp"

#include <glpk.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace nadyn {

namespace {

// For key j the linear program
//
//     maximise  <q, key_j> - s   over q in [-1, 1]^d and s free,
//     subject to <q, key_i> - s <= 0 for every i != j,
//
// whose optimum is the largest margin max_q (<q, key_j> - max_{i != j} <q, key_i>) of a
// query in the box: positive exactly when some query selects key j (a separating
// hyperplane), and 0 when key_j is in the convex hull of the others (by LP duality the
// feasibility problem lambda >= 0, sum lambda = 1, sum lambda_i key_i = key_j is then
// solvable). One GLPK problem serves all keys: row i holds key_i; program j frees row j and
// takes key_j as its objective, so each solve starts from the previous program's basis.
class margin_programs {
  public:
    margin_programs(const double* keys, std::size_t n, std::size_t d)
        : m_keys(keys), m_n(n), m_d(d), m_problem(glp_create_prob()),
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
        m_scores.resize(n);
        m_bounds.resize(n);
    }
    ~margin_programs() {
        glp_delete_prob(m_problem);
        glp_term_out(m_previous_terminal);
    }
    margin_programs(const margin_programs&) = delete;
    margin_programs& operator=(const margin_programs&) = delete;

    bool selectable(std::size_t j) {
        if (m_free != 0) glp_set_row_bnds(m_problem, m_free, GLP_UP, 0.0, 0.0);
        m_free = static_cast<int>(j + 1);
        glp_set_row_bnds(m_problem, m_free, GLP_FR, 0.0, 0.0);
        for (std::size_t c = 0; c < m_d; ++c)
            glp_set_obj_coef(m_problem, static_cast<int>(c + 1), m_keys[j * m_d + c]);
        if (glp_simplex(m_problem, &m_settings) != 0 || glp_get_status(m_problem) != GLP_OPT) {
            // A basis left singular by the previous program: start afresh once.
            glp_adv_basis(m_problem, 0);
            if (const int code = glp_simplex(m_problem, &m_settings); code != 0)
                throw std::runtime_error("unselectable keys: GLPK's simplex failed (code " +
                                         std::to_string(code) + ") on key " + std::to_string(j));
            if (glp_get_status(m_problem) != GLP_OPT)
                throw std::runtime_error("unselectable keys: GLPK found no optimum for key " +
                                         std::to_string(j));
        }
        if (!(glp_get_obj_val(m_problem) > 0.0)) return false;
        for (std::size_t c = 0; c < m_d; ++c)
            m_query[c] = glp_get_col_prim(m_problem, static_cast<int>(c + 1));
        return certified(j);
    }

  private:
    // Whether the simplex's query q selects key j for certain: its score for key j exceeds
    // every other key's by more than a bound on the rounding error of the scores
    // (|fl(<q, k>) - <q, k>| <= gamma_d sum_c |q_c k_c|, gamma_d = d u / (1 - d u); the
    // factor 1.01 and the tiny absolute term cover the rounding of the bound itself and
    // underflow). A key whose best margin is within rounding of 0 is not certified.
    bool certified(std::size_t j) {
        constexpr double unit_roundoff = std::numeric_limits<double>::epsilon() / 2.0;
        const double gamma = 1.01 * static_cast<double>(m_d + 1) * unit_roundoff;
        const double tiny = static_cast<double>(m_d + 1) * std::numeric_limits<double>::min();
        for (std::size_t i = 0; i < m_n; ++i) {
            double score = 0.0, magnitude = 0.0;
            for (std::size_t c = 0; c < m_d; ++c) {
                const double term = m_query[c] * m_keys[i * m_d + c];
                score += term;
                magnitude += std::abs(term);
            }
            m_scores[i] = score;
            m_bounds[i] = gamma * magnitude + tiny;
        }
        for (std::size_t i = 0; i < m_n; ++i)
            if (i != j && !(m_scores[j] - m_scores[i] > 1.01 * (m_bounds[j] + m_bounds[i])))
                return false;
        return true;
    }

    const double* m_keys;
    std::size_t m_n, m_d;
    glp_prob* m_problem;
    int m_previous_terminal;
    glp_smcp m_settings{};
    int m_free = 0; // the row left free (the key being tested), 0: none yet
    std::vector<double> m_query, m_scores, m_bounds;
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
    margin_programs programs(keys, n, d);
    return !programs.selectable(j);
}

double unselectable_fraction(const double* keys, std::size_t n, std::size_t d) {
    check_shape(n, d);
    if (n < 2) return 0.0;
    margin_programs programs(keys, n, d);
    std::size_t inside = 0;
    for (std::size_t j = 0; j < n; ++j)
        if (!programs.selectable(j)) ++inside;
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

} // namespace nadyn
