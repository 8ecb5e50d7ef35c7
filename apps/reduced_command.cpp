// nadyn reduced: the scalar ODE of the symmetric orthogonal start (docs/model.md §3).
#include "commands.hpp"

#include "nadyn/experiment/reduced_run.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/model/error.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace nadyn::cli {

namespace {

struct reduced_options {
    std::string scheme = "peri-ln";
    double n = 256, beta = 5.0, r0 = 1.0, alpha = 1.0, t_switch = 0.0, T = 30.0;
    CLI::Option* t_switch_option = nullptr;
    std::int64_t samples = 100;
    std::string spacing = "linear";
    std::string attention = "softmax";
    double rtol = 1e-13;
    std::string out;
    bool force = false, csv = false;
};

} // namespace

command add_reduced(CLI::App& app) {
    auto o = std::make_shared<reduced_options>();
    app.add_option("--scheme", o->scheme, "Normalisation scheme: " + scheme_names())
        ->capture_default_str();
    app.add_option("--n", o->n, "Number of tokens (> 1; the formula is smooth in n)")
        ->capture_default_str();
    app.add_option("--beta", o->beta, "Inverse temperature")->capture_default_str();
    app.add_option("--r0", o->r0, "Initial magnitude")->capture_default_str();
    app.add_option("--alpha", o->alpha, "nGPT step alpha")->capture_default_str();
    o->t_switch_option =
        app.add_option("--t-switch", o->t_switch, "mix-ln switch time (default 0.25 T)");
    app.add_option("--attention", o->attention,
                   "Attention weights: " + attention_kind_names() +
                       " (unnormalized: exp(beta <q_k, key_j>) / n, docs/model.md §8)")
        ->capture_default_str();
    app.add_option("--T", o->T, "Horizon")->capture_default_str();
    app.add_option("--samples", o->samples, "Output samples after t = 0")
        ->check(decimal_integer<std::int64_t>())
        ->capture_default_str();
    app.add_option("--spacing", o->spacing,
                   "linear | log (log: samples from 1e-3 T to T, for terminal laws)")
        ->capture_default_str();
    app.add_option("--rtol", o->rtol, "Relative tolerance of the adaptive Dormand-Prince stepper")
        ->capture_default_str();
    app.add_flag("--csv", o->csv, "CSV on stdout instead of a table");
    app.add_option("--out", o->out,
                   "Also write an H5MD file (observables mean_cos, gap, "
                   "velocity, r_mean)");
    app.add_flag("--force", o->force, "Overwrite an existing output file");

    app.footer("Examples:\n"
               "  nadyn reduced --scheme peri-ln --n 256 --beta 5      # gamma(t) from e_k\n"
               "  nadyn reduced --scheme pre-ln --T 1000 --spacing log --csv > pre.csv\n"
               "  nadyn reduced --scheme post-ln --out post_reduced.h5\n"
               "  nadyn reduced --scheme pre-ln --attention unnormalized --n 16 --beta 1");

    return [o]() {
        reduced_run r;
        r.id = parse_scheme(o->scheme);
        r.n = o->n;
        r.beta = o->beta;
        r.r0 = o->r0;
        r.alpha = o->alpha;
        r.T = o->T;
        if (o->t_switch_option->count() > 0) r.t_switch = o->t_switch;
        r.samples = o->samples;
        r.spacing = parse_spacing(o->spacing);
        r.rtol = o->rtol;
        r.attention = parse_attention_kind(o->attention);
        r.validate();
        if (!o->out.empty()) check_output_path(o->out, o->force);
        const auto samples = r.integrate();
        const reduced_parameters p = r.parameters();
        if (!o->out.empty()) r.write_file(o->out, samples, o->force, invocation);

        if (o->csv) {
            std::printf("t,gamma,gap,velocity,r\n");
            for (const auto& s : samples)
                std::printf("%.17g,%.17g,%.17g,%.17g,%.17g\n", s.t, 1.0 - s.u, s.u, s.velocity,
                            s.r);
        } else {
            std::printf("%s%s, n = %g, beta = %g, r0 = %g, alpha = %g, t_switch = %g\n",
                        info(p.scheme.id).name.data(),
                        p.attention == attention_kind::unnormalized ? " (unnormalized attention)"
                                                                    : "",
                        o->n, o->beta, o->r0, o->alpha, p.scheme.t_switch);
            std::printf("%14s %22s %22s %22s %14s\n", "t", "gamma", "1 - gamma", "gamma'", "r");
            const std::size_t rows = std::min<std::size_t>(samples.size(), 21);
            for (std::size_t row = 0; row < rows; ++row) {
                const auto& s = samples[rows == 1 ? 0 : row * (samples.size() - 1) / (rows - 1)];
                std::printf("%14.6g %22.15g %22.15e %22.15e %14.8g\n", s.t, 1.0 - s.u, s.u,
                            s.velocity, s.r);
            }
            if (!o->out.empty()) std::printf("wrote %s\n", o->out.c_str());
        }
        return 0;
    };
}

} // namespace nadyn::cli
