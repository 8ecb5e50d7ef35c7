#include "nadyn/noise_table.hpp"

#include "nadyn/error.hpp"
#include "nadyn/run.hpp"

#include <cmath>
#include <cstdio>

namespace nadyn {

namespace {

double mean_of(const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v)
        s += x;
    return s / double(v.size());
}

// Sample standard deviation (0 for one seed).
double spread_of(const std::vector<double>& v) {
    if (v.size() < 2) return 0.0;
    const double m = mean_of(v);
    double s = 0.0;
    for (double x : v)
        s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size() - 1));
}

} // namespace

std::vector<noise_row> noise_table(const noise_table_settings& settings) {
    std::vector<noise_row> rows;
    for (const bool qkv_norm : {false, true})
        for (const double beta : settings.betas)
            for (const double sigma : settings.sigmas) {
                std::vector<double> flips, entropy;
                for (const std::uint64_t seed : settings.seeds) {
                    run_config c;
                    c.scheme_id = scheme::pre_ln;
                    c.n = settings.n;
                    c.d = settings.d;
                    c.beta = beta;
                    c.seed = seed;
                    c.weights = weights_spec::parse("gaussian");
                    c.qkv_norm = qkv_norm;
                    c.norm_noise = sigma;
                    c.integration = {integrator_kind::rk4, settings.T, settings.dt, 1e-8, 1e-10, 1};
                    c.integration.layer_time = settings.layer_time;
                    c.threads = 1;
                    double flip_sum = 0.0, entropy_sum = 0.0;
                    std::size_t frames = 0;
                    simulation(c).run(
                        [&](const state_type&, double, std::int64_t, const frame_observables& o) {
                            flip_sum += o.argmax_flips;
                            entropy_sum += o.attention_entropy;
                            ++frames;
                        });
                    flips.push_back(flip_sum / double(frames));
                    entropy.push_back(entropy_sum / double(frames));
                }
                rows.push_back({qkv_norm, beta, sigma, settings.seeds.size(), mean_of(flips),
                                spread_of(flips), mean_of(entropy), spread_of(entropy)});
            }
    return rows;
}

std::string noise_table_csv(const std::vector<noise_row>& rows) {
    std::string out = "norm,beta,sigma,seeds,flips_mean,flips_spread,entropy_mean,entropy_spread\n";
    for (const auto& r : rows) {
        char line[256];
        std::snprintf(line, sizeof line, "%s,%g,%g,%zu,%.6f,%.6f,%.6f,%.6f\n",
                      r.qkv_norm ? "qkv-norm" : "pre-ln", r.beta, r.sigma, r.seeds, r.flips_mean,
                      r.flips_spread, r.entropy_mean, r.entropy_spread);
        out += line;
    }
    return out;
}

std::string noise_table_markdown(const std::vector<noise_row>& rows,
                                 const noise_table_settings& settings) {
    char head[1024];
    std::snprintf(head, sizeof head,
                  "Noise on the norms of q, k and v (factors 1 + sigma xi, redrawn every %g of "
                  "depth): fraction of tokens whose most-attended key differs from the "
                  "noiseless attention at the same state (argmax_flips), and the attention's "
                  "normalised entropy (0: one key, 1: uniform), each averaged over the frames of "
                  "a pre-ln run (rk4, T = %g, dt = %g, n = %zu, d = %zu, gaussian weights, one "
                  "head), mean ± standard deviation over %zu seeds. 'pre-ln': q = Q theta, "
                  "k = K theta, v = V theta; 'qkv-norm': the same normalised per token.\n\n",
                  settings.layer_time, settings.T, settings.dt, settings.n, settings.d,
                  settings.seeds.size());
    std::string out = head;
    out += "| norm | beta | sigma | argmax_flips | attention_entropy |\n"
           "|------|------|-------|--------------|-------------------|\n";
    for (const auto& r : rows) {
        char line[256];
        std::snprintf(line, sizeof line, "| %s | %g | %g | %.4f ± %.4f | %.4f ± %.4f |\n",
                      r.qkv_norm ? "qkv-norm" : "pre-ln", r.beta, r.sigma, r.flips_mean,
                      r.flips_spread, r.entropy_mean, r.entropy_spread);
        out += line;
    }
    return out;
}

void validate(const noise_table_settings& s) {
    auto require = [](bool ok, const std::string& message) {
        if (!ok) throw input_error(message);
    };
    require(s.n >= 2 && s.d >= 2, "noise-n and noise-d must be >= 2");
    require(std::isfinite(s.T) && s.T > 0, "noise-T must be > 0");
    require(!s.betas.empty() && !s.sigmas.empty(),
            "noise-betas and noise-sigmas need at least one value each");
    for (const double sigma : s.sigmas)
        require(std::isfinite(sigma) && sigma >= 0, "noise-sigmas must be >= 0");
    for (const double beta : s.betas)
        require(std::isfinite(beta), "noise-betas must be finite");
    require(!s.seeds.empty(), "noise: at least one seed");
}

std::string noise_table_claim() {
    return "Menary et al.'s claim: Pre-Norm lets the subspaces of the residual stream interfere, "
           "which shows up as noise on the norms of the queries, keys and values; sparse attention "
           "(one key clearly ahead) is stable under that noise, while attention whose "
           "most-attended "
           "key can change under it suffers \"circuit collapse\". Ours: pre-ln runs with gaussian "
           "weights, the plain maps (`pre-ln`) and QKV-Norm (`qkv-norm`), the norms of q, k and v "
           "multiplied by 1 + sigma xi redrawn every 0.5 of depth (`--norm-noise`, docs/model.md "
           "§11), and at every frame the fraction of tokens whose most-attended key differs from "
           "the "
           "noiseless attention at the same state (`argmax_flips`), beside the normalised "
           "attention "
           "entropy (1: uniform, as at beta = 1; about 0.13: sparse, as at beta = 100)."
           "\n\n"
           "What the table shows: with no noise there are no flips (exactly 0, as it must be); the "
           "flips grow with sigma, roughly in proportion at small sigma (about 3-5 % of the tokens "
           "at sigma = 0.01, 40-50 % at sigma = 0.2), nearly the same with and without QKV-Norm. "
           "Sparse attention is not more stable here: at beta = 100 the top key moves at least as "
           "often as at beta = 1. That does not contradict the mechanism behind the claim, it "
           "locates it: the most- attended key is the argmax of the logits, which does not depend "
           "on "
           "beta at a given state, so a key factor 1 + sigma xi moves it whenever sigma exceeds "
           "the "
           "relative gap between the two best scores. Sparsity by temperature alone (large beta) "
           "gives no such gap; stability needs a margin between the best key and the rest, which "
           "random weights do not provide. Where the attention is isotropic the flips are frequent "
           "but harmless (every key weighs about 1/n, so the entropy, and A_k, hardly change); "
           "where "
           "it is sparse a flip moves the whole update, and the entropy falls slightly as sigma "
           "grows. `nadyn table noise --seeds 1 2 3` reproduces it (a few seconds; "
           "`/usr/bin/python3 "
           "scripts/figure_noise.py results` redraws the figure); `--noise-betas`, "
           "`--noise-sigmas`, "
           "`--noise-n`, `--noise-d`, `--noise-T` change the settings. Every run records both "
           "observables per frame."
           "\n";
}

} // namespace nadyn
