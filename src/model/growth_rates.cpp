#include "nadyn/model/growth_rates.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/funk_hecke.hpp"
#include "nadyn/model/scheme_operations.hpp"

#include <cmath>
#include <string>

namespace nadyn {

namespace {

void check_arguments(double beta, std::size_t d) {
    // I_nu(beta) ~ e^beta / sqrt(2 pi beta) overflows a double past beta ~ 710.
    if (!(beta > 0.0 && beta <= 700.0))
        throw input_error("growth rates: beta must be in (0, 700], got " + std::to_string(beta));
    if (d < 2) throw input_error("growth rates: d must be at least 2, got " + std::to_string(d));
}

} // namespace

double funk_hecke_exp(std::size_t k, double beta, std::size_t d) {
    check_arguments(beta, d);
    const double nu = static_cast<double>(k) + static_cast<double>(d) / 2.0 - 1.0;
    const double half_d = static_cast<double>(d) / 2.0;
    return std::tgamma(half_d) * std::pow(2.0 / beta, half_d - 1.0) * std::cyl_bessel_i(nu, beta);
}

double growth_rate(std::size_t k, double beta, std::size_t d, attention_kind kind) {
    if (k == 0)
        throw input_error("growth rates: the mode k must be at least 1 (k = 0 is the mass)");
    const double eigenvalue = static_cast<double>(k) * static_cast<double>(k + d - 2);
    if (kind == attention_kind::softmax) {
        // w_k / w_0 by Miller's recurrence (funk_hecke.hpp): finite at any beta and d, where
        // I_nu(beta) itself underflows (d = 512: nu = 255) or overflows (beta > 700).
        if (!(beta > 0.0) || !std::isfinite(beta))
            throw input_error("growth rates: beta must be a finite number > 0, got " +
                              std::to_string(beta));
        if (d < 2)
            throw input_error("growth rates: d must be at least 2, got " + std::to_string(d));
        return eigenvalue * kernel_ratios(beta, d, k)[k] / beta;
    }
    const double rate = eigenvalue * funk_hecke_exp(k, beta, d) / beta;
    if (!std::isfinite(rate))
        throw input_error("growth rates: w_k underflows or overflows a double at beta = " +
                          std::to_string(beta) + ", d = " + std::to_string(d) +
                          " (unnormalised attention); softmax rates have no such limit");
    return rate;
}

double own_weight_factor(std::size_t n, double beta, std::size_t d, attention_kind kind) {
    if (n < 2)
        throw input_error("own weight factor: n must be at least 2 tokens, got " +
                          std::to_string(n));
    const double others = static_cast<double>(n - 1);
    if (kind != attention_kind::softmax) {
        check_arguments(beta, d);
        return others / static_cast<double>(n);
    }
    // e^beta / w_0 in logs: Gamma(d/2) and (2/beta)^{d/2-1} over- and underflow apart at
    // large d, their product with I_nu(beta) does not.
    check_arguments(beta, d);
    const double nu = static_cast<double>(d) / 2.0 - 1.0;
    const double log_w0 = std::lgamma(static_cast<double>(d) / 2.0) + nu * std::log(2.0 / beta) +
                          std::log(std::cyl_bessel_i(nu, beta));
    if (!std::isfinite(log_w0))
        throw input_error("own weight factor: w_0 is not a finite double at beta = " +
                          std::to_string(beta) + ", d = " + std::to_string(d));
    return others / (others + std::exp(beta - log_w0));
}

std::size_t fastest_mode(double beta, std::size_t d) {
    // lambda_k rises while k (k + d - 2) gains more than I_{k+nu} loses, then falls for good
    // (I_{k+1}/I_k decreases in k): the first k whose successor is not faster is the maximum.
    // The softmax rates (the unnormalised ones times w_0, the same argmax) stay finite.
    std::size_t k = 1;
    double current = growth_rate(1, beta, d, attention_kind::softmax);
    for (;;) {
        const double next = growth_rate(k + 1, beta, d, attention_kind::softmax);
        if (!(next > current)) return k;
        current = next;
        ++k;
    }
}

double uniform_alignment(double beta, std::size_t d, attention_kind kind) {
    if (kind == attention_kind::softmax) {
        (void)growth_rate(1, beta, d, kind); // the same checks
        return kernel_ratios(beta, d, 1)[1];
    }
    return funk_hecke_exp(1, beta, d);
}

double uniform_clock(const scheme_parameters& scheme, double t, double beta, std::size_t d,
                     attention_kind kind, double r0) {
    if (!(r0 > 0.0)) throw input_error("growth rates: r0 must be positive");
    const double a = uniform_alignment(beta, d, kind);
    const scheme_operations& ops = operations(scheme);
    if (ops.clock) return ops.clock(scheme, t, a, r0);
    std::string valid;
    for (const scheme_info& row : scheme_table)
        if (row.has_clock) valid += (valid.empty() ? "" : ", ") + std::string(row.name);
    std::string why;
    if (!ops.why_no_clock.empty()) why = " (" + std::string(ops.why_no_clock) + ")";
    throw input_error("growth rates: " + std::string(ops.row->name) +
                      " has no clock at the uniform state" + why + "; valid: " + valid);
}

} // namespace nadyn
