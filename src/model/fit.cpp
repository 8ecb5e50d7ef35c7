#include "nadyn/model/fit.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/scheme_operations.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace nadyn {

std::string_view to_string(decay_law law) {
    switch (law) {
    case decay_law::exponential:
        return "exponential";
    case decay_law::polynomial:
        return "polynomial";
    case decay_law::stretched:
        return "stretched";
    }
    return "exponential";
}

std::string_view formula(decay_law law) {
    switch (law) {
    case decay_law::exponential:
        return "C e^{-a t}";
    case decay_law::polynomial:
        return "C / t^p";
    case decay_law::stretched:
        return "C e^{-c sqrt t} / sqrt t";
    }
    return "";
}

decay_law predicted_law(scheme s) {
    const scheme_operations& ops = operations(scheme_parameters{s});
    if (ops.terminal_law) return *ops.terminal_law;
    std::string why;
    if (!ops.why_no_terminal_law.empty()) why = ": " + std::string(ops.why_no_terminal_law);
    throw std::invalid_argument(std::string(ops.row->name) + " has no terminal decay law" + why);
}

double predicted_parameter(scheme s) {
    switch (predicted_law(s)) {
    case decay_law::exponential:
        return 2.0;
    case decay_law::polynomial:
        return 3.0;
    case decay_law::stretched:
        return 4.0;
    }
    return 0.0;
}

law_fit fit_law(decay_law law, const std::vector<double>& t, const std::vector<double>& v,
                double t_start, double t_end) {
    std::vector<double> xs, ys;
    for (std::size_t i = 0; i < t.size(); ++i) {
        if (t[i] < t_start || t[i] > t_end || !(v[i] > 0.0)) continue;
        double x = 0.0, y = std::log(v[i]);
        switch (law) {
        case decay_law::exponential:
            x = t[i];
            break;
        case decay_law::polynomial:
            x = std::log(t[i]);
            break;
        case decay_law::stretched:
            x = std::sqrt(t[i] + 1.0);
            y += std::log(x);
            break;
        }
        xs.push_back(x);
        ys.push_back(y);
    }
    law_fit fit;
    fit.law = law;
    fit.samples = xs.size();
    if (xs.size() < 3) throw input_error("too few samples in the fit window for a decay law");
    // Centred sums: the regression stays accurate when x is large (t ~ 1e5).
    double mx = 0.0, my = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        mx += xs[i];
        my += ys[i];
    }
    mx /= double(xs.size());
    my /= double(xs.size());
    double sxx = 0.0, sxy = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        sxx += (xs[i] - mx) * (xs[i] - mx);
        sxy += (xs[i] - mx) * (ys[i] - my);
    }
    const double slope = sxy / sxx;
    fit.parameter = -slope;
    fit.log_prefactor = my - slope * mx;
    double residual2 = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const double r = ys[i] - (fit.log_prefactor + slope * xs[i]);
        residual2 += r * r;
    }
    fit.rms_residual = std::sqrt(residual2 / double(xs.size()));
    return fit;
}

fit_window choose_window(const std::vector<double>& t, const std::vector<double>& v,
                         const std::vector<double>& gap, double v_floor, double gap_floor,
                         double near_cluster) {
    fit_window window;
    // End: the last sample of the leading run of samples above the floors.
    std::size_t last = t.size();
    for (std::size_t i = 0; i < t.size(); ++i) {
        if (v[i] > v_floor && gap[i] > gap_floor && std::isfinite(v[i]))
            last = i;
        else if (last != t.size())
            break;
    }
    if (last == t.size()) return window;
    window.end = t[last];
    // Start: near one cluster and past a twentieth of the end.
    std::size_t first = last;
    for (std::size_t i = 0; i <= last; ++i)
        if (gap[i] < near_cluster && t[i] >= window.end / 20.0) {
            first = i;
            break;
        }
    window.start = t[first];
    window.valid = last >= first + 10; // at least ten samples to fit and compare laws
    return window;
}

std::vector<law_fit> rank_laws(const std::vector<double>& t, const std::vector<double>& v,
                               const fit_window& window) {
    std::vector<law_fit> fits;
    for (decay_law law : decay_laws)
        fits.push_back(fit_law(law, t, v, window.start, window.end));
    std::stable_sort(fits.begin(), fits.end(), [](const law_fit& a, const law_fit& b) {
        return a.rms_residual < b.rms_residual;
    });
    return fits;
}

} // namespace nadyn
