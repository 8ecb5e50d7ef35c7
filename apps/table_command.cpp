// nadyn table NAME: every table at once (all) and the studies (studies/<name>/: initial,
// terminal, random, noise, unselectable, ...), run through
// python/nadyn/study.py.
#include "commands.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/reduced.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string_view>

namespace nadyn::cli {

namespace {

struct table_options {
    std::string which;
    std::string format = "md";
    std::string out_dir = "results";
    std::string python = "/usr/bin/python3";
    bool no_figures = false;
    bool quick = false;
    // Studies (studies/<name>/: experiment, reduction, figure; python/nadyn/study.py).
    std::vector<std::string> sets;
    std::string studies = std::string(NADYN_SOURCE_DIR) + "/studies";
};

void require(bool ok, const std::string& message) {
    if (!ok) throw input_error(message);
}

// The tables computed here; any other name is a study folder under --studies (`random`
// is the study random_weights, under its table's name).
constexpr const char* built_in_tables[] = {"all"};

// A table's name for a study whose folder is named otherwise.
std::string study_folder(const std::string& which) {
    return which == "random" ? "random_weights" : which;
}

bool is_built_in(const std::string& which) {
    for (const char* name : built_in_tables)
        if (which == name) return true;
    return false;
}

// A study folder has its reduction and README (and an experiment, or PARAMETERS in
// reduce.py for a study that runs no sweep: python/nadyn/study.py checks the rest).
bool is_study(const std::filesystem::path& folder) {
    return std::filesystem::is_regular_file(folder / "reduce.py") &&
           std::filesystem::is_regular_file(folder / "README.md");
}

// The names of the study folders under `root`, sorted.
std::vector<std::string> study_names(const std::filesystem::path& root) {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(root, error))
        if (entry.is_directory() && is_study(entry.path()))
            names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// A study runs in Python (python/nadyn/study.py: sweep, reduce, write); this program is
// only its front door, so `nadyn table NAME` works for a study as for a built-in table. The
// child gets this very program for its sweep and the source tree's Python package.
// `print`: the table on stdout (else stdout goes to /dev/null, as for `nadyn table all`).
int run_study(const table_options& o, const std::string& name, const std::vector<std::string>& sets,
              bool print) {
    const std::filesystem::path folder = std::filesystem::path(o.studies) / name;
    if (!is_study(folder)) {
        std::string known;
        for (const char* name : built_in_tables)
            known += std::string(known.empty() ? "" : ", ") + name;
        known += ", random"; // the study random_weights
        for (const auto& name : study_names(o.studies))
            known += ", " + name;
        throw input_error("unknown table or study '" + name + "' (valid: " + known + ")");
    }
    require(o.format == "md" || o.format == "csv",
            "unknown format '" + o.format + "'; valid formats: md, csv");
    std::error_code error;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
    std::vector<std::string> args{o.python,    "-m",      "nadyn.study", "run",   folder.string(),
                                  "--out-dir", o.out_dir, "--format",    o.format};
    if (!error) args.insert(args.end(), {"--nadyn", self});
    for (const auto& setting : sets)
        args.insert(args.end(), {"--set", setting});
    if (o.no_figures) args.emplace_back("--no-figures");
    if (o.quick) args.emplace_back("--quick");

    std::string python_path = std::string(NADYN_SOURCE_DIR) + "/python";
    if (const char* inherited = std::getenv("PYTHONPATH"); inherited && *inherited)
        python_path += std::string(":") + inherited;
    std::vector<std::string> environment{"PYTHONPATH=" + python_path};
    for (char** entry = environ; *entry; ++entry)
        if (std::string_view(*entry).rfind("PYTHONPATH=", 0) != 0) environment.emplace_back(*entry);

    auto pointers = [](std::vector<std::string>& strings) {
        std::vector<char*> result;
        for (auto& s : strings)
            result.push_back(s.data());
        result.push_back(nullptr);
        return result;
    };
    auto argv = pointers(args);
    auto envp = pointers(environment);
    std::fflush(stdout);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!print) posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t child = 0;
    const int failed = posix_spawnp(&child, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (failed)
        throw io_error("cannot start '" + o.python + "' for the study: " + std::strerror(failed));
    int status = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) throw io_error("lost the study's Python process");
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    throw io_error("the study's Python process was killed by signal " +
                   std::to_string(WTERMSIG(status)));
}

// Writes a file whole, or nothing: a temporary beside it, renamed into place.
void write_file(const std::filesystem::path& path, const std::string& text) {
    const std::filesystem::path temporary = path.string() + ".partial";
    {
        std::ofstream out(temporary);
        out << text;
        if (!out) throw io_error("cannot write '" + temporary.string() + "'");
    }
    std::filesystem::rename(temporary, path);
}

void note(const std::string& message) {
    std::fprintf(stderr, "nadyn table: %s\n", message.c_str());
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The data behind the figures: reduced trajectories and sphere snapshots (the terminal
// series and fits come from the terminal study).
void write_figure_data(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    // (1) gamma(t) of the scalar ODE for every scheme (paper's setting).
    {
        std::string csv = "scheme,t,gamma,gap,velocity,r\n";
        std::vector<double> times;
        for (int i = 0; i <= 400; ++i)
            times.push_back(60.0 * i / 400.0);
        for (const auto& row : scheme_table) {
            // The initial study's start: n = 256, beta = 5, r0 = alpha = 1, t_switch = 15.
            reduced_parameters p{{row.id, 1.0, 15.0}, 256.0, 5.0, 1.0};
            for (const auto& s : integrate_reduced(p, times)) {
                char line[256];
                std::snprintf(line, sizeof line, "%s,%.10g,%.17g,%.17g,%.17g,%.17g\n",
                              row.name.data(), s.t, 1.0 - s.u, s.u, s.velocity, s.r);
                csv += line;
            }
        }
        write_file(dir / "symmetric_start.csv", csv);
    }
    // (4) tokens on S^2 for post-ln and peri-ln: trajectory files with positions.
    for (scheme id : {scheme::post_ln, scheme::peri_ln}) {
        run_config c;
        c.scheme_id = id;
        c.n = 64;
        c.d = 3;
        c.beta = 4.0;
        c.seed = 1;
        c.integration = {integrator_kind::rk4, 20.0, 0.01, 1e-8, 1e-10, 20};
        c.command_line = invocation;
        simulation run(c);
        const auto path = dir / ("sphere_" + std::string(info(id).name) + ".h5");
        run.run_to_file(path.string(), true);
    }
}

std::string read_whole(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw io_error("cannot read '" + path.string() + "'");
    return text.str();
}

// A study's part of results/README.md, from its files: its README (the claim, the method,
// what we see) without the heading, then its table as written into `dir`, heading dropped.
// `command`: the name `nadyn table` runs it by (default: the study's own).
std::string study_section(const std::filesystem::path& dir, const table_options& o,
                          const std::string& name, const std::string& table,
                          const std::string& command = "") {
    auto without_heading = [](const std::string& text) {
        if (text.rfind('#', 0) != 0) return text;
        const auto body = text.find_first_not_of('\n', text.find('\n'));
        return body == std::string::npos ? std::string() : text.substr(body);
    };
    return "From the study `studies/" + name + "/`, run by `nadyn table " +
           (command.empty() ? name : command) + "`.\n\n" +
           without_heading(read_whole(std::filesystem::path(o.studies) / name / "README.md")) +
           "\n" + without_heading(read_whole(dir / (table + ".md")));
}

std::string results_readme(const std::string& initial_md, const std::string& terminal_md,
                           const std::string& random_md, const std::string& unselectable_md,
                           const std::string& noise_md, double seconds) {
    std::string text;
    text += "# Results: the tables and figures of \"Normalization in Attention Dynamics\"\n\n";
    text += "Generated by `nadyn table all` (";
    text += invocation;
    text += "), in " + std::to_string(int(seconds)) +
            " s. Do not edit by hand: rerun `bash scripts/reproduce.sh` (builds nadyn, then runs "
            "`build/bin/nadyn table all --out-dir results`). The paper is Karagodin, Ge, "
            "Polyanskiy, Rigollet, NeurIPS 2025, arXiv 2510.22026; the formulas are in "
            "[docs/model.md §3](../docs/model.md#3-closed-forms-of-the-symmetric-start).\n\n";
    text += "## 1. Initial velocity (`initial_velocity.md`, `initial_velocity.csv`)\n\n";
    text += initial_md + "\n";
    text += "## 2. Terminal velocity (`terminal_velocity.md`, `terminal_velocity.csv`)\n\n";
    text += terminal_md + "\n";
    text += "## 3. Random weights (`random_weights.md`, `random_weights.csv`, figure 5)\n\n";
    text += random_md + "\n";
    text += "## 4. Unselectable keys (`unselectable.md`, `unselectable.csv`, "
            "`fig_unselectable.png`)\n\n";
    text += unselectable_md + "\n";
    text += "## 5. Noise on the norms (`noise.md`, `noise.csv`, `fig_noise.png`)\n\n";
    text += noise_md + "\n";
    text += "## Figures\n\nMade by `/usr/bin/python3 scripts/figures.py results` from the files in "
            "`results/data/` (written by `nadyn table all`).\n\n"
            "1. `fig1_symmetric_mean_cos.png`: gamma(t) = mean_cos of the scalar ODE for all six "
            "schemes from the symmetric start (n = 256, beta = 5; mix-ln switches at t = 15).\n"
            "2. `fig2_terminal_laws.png`: the terminal velocity gamma' of every scheme, one "
            "panel per law on the axis where that law is a straight line (t, log t, sqrt t): "
            "scalar ODE (lines, symmetric start) and n-particle run (circles, small cap start) "
            "over the particles' time range, the law fitted to the particles dashed, the fitted "
            "parameter of both in the legend.\n"
            "3. `fig3_initial_velocity_beta.png`: gamma'(0) against beta: the two closed forms "
            "as lines (post-ln, pre-ln, mix-ln, sqrt-scaling share one, peri-ln and ngpt the "
            "other) and every scheme's n-particle value as small circles on them.\n"
            "4. `fig4_sphere_snapshots.png`: 64 tokens on S^2 (beta = 4, uniform start) at a few "
            "times for post-ln and peri-ln.\n"
            "5. `fig5_random_mean_cos.png`: mean_cos against layer (log axis) with random "
            "weights per layer, all six schemes, mean over seeds and the min-max band (drawn by "
            "the study, `studies/random_weights/reduce.py`).\n"
            "6. `fig_unselectable.png`: the fraction of unselectable keys against n, one line "
            "per d, raw and after LayerNorm's scaling (drawn by the study, "
            "`studies/unselectable/reduce.py`).\n"
            "7. `fig_noise.png`: argmax_flips against sigma, pre-ln and QKV-Norm, sparse and "
            "isotropic attention (drawn by the study, `studies/noise/reduce.py`).\n";
    return text;
}

} // namespace

command add_table(CLI::App& app) {
    auto o = std::make_shared<table_options>();
    app.add_option("which", o->which,
                   "all, or a study (a folder of --studies: initial, terminal, random "
                   "(= random_weights), noise, unselectable, clustering_time, ...)")
        ->required();
    app.add_option("--format", o->format, "md | csv (a study's table)")->capture_default_str();
    app.add_option("--out-dir", o->out_dir, "Where `all` writes tables, data and figures")
        ->capture_default_str();
    app.add_flag("--no-figures", o->no_figures, "`all`: skip the Python figure script");
    app.add_option("--python", o->python, "Python with h5py and matplotlib, for the figures")
        ->capture_default_str();

    app.footer("Examples:\n"
               "  nadyn table initial                  # gamma'(0): closed form, ODE, particles\n"
               "  nadyn table terminal --format csv > terminal.csv\n"
               "  nadyn table random --set sweep.seed=[1]   # the random-weights study, one seed\n"
               "  nadyn table unselectable --set seeds=[1,2,3]   # a study without a sweep\n"
               "  nadyn table all --out-dir results    # every table and figure (README: results)\n"
               "  nadyn table clustering_time --set sweep.seed.range=[1,2]   # a study");

    app.add_option("--set", o->sets,
                   "A study: override a key of its experiment, as for nadyn sweep "
                   "(sweep.seed.range=[1,2]; repeatable)");
    app.add_flag("--quick", o->quick,
                 "A study: its quick form (the QUICK settings of its reduce.py, before --set)");
    app.add_option("--studies", o->studies,
                   "The folder of studies (default: studies/ of nadyn's source tree)");

    return [o]() {
        if (!is_built_in(o->which)) return run_study(*o, study_folder(o->which), o->sets, true);
        require(o->sets.empty(), "--set applies to a study; 'all' runs every study with its "
                                 "own settings");
        require(!o->quick, "--quick applies to a study; 'all' runs every study in full");

        // all: every table, the figure data, the figures and results/README.md.
        const auto start = std::chrono::steady_clock::now();
        const std::filesystem::path dir = o->out_dir;
        std::error_code error;
        std::filesystem::create_directories(dir, error);
        if (error || !std::filesystem::is_directory(dir))
            throw input_error("cannot create output directory '" + o->out_dir + "'");
        note("initial velocity study");
        if (const int status = run_study(*o, "initial", {}, false); status != 0) return status;
        const std::string initial_md = study_section(dir, *o, "initial", "initial_velocity");
        note("terminal velocity study (" + std::to_string(int(seconds_since(start))) + " s)");
        if (const int status = run_study(*o, "terminal", {}, false); status != 0) return status;
        const std::string terminal_md = study_section(dir, *o, "terminal", "terminal_velocity");
        note("random weights study (" + std::to_string(int(seconds_since(start))) + " s)");
        if (const int status = run_study(*o, "random_weights", {}, false); status != 0)
            return status;
        const std::string random_md =
            study_section(dir, *o, "random_weights", "random_weights", "random");
        note("unselectable keys study (" + std::to_string(int(seconds_since(start))) + " s)");
        if (const int status = run_study(*o, "unselectable", {}, false); status != 0) return status;
        const std::string unselectable_md = study_section(dir, *o, "unselectable", "unselectable");
        note("noise study (" + std::to_string(int(seconds_since(start))) + " s)");
        if (const int status = run_study(*o, "noise", {}, false); status != 0) return status;
        const std::string noise_md = study_section(dir, *o, "noise", "noise");
        note("figure data (" + std::to_string(int(seconds_since(start))) + " s)");
        write_figure_data(dir / "data");
        write_file(dir / "README.md",
                   results_readme(initial_md, terminal_md, random_md, unselectable_md, noise_md,
                                  seconds_since(start)));
        if (!o->no_figures) {
            for (const char* name : {"figures.py"}) {
                const std::filesystem::path script =
                    std::filesystem::path(NADYN_SOURCE_DIR) / "scripts" / name;
                const std::string command = o->python + " " + script.string() + " " + dir.string();
                note("figures: " + command);
                if (std::system(command.c_str()) != 0)
                    throw io_error("the figure script failed: " + command);
            }
        }
        note("done in " + std::to_string(int(seconds_since(start))) + " s; see " +
             (dir / "README.md").string());
        return 0;
    };
}

} // namespace nadyn::cli
