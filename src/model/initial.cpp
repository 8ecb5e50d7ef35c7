#include "nadyn/model/initial.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/start_density.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numbers>
#include <optional>
#include <stdexcept>

namespace nadyn {

namespace {

// The polar angle phi of a uniform point in a cap has density proportional to
// sin^{d-2}(phi) on [0, eps]: rejection from the uniform angle against the density's
// maximum, sin(min(eps, pi/2))^{d-2}. Acceptance is about 1/(d-1) for small caps.
double cap_polar_angle(random_source& source, double eps, std::size_t d) {
    const double peak = std::sin(std::min(eps, std::numbers::pi / 2));
    for (;;) {
        const double phi = eps * source.uniform();
        const double ratio = std::sin(phi) / peak;
        if (source.uniform() < std::pow(ratio, static_cast<double>(d - 2))) return phi;
    }
}

// Under layernorm: a Gaussian vector centred, then normalised, is uniform on S^{d-1} ∩ U
// (the standard Gaussian projected onto U is U's standard Gaussian).
void centred_gaussian_unit_vector(random_source& source, double* x, std::size_t d) {
    double norm2 = 0.0;
    do {
        double sum = 0.0;
        for (std::size_t a = 0; a < d; ++a) {
            x[a] = source.normal();
            sum += x[a];
        }
        const double mean = sum / static_cast<double>(d);
        norm2 = 0.0;
        for (std::size_t a = 0; a < d; ++a) {
            x[a] -= mean;
            norm2 += x[a] * x[a];
        }
    } while (norm2 == 0.0);
    const double inverse = 1.0 / std::sqrt(norm2);
    for (std::size_t a = 0; a < d; ++a)
        x[a] *= inverse;
}

// The point at polar angle phi from the unit pole in a uniform direction orthogonal to it:
// a unit vector from draw_unit (on the sphere, or on the centred sphere) minus its component
// along the pole, normalised (redrawn in the rare case it is the pole itself).
void cap_point(random_source& source, const double* pole, double phi, std::size_t d,
               void (*draw_unit)(random_source&, double*, std::size_t), double* tangent,
               double* point) {
    double norm2 = 0.0;
    do {
        draw_unit(source, tangent, d);
        double along = 0.0;
        for (std::size_t a = 0; a < d; ++a)
            along += tangent[a] * pole[a];
        norm2 = 0.0;
        for (std::size_t a = 0; a < d; ++a) {
            tangent[a] -= along * pole[a];
            norm2 += tangent[a] * tangent[a];
        }
    } while (norm2 < 1e-12);
    const double scale = std::sin(phi) / std::sqrt(norm2);
    for (std::size_t a = 0; a < d; ++a)
        point[a] = std::cos(phi) * pole[a] + scale * tangent[a];
}

using unit_draw = void (*)(random_source&, double*, std::size_t);

// The row divided by its norm (a cap point is a unit vector up to round-off).
void normalise(double* row, std::size_t d) {
    double norm2 = 0.0;
    for (std::size_t a = 0; a < d; ++a)
        norm2 += row[a] * row[a];
    const double inverse = 1.0 / std::sqrt(norm2);
    for (std::size_t a = 0; a < d; ++a)
        row[a] *= inverse;
}

// caps:K,EPS: the checks, then the centres +u_1, -u_1, +u_2, -u_2, ... (K of them) of an
// orthonormal frame drawn from the seed: Gram-Schmidt on unit vectors from draw_unit (on the
// sphere, or on the centred sphere, of dimension `dimension`), so that any two centres are 90
// or 180 degrees apart. caps:K,EPS,DELTA: K centres at pairwise angle DELTA, from u_0..u_{K-1}.
std::vector<double> cap_centres(const initial_spec& spec, std::size_t n, std::size_t d,
                                std::size_t dimension, random_source& source, unit_draw draw_unit) {
    const std::size_t caps = spec.caps;
    if (caps > n)
        throw input_error("init '" + spec.to_string() +
                          "' needs K <= n (a token in every cap), "
                          "got K = " +
                          std::to_string(caps) + ", n = " + std::to_string(n));
    if (caps > 2 * dimension)
        throw input_error("init '" + spec.to_string() +
                          "' needs K <= " + std::to_string(2 * dimension) +
                          " (the centres are +-u of an orthonormal frame of the " +
                          std::to_string(dimension) + "-dimensional space the tokens live in)");
    const bool spread = spec.separation > 0.0; // caps:K,EPS,DELTA
    if (spread && caps > dimension)
        throw input_error("init '" + spec.to_string() +
                          "' needs K <= " + std::to_string(dimension) +
                          " (the centres use K orthonormal vectors of the " +
                          std::to_string(dimension) + "-dimensional space the tokens live in)");
    const std::size_t frame = spread ? caps : (caps + 1) / 2;
    std::vector<double> u(frame * d), centres(caps * d);
    for (std::size_t m = 0; m < frame; ++m) {
        double* row = &u[m * d];
        double norm2 = 0.0;
        do {
            draw_unit(source, row, d);
            for (int pass = 0; pass < 2; ++pass) // twice: orthogonal to round-off
                for (std::size_t l = 0; l < m; ++l) {
                    double along = 0.0;
                    for (std::size_t a = 0; a < d; ++a)
                        along += row[a] * u[l * d + a];
                    for (std::size_t a = 0; a < d; ++a)
                        row[a] -= along * u[l * d + a];
                }
            norm2 = 0.0;
            for (std::size_t a = 0; a < d; ++a)
                norm2 += row[a] * row[a];
        } while (norm2 < 1e-6); // a draw almost in the span of the others: draw again
        const double inverse = 1.0 / std::sqrt(norm2);
        for (std::size_t a = 0; a < d; ++a)
            row[a] *= inverse;
    }
    if (!spread) {
        for (std::size_t c = 0; c < caps; ++c)
            for (std::size_t a = 0; a < d; ++a)
                centres[c * d + a] = (c % 2 == 0 ? 1.0 : -1.0) * u[(c / 2) * d + a];
        return centres;
    }
    // Equal pairwise angles: the vertices e_c - (1, ..., 1)/K of the regular simplex of R^K
    // (pairwise cosine -1/(K-1)) written in the Helmert basis h_m of the hyperplane they span,
    // h_m = (1, ..., 1, -m, 0, ...) / sqrt(m (m+1)), m = 1..K-1, carried onto u_1..u_{K-1}:
    // s_c = sum_m h_m[c] u_m / sqrt((K-1)/K). Tilting towards u_0 by t raises the cosine to
    // t - (1 - t) / (K-1) = cos DELTA. One cap: its centre is u_0 (t = 1).
    const double k = static_cast<double>(caps);
    // Clamped: the parser admits cos DELTA down to -1/(K-1) less round-off.
    const double t =
        caps == 1 ? 1.0 : std::clamp(((k - 1.0) * std::cos(spec.separation) + 1.0) / k, 0.0, 1.0);
    const double vertex = caps == 1 ? 0.0 : std::sqrt(k / (k - 1.0)); // 1 / |e_c - 1/K|
    for (std::size_t c = 0; c < caps; ++c) {
        double* centre = &centres[c * d];
        for (std::size_t a = 0; a < d; ++a)
            centre[a] = std::sqrt(t) * u[a];
        for (std::size_t m = std::max<std::size_t>(c, 1); m < caps; ++m) {
            const double mm = static_cast<double>(m);
            const double h = (c < m ? 1.0 : -mm) / std::sqrt(mm * (mm + 1.0));
            for (std::size_t a = 0; a < d; ++a)
                centre[a] += std::sqrt(1.0 - t) * vertex * h * u[m * d + a];
        }
    }
    return centres;
}

// Token k uniform in the cap around centre k mod K (polar angles of the sphere of dimension
// `dimension`).
void caps_start(const initial_spec& spec, std::size_t n, std::size_t d, std::size_t dimension,
                random_source& source, unit_draw draw_unit, std::vector<double>& theta) {
    const std::vector<double> centres = cap_centres(spec, n, d, dimension, source, draw_unit);
    std::vector<double> tangent(d);
    for (std::size_t k = 0; k < n; ++k) {
        const double phi = cap_polar_angle(source, spec.cap_radius, dimension);
        double* row = &theta[k * d];
        cap_point(source, &centres[(k % spec.caps) * d], phi, d, draw_unit, tangent.data(), row);
        normalise(row, d);
    }
}

// The layernorm starts (docs/model.md §10), on S^{d-1} ∩ U; `file` rows are read by the
// caller and centred here.
void centred_start(const initial_spec& spec, std::size_t n, std::size_t d, random_source& source,
                   std::vector<double>& theta) {
    switch (spec.kind) {
    case initial_kind::uniform:
        for (std::size_t k = 0; k < n; ++k)
            centred_gaussian_unit_vector(source, &theta[k * d], d);
        break;
    case initial_kind::orthogonal:
        if (n + 1 > d)
            throw input_error("init 'orthogonal' with --norm layernorm needs n <= d - 1 (the "
                              "Helmert basis of the hyperplane sum_c x_c = 0), got n = " +
                              std::to_string(n) + ", d = " + std::to_string(d));
        // h_m = (1, ..., 1, -m, 0, ..., 0) / sqrt(m (m+1)), m ones, for token k = m - 1.
        for (std::size_t k = 0; k < n; ++k) {
            const double m = static_cast<double>(k + 1);
            const double scale = 1.0 / std::sqrt(m * (m + 1.0));
            for (std::size_t a = 0; a <= k; ++a)
                theta[k * d + a] = scale;
            theta[k * d + k + 1] = -m * scale;
        }
        break;
    case initial_kind::cap: {
        // The cap of the (d-2)-sphere S^{d-1} ∩ U: a pole in U, tangents in U orthogonal to
        // it, the polar angle with the density sin^{d'-2} of the sphere of dimension d' = d-1.
        std::vector<double> pole(d), tangent(d);
        centred_gaussian_unit_vector(source, pole.data(), d);
        for (std::size_t k = 0; k < n; ++k) {
            const double phi = cap_polar_angle(source, spec.cap_radius, d - 1);
            cap_point(source, pole.data(), phi, d, centred_gaussian_unit_vector, tangent.data(),
                      &theta[k * d]);
        }
        break;
    }
    case initial_kind::caps:
        caps_start(spec, n, d, d - 1, source, centred_gaussian_unit_vector, theta);
        break;
    case initial_kind::perturbed: // refused by make_initial
    case initial_kind::vonmises:
    case initial_kind::noise:
    case initial_kind::file:
        break;
    }
    // Round-off off U and off the unit norm, removed as after every step.
    project_to_centred_sphere(theta.data(), n, d, 1);
}

// A row of an init file under layernorm: scaled by its largest entry (so that the squares
// neither overflow nor underflow), centred, normalised; a constant row has no direction in U.
void centre_file_row(const double* row, double* direction, std::size_t d, std::size_t k,
                     const std::string& path) {
    double largest = 0.0;
    for (std::size_t a = 0; a < d; ++a)
        largest = std::max(largest, std::abs(row[a]));
    if (!std::isfinite(largest))
        throw input_error("row " + std::to_string(k) + " of 'theta0' in init file '" + path +
                          "' is not finite");
    double sum = 0.0;
    for (std::size_t a = 0; a < d; ++a) {
        direction[a] = largest > 0.0 ? row[a] / largest : 0.0;
        sum += direction[a];
    }
    const double mean = sum / static_cast<double>(d);
    double spread = 0.0;
    for (std::size_t a = 0; a < d; ++a) {
        direction[a] -= mean;
        spread = std::max(spread, std::abs(direction[a]));
    }
    // Entries of at most 1 after the scaling: a centred row at round-off level is constant.
    if (!(spread > 1e-14))
        throw input_error("row " + std::to_string(k) + " of 'theta0' in init file '" + path +
                          "' is constant; with --norm layernorm every token needs a direction "
                          "off (1, ..., 1), which centring removes");
}

std::string number_text(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

} // namespace

std::string layernorm_density_start_refusal(const initial_spec& spec) {
    return "init '" + spec.to_string() +
           "' is a density on S^{d-1} about e_d, which the hyperplane sum_c x_c = 0 of norm "
           "layernorm does not contain; use uniform, cap or caps there";
}

void check_init_theta0_shape(const std::string& path, std::size_t n, std::size_t d,
                             std::size_t rows, std::size_t cols) {
    if (rows != n || cols != d)
        throw input_error("dataset 'theta0' in init file '" + path + "' must be " +
                          std::to_string(n) + " x " + std::to_string(d) + " (n x d), found " +
                          std::to_string(rows) + " x " + std::to_string(cols));
}

void check_init_r0_shape(const std::string& path, std::size_t n, std::size_t rows,
                         std::size_t cols) {
    // One of them 1 first, so that the product cannot wrap around.
    if ((cols != 1 && rows != 1) || rows * cols != n)
        throw input_error("dataset 'r0' in init file '" + path +
                          "' must have n = " + std::to_string(n) + " entries");
}

namespace {

// A cap's angular radius: 0 < EPS <= pi (radians); nullopt when `value` is not one.
std::optional<double> cap_radius_of(const std::string& value) {
    std::size_t used = 0;
    double eps = 0.0;
    try {
        eps = std::stod(value, &used);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    if (used != value.size() || value.empty() || !std::isfinite(eps) || eps <= 0.0 ||
        eps > std::numbers::pi)
        return std::nullopt;
    return eps;
}

// A finite number written as the whole text (no blanks); nullopt otherwise.
std::optional<double> number_of(const std::string& value) {
    if (value.empty() || std::isspace(static_cast<unsigned char>(value.front())))
        return std::nullopt;
    std::size_t used = 0;
    double number = 0.0;
    try {
        number = std::stod(value, &used);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    if (used != value.size() || !std::isfinite(number)) return std::nullopt;
    return number;
}

// A whole number from 1 to 999999 (six digits at most, so it cannot overflow).
std::optional<std::size_t> count_of(const std::string& value) {
    const bool digits =
        !value.empty() && value.size() <= 6 &&
        std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoul(value) < 1) return std::nullopt;
    return std::stoul(value);
}

// NAME:COUNT,NUMBER (perturbed:K,EPS, vonmises:Q,KAPPA) with `valid` the number's range;
// nullopt when the text is not of that form.
std::optional<initial_spec> density_start_of(initial_kind kind, const std::string& value,
                                             bool (*valid)(double)) {
    const auto comma = value.find(',');
    if (comma == std::string::npos) return std::nullopt;
    const auto count = count_of(value.substr(0, comma));
    const auto number = number_of(value.substr(comma + 1));
    if (!count || !number || !valid(*number)) return std::nullopt;
    initial_spec spec;
    spec.kind = kind;
    spec.degree = *count;
    spec.amplitude = *number;
    return spec;
}

initial_spec spec_of(initial_kind kind, double cap_radius = 0.0, std::size_t caps = 0,
                     std::string path = {}, double separation = 0.0) {
    initial_spec spec;
    spec.kind = kind;
    spec.cap_radius = cap_radius;
    spec.caps = caps;
    spec.separation = separation;
    spec.path = std::move(path);
    return spec;
}

} // namespace

initial_spec initial_spec::parse(const std::string& text) {
    if (text == "uniform") return spec_of(initial_kind::uniform);
    if (text == "orthogonal") return spec_of(initial_kind::orthogonal);
    if (text.rfind("cap:", 0) == 0) {
        const auto eps = cap_radius_of(text.substr(4));
        if (!eps)
            throw input_error("invalid cap radius in '" + text +
                              "'; expected cap:EPS with 0 < EPS <= pi (radians)");
        return spec_of(initial_kind::cap, *eps);
    }
    if (text.rfind("caps:", 0) == 0) {
        const std::string value = text.substr(5);
        const auto comma = value.find(',');
        const std::string count = value.substr(0, comma);
        const auto second =
            comma == std::string::npos ? std::string::npos : value.find(',', comma + 1);
        const auto eps =
            comma == std::string::npos
                ? std::nullopt
                : cap_radius_of(value.substr(
                      comma + 1, second == std::string::npos ? second : second - comma - 1));
        const bool digits =
            !count.empty() && count.size() <= 6 &&
            std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || std::stoul(count) < 1 || !eps)
            throw input_error("invalid caps in '" + text +
                              "'; expected caps:K,EPS or caps:K,EPS,DELTA with K >= 1 caps, "
                              "0 < EPS <= pi and 0 < DELTA <= pi (radians)");
        if (second == std::string::npos)
            return spec_of(initial_kind::caps, *eps, std::stoul(count));
        // The centres' angle: in (0, pi] like a radius, and reachable by K equiangular unit
        // vectors, which needs cos DELTA >= -1/(K-1).
        const auto delta = cap_radius_of(value.substr(second + 1));
        const double k = static_cast<double>(std::stoul(count));
        if (!delta || (k > 1.0 && std::cos(*delta) < -1.0 / (k - 1.0) - 1e-12))
            throw input_error("invalid caps in '" + text +
                              "'; expected caps:K,EPS,DELTA with 0 < DELTA <= pi and cos DELTA "
                              ">= -1/(K-1) (K centres at equal pairwise angles DELTA)");
        return spec_of(initial_kind::caps, *eps, std::stoul(count), {}, *delta);
    }
    if (text.rfind("perturbed:", 0) == 0) {
        // |EPS| <= 1 keeps 1 + EPS G_K >= 0, since |G_K| <= 1 on [-1, 1].
        const auto spec = density_start_of(initial_kind::perturbed, text.substr(10),
                                           [](double eps) { return std::abs(eps) <= 1.0; });
        if (!spec)
            throw input_error("invalid perturbed start in '" + text +
                              "'; expected perturbed:K,EPS with a whole number K >= 1 and "
                              "-1 <= EPS <= 1 (the density 1 + EPS G_K(x_d) must stay >= 0)");
        return *spec;
    }
    if (text.rfind("vonmises:", 0) == 0) {
        const auto spec = density_start_of(initial_kind::vonmises, text.substr(9),
                                           [](double kappa) { return kappa >= 0.0; });
        if (!spec)
            throw input_error("invalid vonmises start in '" + text +
                              "'; expected vonmises:Q,KAPPA with a whole number Q >= 1 of "
                              "centres and a finite concentration KAPPA >= 0");
        return *spec;
    }
    if (text.rfind("noise:", 0) == 0) {
        // noise:EPS or noise:EPS,KMAX (the circle's white noise, start_density.hpp).
        const std::string value = text.substr(6);
        const auto comma = value.find(',');
        const auto eps = number_of(value.substr(0, comma));
        const auto kmax = comma == std::string::npos
                              ? std::optional<std::size_t>(default_noise_modes)
                              : count_of(value.substr(comma + 1));
        if (!eps || !(*eps >= 0.0) || !kmax)
            throw input_error("invalid noise start in '" + text +
                              "'; expected noise:EPS[,KMAX] with EPS >= 0 and a whole number "
                              "KMAX >= 1 (the circle only)");
        initial_spec spec;
        spec.kind = initial_kind::noise;
        spec.amplitude = *eps;
        spec.degree = *kmax;
        return spec;
    }
    if (text.rfind("file:", 0) == 0 && text.size() > 5)
        return spec_of(initial_kind::file, 0.0, 0, text.substr(5));
    throw input_error("unknown init '" + text +
                      "'; valid choices: uniform, orthogonal, cap:EPS, caps:K,EPS[,DELTA], "
                      "perturbed:K,EPS, vonmises:Q,KAPPA, noise:EPS[,KMAX], file:PATH");
}

std::string initial_spec::to_string() const {
    switch (kind) {
    case initial_kind::uniform:
        return "uniform";
    case initial_kind::orthogonal:
        return "orthogonal";
    case initial_kind::cap:
        return "cap:" + number_text(cap_radius);
    case initial_kind::caps: {
        // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "," + string.
        std::string text = "caps:" + std::to_string(caps) + "," + number_text(cap_radius);
        if (separation > 0.0) text.append(",").append(number_text(separation));
        return text;
    }
    case initial_kind::perturbed:
    case initial_kind::vonmises: {
        std::string text = kind == initial_kind::perturbed ? "perturbed:" : "vonmises:";
        text.append(std::to_string(degree)).append(",").append(number_text(amplitude));
        return text;
    }
    case initial_kind::noise: {
        std::string text = "noise:";
        text.append(number_text(amplitude)).append(",").append(std::to_string(degree));
        return text;
    }
    case initial_kind::file:
        return "file:" + path;
    }
    return "uniform";
}

initial_state make_initial(const initial_spec& spec, std::size_t n, std::size_t d,
                           std::uint64_t seed, double r0, norm_kind norm) {
    initial_state state;
    state.theta.assign(n * d, 0.0);
    state.r.assign(n, r0);
    random_source source(stream_seed(seed, initial_stream));
    const bool centred = norm == norm_kind::layernorm;
    if (centred && d < 3)
        throw input_error("norm 'layernorm' needs d >= 3 (the directions live on the "
                          "(d-2)-sphere), got d = " +
                          std::to_string(d));
    const bool density_start = spec.kind == initial_kind::perturbed ||
                               spec.kind == initial_kind::vonmises ||
                               spec.kind == initial_kind::noise;
    if (density_start && centred) throw input_error(layernorm_density_start_refusal(spec));
    if (density_start && d < 2)
        throw input_error("init '" + spec.to_string() +
                          "' needs d >= 2, got d = " + std::to_string(d));
    if (centred && spec.kind != initial_kind::file) {
        centred_start(spec, n, d, source, state.theta);
        return state;
    }
    switch (spec.kind) {
    case initial_kind::uniform:
        for (std::size_t k = 0; k < n; ++k)
            uniform_unit_vector(source, &state.theta[k * d], d);
        break;
    case initial_kind::orthogonal:
        if (n > d)
            throw input_error("init 'orthogonal' needs n <= d (theta_k = e_k), got n = " +
                              std::to_string(n) + ", d = " + std::to_string(d));
        for (std::size_t k = 0; k < n; ++k)
            state.theta[k * d + k] = 1.0;
        break;
    case initial_kind::cap: {
        std::vector<double> pole(d), tangent(d);
        uniform_unit_vector(source, pole.data(), d);
        for (std::size_t k = 0; k < n; ++k) {
            const double phi = cap_polar_angle(source, spec.cap_radius, d);
            double* row = &state.theta[k * d];
            cap_point(source, pole.data(), phi, d, uniform_unit_vector, tangent.data(), row);
            normalise(row, d);
        }
        break;
    }
    case initial_kind::caps:
        caps_start(spec, n, d, d, source, uniform_unit_vector, state.theta);
        break;
    // The draws are i.i.d. from one stream, token after token, so a run is reproducible from
    // its seed (and a larger n extends a smaller one's tokens).
    case initial_kind::perturbed:
        for (std::size_t k = 0; k < n; ++k)
            draw_perturbed(source, spec.degree, spec.amplitude, d, &state.theta[k * d]);
        break;
    case initial_kind::vonmises:
        for (std::size_t k = 0; k < n; ++k)
            draw_vonmises(source, spec.degree, spec.amplitude, d, &state.theta[k * d]);
        break;
    case initial_kind::noise: {
        if (d != 2)
            throw input_error("init '" + spec.to_string() +
                              "': the noise start of particles is the circle's (d = 2), got d = " +
                              std::to_string(d) + "; on S^{d-1} take perturbed or vonmises");
        // The coefficients first, from the start's stream, as the density solver draws them;
        // then the tokens by rejection from the uniform angle.
        const std::vector<double> coefficients = draw_circle_noise(source, spec.degree);
        if (circle_noise_minimum(coefficients, spec.amplitude) < 0.0)
            throw input_error("init '" + spec.to_string() +
                              "' gives a negative density; take a smaller EPS or KMAX");
        const double bound = circle_noise_bound(coefficients, spec.amplitude);
        for (std::size_t k = 0; k < n; ++k) {
            for (;;) {
                const double theta = 2.0 * std::numbers::pi * source.uniform();
                if (source.uniform() * bound <=
                    circle_noise_density(coefficients, spec.amplitude, theta)) {
                    state.theta[2 * k] = std::cos(theta);
                    state.theta[2 * k + 1] = std::sin(theta);
                    break;
                }
            }
        }
        break;
    }
    case initial_kind::file: {
        if (!spec.contents)
            throw std::logic_error("init '" + spec.to_string() +
                                   "' is not read: read_input_files (nadyn/input_files.hpp) reads "
                                   "the file into the spec");
        const initial_file_contents& file = *spec.contents;
        check_init_theta0_shape(spec.path, n, d, file.rows, file.cols);
        for (std::size_t k = 0; k < n; ++k) {
            const double* row = &file.theta0[k * d];
            double* direction = &state.theta[k * d];
            if (centred) {
                centre_file_row(row, direction, d, k, spec.path);
                continue;
            }
            double norm2 = 0.0;
            for (std::size_t a = 0; a < d; ++a)
                norm2 += row[a] * row[a];
            if (!std::isnormal(norm2)) {
                // The squares overflowed (entries beyond ~1e154) or underflowed (below
                // ~1e-154): divide by the largest entry first, then normalise.
                double largest = 0.0;
                for (std::size_t a = 0; a < d; ++a)
                    largest = std::max(largest, std::abs(row[a]));
                if (!(largest > 0.0))
                    throw input_error("row " + std::to_string(k) + " of 'theta0' in init file '" +
                                      spec.path + "' is zero; every token needs a direction");
                norm2 = 0.0;
                for (std::size_t a = 0; a < d; ++a) {
                    direction[a] = row[a] / largest;
                    norm2 += direction[a] * direction[a];
                }
                row = direction;
            }
            const double inverse = 1.0 / std::sqrt(norm2);
            for (std::size_t a = 0; a < d; ++a)
                direction[a] = row[a] * inverse;
        }
        if (centred) project_to_centred_sphere(state.theta.data(), n, d, 1);
        if (!file.r0.empty()) {
            check_init_r0_shape(spec.path, n, file.r0.size(), 1);
            for (std::size_t k = 0; k < n; ++k) {
                if (!(file.r0[k] > 0.0))
                    throw input_error("dataset 'r0' in init file '" + spec.path +
                                      "' must be positive (entry " + std::to_string(k) + ")");
                state.r[k] = file.r0[k];
            }
        }
        break;
    }
    }
    return state;
}

} // namespace nadyn
