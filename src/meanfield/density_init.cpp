#include "nadyn/meanfield/density_init.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/meanfield/geometry.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/start_density.hpp"

#include <algorithm>
#include <cmath>

namespace nadyn::meanfield {

namespace {

constexpr const char* forms = "uniform, perturbed:K,EPS, vonmises:Q,KAPPA, noise:EPS[,KMAX]";

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        const std::size_t end = text.find(separator, start);
        parts.push_back(text.substr(start, end - start));
        if (end == std::string::npos) return parts;
        start = end + 1;
    }
}

std::size_t parse_count(const std::string& text, const std::string& what) {
    const std::int64_t value = parse_integer(text, what);
    if (value < 0) throw input_error(what + " must be >= 0, got " + text);
    return static_cast<std::size_t>(value);
}

} // namespace

density_init density_init::parse(const std::string& text) {
    const std::size_t colon = text.find(':');
    const std::string name = text.substr(0, colon);
    const std::vector<std::string> args = colon == std::string::npos
                                              ? std::vector<std::string>{}
                                              : split(text.substr(colon + 1), ',');
    density_init init;
    auto bad = [&](const std::string& why) {
        return input_error("--init " + text + ": " + why + " (valid: " + forms + ")");
    };
    if (name == "uniform") {
        if (!args.empty()) throw bad("uniform takes no arguments");
        init.family = kind::uniform;
        init.amplitude = 0.0;
    } else if (name == "perturbed") {
        if (args.size() != 2) throw bad("perturbed needs K,EPS");
        init.family = kind::perturbed;
        init.degree = parse_count(args[0], "perturbed's K");
        init.amplitude = parse_number(args[1], "perturbed's EPS");
        if (init.degree < 1) throw bad("K must be >= 1");
        if (!(std::abs(init.amplitude) <= 1.0))
            throw bad("EPS must be in [-1, 1] for the density to stay >= 0");
    } else if (name == "vonmises") {
        if (args.size() != 2) throw bad("vonmises needs Q,KAPPA");
        init.family = kind::vonmises;
        init.degree = parse_count(args[0], "vonmises's Q");
        init.amplitude = parse_number(args[1], "vonmises's KAPPA");
        if (init.degree < 1) throw bad("Q must be >= 1");
        if (!(init.amplitude >= 0.0) || !std::isfinite(init.amplitude))
            throw bad("KAPPA must be a finite number >= 0");
    } else if (name == "noise") {
        if (args.empty() || args.size() > 2) throw bad("noise needs EPS[,KMAX]");
        init.family = kind::noise;
        init.amplitude = parse_number(args[0], "noise's EPS");
        if (!(init.amplitude >= 0.0) || !std::isfinite(init.amplitude))
            throw bad("EPS must be a finite number >= 0");
        if (args.size() == 2) {
            init.degree = parse_count(args[1], "noise's KMAX");
            if (init.degree < 1) throw bad("KMAX must be >= 1");
        }
    } else {
        throw input_error("--init: unknown density '" + text + "' (valid: " + forms + ")");
    }
    return init;
}

std::string density_init::to_string() const {
    auto number = [](double v) {
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%.17g", v);
        return std::string(buffer);
    };
    switch (family) {
    case kind::uniform:
        return "uniform";
    case kind::perturbed:
        return "perturbed:" + std::to_string(degree) + "," + number(amplitude);
    case kind::vonmises:
        return "vonmises:" + std::to_string(degree) + "," + number(amplitude);
    case kind::noise: {
        std::string text = "noise:";
        text += number(amplitude);
        if (degree) {
            text += ',';
            text += std::to_string(degree);
        }
        return text;
    }
    }
    return "uniform";
}

// The formulas are the model layer's (start_density.hpp), which the particles of `nadyn
// simulate` sample: the two pictures of a start are the same function by construction.
double density_value(const density_init& init, const double* x, std::size_t d) {
    switch (init.family) {
    case density_init::kind::uniform:
    case density_init::kind::noise:
        return 1.0;
    case density_init::kind::perturbed:
        return perturbed_density(init.degree, init.amplitude, x, d);
    case density_init::kind::vonmises:
        // Unnormalised: make_density normalises by the grid's quadrature.
        return vonmises_density(init.degree, init.amplitude, x, d);
    }
    return 1.0;
}

double density_bound(const density_init& init, std::size_t) {
    switch (init.family) {
    case density_init::kind::perturbed:
        return perturbed_density_bound(init.amplitude);
    case density_init::kind::vonmises:
        return vonmises_density_bound(init.degree);
    default:
        return 1.0;
    }
}

std::vector<double> make_density(const density_init& init, density_geometry& geometry,
                                 std::uint64_t seed) {
    const std::size_t d = geometry.dimension(), n = geometry.size();
    const std::size_t top = geometry.max_degree();
    const std::string grid = geometry.name() == "circle" ? "--points" : "--degree";
    std::vector<double> rho(n, 1.0);
    switch (init.family) {
    case density_init::kind::uniform:
        break;
    case density_init::kind::perturbed:
        if (3 * init.degree > 2 * top)
            throw input_error("--init " + init.to_string() + ": degree " +
                              std::to_string(init.degree) + " needs a grid of degree at least " +
                              std::to_string((3 * init.degree + 1) / 2) + " (this one has " +
                              std::to_string(top) + "; raise " + grid + ")");
        for (std::size_t i = 0; i < n; ++i)
            rho[i] = density_value(init, &geometry.points()[i * d], d);
        break;
    case density_init::kind::vonmises: {
        if (geometry.name() == "zonal" && init.degree > 2)
            throw input_error("--init " + init.to_string() +
                              ": a zonal density has at most 2 von Mises centres (the poles)");
        for (std::size_t i = 0; i < n; ++i)
            rho[i] = density_value(init, &geometry.points()[i * d], d);
        double mass = 0.0;
        for (std::size_t i = 0; i < n; ++i)
            mass += geometry.weights()[i] * rho[i];
        for (double& v : rho)
            v /= mass;
        break;
    }
    case density_init::kind::noise: {
        const std::size_t kmax =
            init.degree ? init.degree : std::clamp<std::size_t>(top / 2, 1, default_noise_degree);
        if (3 * kmax > 2 * top)
            throw input_error("--init " + init.to_string() + ": KMAX " + std::to_string(kmax) +
                              " needs a grid of degree at least " +
                              std::to_string((3 * kmax + 1) / 2) + " (this one has " +
                              std::to_string(top) + "; raise " + grid + ")");
        geometry.add_white_noise(seed, init.amplitude, kmax, rho.data());
        break;
    }
    }
    const double lowest = *std::min_element(rho.begin(), rho.end());
    if (!(lowest >= 0.0))
        throw input_error("--init " + init.to_string() + " gives a negative density (" +
                          std::to_string(lowest) + " at a node): take a smaller amplitude" +
                          (init.family == density_init::kind::noise ? " or KMAX" : ""));
    return rho;
}

} // namespace nadyn::meanfield
