#include "nadyn/paper_tables.hpp"

#include "nadyn/error.hpp"
#include "nadyn/observables.hpp"
#include "nadyn/reduced.hpp"
#include "nadyn/run.hpp"
#include "nadyn/run_scheduler.hpp"
#include "nadyn/weights.hpp"
#include "tables/seed_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>

namespace nadyn {

using tables::mean_of;
using tables::spread_of;

namespace {

std::string format(const char* pattern, double value) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, pattern, value);
    return buffer;
}

} // namespace

// ---- random weights ---------------------------------------------------------------------

random_table_settings quick_random_settings() {
    random_table_settings s;
    s.n = 64;
    s.d = 256;
    s.layers = 100;
    s.seeds = {1, 2};
    return s;
}

std::vector<layer_window> random_speed_windows(std::size_t layers) {
    const std::size_t tenth = std::max<std::size_t>(1, layers / 10);
    return {{0, std::min<std::size_t>(1, layers), "layer 1"},
            {0, std::min<std::size_t>(5, layers), "layers 1-5"},
            {0, tenth, "first 10% (layers 1-" + std::to_string(tenth) + ")"}};
}

random_run_result random_weights_run(scheme id, const random_table_settings& s, std::uint64_t seed,
                                     int threads) {
    run_config c;
    c.threads = threads;
    c.scheme_id = id;
    c.n = s.n;
    c.d = s.d;
    c.beta = s.beta > 0.0 ? s.beta : std::sqrt(double(s.d));
    c.r0 = s.r0;
    c.alpha = s.alpha;
    c.seed = seed;
    c.weights = weights_spec::parse("random-per-layer");
    c.integration = {integrator_kind::layers, double(s.layers) * s.h, s.h, 1e-8, 1e-10, 1};
    simulation run(c);
    const auto n = static_cast<Eigen::Index>(s.n), d = static_cast<Eigen::Index>(s.d);
    using row_major = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    std::vector<double> previous;
    Eigen::MatrixXd gram, previous_gram;
    std::vector<double> t, gap;
    random_run_result result;
    run.run([&](const state_type& x, double time, std::int64_t, const frame_observables& o) {
        const Eigen::Map<const row_major> tokens(x.data(), n, d);
        gram.noalias() = tokens * tokens.transpose();
        if (!previous.empty()) {
            double angle = 0.0;
            for (std::size_t k = 0; k < s.n; ++k) {
                double chord2 = 0.0;
                for (std::size_t a = 0; a < s.d; ++a) {
                    const double diff = x[k * s.d + a] - previous[k * s.d + a];
                    chord2 += diff * diff;
                }
                angle += 2.0 * std::asin(std::min(1.0, std::sqrt(chord2) / 2.0));
            }
            result.angle.push_back(angle / double(s.n));
            // Pairwise cosines do not change when one rotation moves every token.
            double change = 0.0;
            for (Eigen::Index k = 1; k < n; ++k)
                for (Eigen::Index l = 0; l < k; ++l)
                    change += std::abs(gram(k, l) - previous_gram(k, l));
            result.pair_change.push_back(change / (0.5 * double(n) * double(n - 1)));
        }
        previous.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(s.n * s.d));
        std::swap(gram, previous_gram);
        t.push_back(time);
        gap.push_back(o.gap);
        result.mean_cos.push_back(o.mean_cos);
    });
    for (const layer_window& w : random_speed_windows(s.layers)) {
        const double length = double(w.last - w.first);
        window_speed speed{};
        speed.gain = (result.mean_cos[w.last] - result.mean_cos[w.first]) / length;
        for (std::size_t i = w.first; i < w.last; ++i) {
            speed.pair_change += result.pair_change[i] / length;
            speed.angle += result.angle[i] / length;
        }
        result.windows.push_back(speed);
    }
    // Deep collapse: the gap over the last half of the layers, while above round-off. When
    // the gap reaches round-off earlier, the window is the half-length stretch ending there.
    const double half = t.back() / 2.0;
    double end = t.front();
    for (std::size_t i = 0; i < t.size(); ++i)
        if (gap[i] > 1e-24)
            end = t[i];
        else
            break;
    const double start = std::max(t.front(), std::min(half, end - half));
    const fit_window window{start, end, true};
    result.collapse = rank_laws(t, gap, window).front();
    result.final_mean_cos = result.mean_cos.back();
    return result;
}

namespace {

mean_spread over_seeds(const std::vector<double>& values) {
    return {mean_of(values), spread_of(values)};
}

// The paper's verdicts (its validation with random weights: d = 512, one head, beta = sqrt d).
struct paper_verdict {
    const char *early, *collapse;
};
const std::map<scheme, paper_verdict>& paper_random_verdicts() {
    static const std::map<scheme, paper_verdict> verdicts{{scheme::post_ln, {"moderate", "fast"}},
                                                          {scheme::pre_ln, {"slow", "slow"}},
                                                          {scheme::peri_ln, {"fast", "slow"}},
                                                          {scheme::ngpt, {"fast", "fast"}},
                                                          {scheme::mix_ln, {"moderate", "slow"}}};
    return verdicts;
}

std::string speed_word(double value, double median) {
    if (!(median > 0.0)) return value > 0.0 ? "fast" : "slow";
    const double ratio = value / median;
    return ratio > 1.5 ? "fast" : ratio < 1.0 / 1.5 ? "slow" : "moderate";
}

double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t m = values.size() / 2;
    return values.size() % 2 ? values[m] : 0.5 * (values[m - 1] + values[m]);
}

} // namespace

random_row random_weights_row(scheme id, const random_table_settings& s,
                              const std::vector<random_run_result>& runs) {
    random_row row{};
    row.id = id;
    const std::size_t windows = random_speed_windows(s.layers).size();
    for (std::size_t w = 0; w < windows; ++w) {
        std::vector<double> gain, pair, angle;
        for (const auto& r : runs) {
            gain.push_back(r.windows[w].gain);
            pair.push_back(r.windows[w].pair_change);
            angle.push_back(r.windows[w].angle);
        }
        row.gain.push_back(over_seeds(gain));
        row.pair_change.push_back(over_seeds(pair));
        row.angle.push_back(over_seeds(angle));
    }
    std::vector<double> final_cos;
    std::map<decay_law, std::vector<double>> by_law;
    for (const auto& r : runs) {
        final_cos.push_back(r.final_mean_cos);
        by_law[r.collapse.law].push_back(r.collapse.parameter);
    }
    row.final_mean_cos = over_seeds(final_cos);
    for (const auto& [law, values] : by_law)
        if (values.size() > row.collapse_votes) {
            row.collapse_votes = values.size();
            row.collapse_law = law;
            row.collapse_mean = mean_of(values);
            row.collapse_spread = spread_of(values);
        }
    const auto& paper = paper_random_verdicts();
    const auto it = paper.find(id);
    row.paper_early = it == paper.end() ? "-" : it->second.early;
    row.paper_collapse = it == paper.end() ? "-" : it->second.collapse;
    return row;
}

void assign_random_verdicts(std::vector<random_row>& rows) {
    if (rows.empty()) return;
    const std::size_t windows = rows.front().gain.size();
    std::vector<double> gain_median(windows), angle_median(windows);
    for (std::size_t w = 0; w < windows; ++w) {
        std::vector<double> gains, angles;
        for (const auto& row : rows) {
            gains.push_back(row.gain[w].mean);
            angles.push_back(row.angle[w].mean);
        }
        gain_median[w] = median_of(gains);
        angle_median[w] = median_of(angles);
    }
    for (auto& row : rows) {
        row.ours_early.clear();
        for (std::size_t w = 0; w < windows; ++w)
            row.ours_early.push_back(speed_word(row.gain[w].mean, gain_median[w]));
        row.ours_angle = speed_word(row.angle.back().mean, angle_median.back());
        if (row.collapse_mean <= 0.0)
            row.ours_collapse = "none";
        else
            row.ours_collapse = row.collapse_law == decay_law::exponential ? "fast" : "slow";
        if (row.paper_early == "-") {
            row.verdict = "n/a (not in the paper's table)";
            continue;
        }
        std::vector<std::string> agree, disagree;
        const char* window_names[] = {"layer 1", "layers 1-5", "first 10%"};
        for (std::size_t w = 0; w < windows && w < 3; ++w)
            (row.ours_early[w] == row.paper_early ? agree : disagree).push_back(window_names[w]);
        std::string early;
        if (disagree.empty())
            early = "early agrees in every window";
        else if (agree.empty())
            early = "early disagrees in every window";
        else {
            early = "early agrees over ";
            for (std::size_t i = 0; i < agree.size(); ++i)
                early += (i ? (i + 1 == agree.size() ? " and " : ", ") : "") + agree[i];
            early += " only";
        }
        row.verdict = early + "; collapse " +
                      (row.ours_collapse == row.paper_collapse ? "agrees" : "disagrees");
    }
}

std::vector<random_row> random_weights_table(const random_table_settings& s,
                                             const random_row_sink& on_row,
                                             const random_progress& progress) {
    std::vector<scheme> schemes;
    for (const auto& entry : scheme_table)
        if (entry.in_paper_tables) schemes.push_back(entry.id); // the paper's check has six
    const std::size_t seeds = s.seeds.size(), total = schemes.size() * seeds;
    std::vector<random_run_result> results(total);
    std::vector<bool> finished(total, false);
    std::vector<random_row> rows;
    std::mutex lock;
    std::size_t started = 0;
    // Run i is (scheme i / seeds, seed i % seeds). A scheme's row is reported once all its runs
    // and every earlier scheme's row are done, so rows arrive in order whatever the schedule.
    auto one = [&](std::size_t i, int threads) {
        {
            std::lock_guard<std::mutex> guard(lock);
            if (progress) progress(schemes[i / seeds], i % seeds, started);
            ++started;
        }
        random_run_result result =
            random_weights_run(schemes[i / seeds], s, s.seeds[i % seeds], threads);
        std::lock_guard<std::mutex> guard(lock);
        results[i] = std::move(result);
        finished[i] = true;
        while (rows.size() < schemes.size()) {
            const std::size_t first = rows.size() * seeds;
            if (!std::all_of(finished.begin() + std::ptrdiff_t(first),
                             finished.begin() + std::ptrdiff_t(first + seeds),
                             [](bool f) { return f; }))
                break;
            const std::vector<random_run_result> runs(results.begin() + std::ptrdiff_t(first),
                                                      results.begin() +
                                                          std::ptrdiff_t(first + seeds));
            rows.push_back(random_weights_row(schemes[rows.size()], s, runs));
            if (on_row) on_row(rows.back(), runs);
        }
    };
    schedule_runs(total, choose_jobs(total, s.n, s.d), one);
    assign_random_verdicts(rows);
    return rows;
}

// ---- formatting -------------------------------------------------------------------------

namespace {

std::string plus_minus(const mean_spread& v, const char* pattern = "%.3g") {
    return format(pattern, v.mean) + " ± " + format("%.2g", v.spread);
}

std::string collapse_text(const random_row& r, const random_table_settings& s) {
    return std::string(to_string(r.collapse_law)) + " " +
           (r.collapse_law == decay_law::exponential  ? "rate "
            : r.collapse_law == decay_law::polynomial ? "power "
                                                      : "coefficient ") +
           format("%.3g", r.collapse_mean) + " ± " + format("%.2g", r.collapse_spread) + " (" +
           std::to_string(r.collapse_votes) + "/" + std::to_string(s.seeds.size()) + " seeds)";
}

} // namespace

std::string random_table_header(const random_table_settings& s) {
    std::ostringstream out;
    const double beta = s.beta > 0.0 ? s.beta : std::sqrt(double(s.d));
    const auto windows = random_speed_windows(s.layers);
    out << "Random weights: discrete transformer (layers), n = " << s.n << ", d = " << s.d
        << ", one head, beta = " << format("%.4g", beta) << ", " << s.layers
        << " layers of step h = " << s.h
        << ", Gaussian Q, K, V (variance 1/d) drawn per layer, tokens uniform on the sphere, r0 = "
        << s.r0 << ", alpha = " << s.alpha << ", " << s.seeds.size()
        << " seeds (mean ± standard deviation over seeds).\n\n"
        << "Clustering speed, rotation-invariant: gain = rise of mean_cos per layer over the "
           "window; |Δcos| = mean over pairs of the change of their cosine per layer. The "
           "absolute angle (mean angle a token moves per layer) also counts the rotation of a "
           "whole cluster by each fresh V, so it is not a clustering speed.\n\n"
        << "| scheme | gain, layer 1 | gain, layers 1-5 | gain, " << windows[2].name
        << " | \\|Δcos\\|, layer 1 | \\|Δcos\\|, layers 1-5 | \\|Δcos\\|, first 10% | absolute "
           "angle, first 10% (rad/layer) | deep collapse of the gap (last half) | final mean_cos "
           "|\n"
        << "|---|---|---|---|---|---|---|---|---|---|\n";
    return out.str();
}

std::string random_measurement_row(const random_row& r, const random_table_settings& s) {
    std::ostringstream out;
    out << "| " << info(r.id).name;
    for (const auto& v : r.gain)
        out << " | " << plus_minus(v);
    for (const auto& v : r.pair_change)
        out << " | " << plus_minus(v);
    out << " | " << plus_minus(r.angle.back()) << " | " << collapse_text(r, s) << " | "
        << plus_minus(r.final_mean_cos, "%.4g") << " |\n";
    return out.str();
}

std::string random_verdict_table(const std::vector<random_row>& rows,
                                 const random_table_settings&) {
    std::ostringstream out;
    out << "\nVerdicts: fast / moderate / slow = gain above 1.5x, between, below 1/1.5x the "
           "median over the six schemes in that window (the absolute angle likewise); collapse "
           "fast = exponential law, slow = polynomial or stretched.\n\n"
        << "| scheme | ours: gain layer 1 / 1-5 / first 10% | ours: absolute angle | ours: "
           "collapse | paper: early / collapse | verdict |\n"
        << "|---|---|---|---|---|---|\n";
    for (const auto& r : rows) {
        out << "| " << info(r.id).name << " | ";
        for (std::size_t w = 0; w < r.ours_early.size(); ++w)
            out << (w ? " / " : "") << r.ours_early[w];
        out << " | " << r.ours_angle << " | " << r.ours_collapse << " | " << r.paper_early << " / "
            << r.paper_collapse << " | " << r.verdict << " |\n";
    }
    return out.str();
}

std::string random_table_markdown(const std::vector<random_row>& rows,
                                  const random_table_settings& s) {
    std::string text = random_table_header(s);
    for (const auto& r : rows)
        text += random_measurement_row(r, s);
    return text + random_verdict_table(rows, s);
}

std::string random_table_csv(const std::vector<random_row>& rows, const random_table_settings& s) {
    std::ostringstream out;
    const char* keys[] = {"layer1", "layers1_5", "first10pct"};
    out << "scheme";
    for (const char* what : {"gain", "pair_change"})
        for (const char* key : keys)
            out << ',' << what << '_' << key << ',' << what << '_' << key << "_spread";
    out << ",angle_first10pct,angle_first10pct_spread,collapse_law,collapse_parameter,"
           "collapse_spread,collapse_votes,final_mean_cos,final_mean_cos_spread,ours_gain_layer1,"
           "ours_gain_layers1_5,ours_gain_first10pct,ours_angle,ours_collapse,paper_early,"
           "paper_collapse,verdict\n";
    for (const auto& r : rows) {
        out << info(r.id).name;
        for (const auto* series : {&r.gain, &r.pair_change})
            for (const auto& v : *series)
                out << ',' << format("%.6g", v.mean) << ',' << format("%.3g", v.spread);
        out << ',' << format("%.6g", r.angle.back().mean) << ','
            << format("%.3g", r.angle.back().spread) << ',' << to_string(r.collapse_law) << ','
            << format("%.6g", r.collapse_mean) << ',' << format("%.3g", r.collapse_spread) << ','
            << r.collapse_votes << '/' << s.seeds.size() << ','
            << format("%.6g", r.final_mean_cos.mean) << ','
            << format("%.3g", r.final_mean_cos.spread);
        for (const auto& word : r.ours_early)
            out << ',' << word;
        out << ',' << r.ours_angle << ',' << r.ours_collapse << ',' << r.paper_early << ','
            << r.paper_collapse << ",\"" << r.verdict << "\"\n";
    }
    return out.str();
}

std::string
random_mean_cos_csv(const std::vector<std::pair<scheme, std::vector<random_run_result>>>& runs,
                    const random_table_settings& s) {
    std::ostringstream out;
    out << "scheme,seed,layer,mean_cos\n";
    for (const auto& [id, per_seed] : runs)
        for (std::size_t i = 0; i < per_seed.size() && i < s.seeds.size(); ++i)
            for (std::size_t layer = 0; layer < per_seed[i].mean_cos.size(); ++layer)
                out << info(id).name << ',' << s.seeds[i] << ',' << layer << ','
                    << format("%.17g", per_seed[i].mean_cos[layer]) << '\n';
    return out.str();
}

// ---- settings checks -----------------------------------------------------------------------

namespace {

void require(bool ok, const std::string& message) {
    if (!ok) throw input_error(message);
}

void require_magnitude_and_alpha(double r0, double alpha) {
    require(std::isfinite(r0) && r0 > 0, "r0 must be > 0");
    require(std::isfinite(alpha) && alpha > 0, "alpha must be > 0");
}

} // namespace

void validate(const random_table_settings& s) {
    require(s.n >= 2 && s.d >= 2 && s.layers >= 20,
            "random-n, random-d must be >= 2 and layers >= 20");
    require(!s.seeds.empty(), "at least one seed");
    require_magnitude_and_alpha(s.r0, s.alpha);
}

} // namespace nadyn
