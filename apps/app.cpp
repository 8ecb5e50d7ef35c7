#include "app.hpp"

#include "nadyn/model/version.hpp"

#include <algorithm>
#include <vector>

namespace nadyn::cli {

std::string invocation;

app_commands build_app(CLI::App& app) {
    app.description("nadyn: normalized attention dynamics. Tokens are particles on the unit sphere "
                    "moved by softmax self-attention; the normalisation scheme sets their speed.");
    app.set_version_flag("--version",
                         std::string("nadyn ") + version() + " (" + git_commit() + ")");
    app.require_subcommand(1);
    app_commands commands;
    auto* simulate = app.add_subcommand("simulate", "Integrate the particle system and write an "
                                                    "H5MD trajectory file");
    commands.run[simulate] = add_simulate(*simulate, &commands.simulate_config);
    auto* inspect = app.add_subcommand("inspect", "Print a trajectory file's parameters and "
                                                  "observables");
    commands.run[inspect] = add_inspect(*inspect);
    auto* reduced = app.add_subcommand(
        "reduced", "Integrate the scalar ODE of the symmetric orthogonal start (docs/model.md §3)");
    commands.run[reduced] = add_reduced(*reduced);
    auto* table = app.add_subcommand(
        "table", "Run a study (a folder studies/<name>/; python3 -m nadyn.study runs it) or every "
                 "study of studies/paper.toml and results/README.md (all)");
    commands.run[table] = add_table(*table);
    auto* rerun = app.add_subcommand(
        "rerun", "Run the simulation recorded in a trajectory file again (bitwise identical)");
    commands.run[rerun] = add_rerun(*rerun);
    auto* sweep = app.add_subcommand(
        "sweep", "Run an experiment (a TOML file of sweep axes) in one process into one "
                 "labelled file");
    commands.run[sweep] = add_sweep(*sweep);
    auto* meanfield = app.add_subcommand(
        "meanfield", "Evolve the tokens' density under the mean-field continuity equation "
                     "(n -> infinity, docs/model.md §16) and write a density file");
    commands.run[meanfield] = add_meanfield(*meanfield);
    return commands;
}

namespace {

// Edit distance (insertions, deletions, substitutions, adjacent swaps) for suggestions.
std::size_t distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> cost(a.size() + 1,
                                               std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        cost[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        cost[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            cost[i][j] = std::min({cost[i - 1][j] + 1, cost[i][j - 1] + 1,
                                   cost[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                cost[i][j] = std::min(cost[i][j], cost[i - 2][j - 2] + 1);
        }
    return cost[a.size()][b.size()];
}

} // namespace

std::string unexpected_arguments(const CLI::App& app, int argc, const char* const* argv) {
    const CLI::App* sub = nullptr;
    for (const auto* candidate : app.get_subcommands(std::function<bool(const CLI::App*)>{}))
        if (candidate->parsed()) sub = candidate;
    const std::string where = sub ? "nadyn " + sub->get_name() : std::string("nadyn");
    std::vector<std::string> flags;
    if (sub)
        for (const auto* option : sub->get_options())
            for (const auto& name : option->get_lnames())
                flags.push_back("--" + name);
    // The first argument after the subcommand that is a flag no option has.
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) continue;
        arg = arg.substr(0, arg.find('='));
        if (std::find(flags.begin(), flags.end(), arg) != flags.end()) continue;
        std::string best;
        std::size_t best_distance = 3; // suggest only close matches
        for (const auto& flag : flags) {
            const std::size_t d = distance(arg, flag);
            if (d < best_distance) {
                best_distance = d;
                best = flag;
            }
        }
        return "nadyn: " + arg + ": unknown flag of '" + where + "'" +
               (best.empty() ? "" : "; did you mean " + best + "?") + " (see '" + where +
               " --help')";
    }
    std::string extras;
    for (const auto& extra : sub ? sub->remaining() : app.remaining())
        extras += (extras.empty() ? "" : " ") + extra;
    return "nadyn: unexpected argument '" + extras + "' for '" + where +
           "' (values follow their flag, e.g. --scheme post-ln; see '" + where + " --help')";
}

std::string unknown_command(const CLI::App& app, int argc, const char* const* argv) {
    if (argc < 2 || argv[1][0] == '-') return {};
    std::string names;
    for (const auto* sub : app.get_subcommands(std::function<bool(const CLI::App*)>{})) {
        if (sub->get_name() == argv[1]) return {};
        names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    return "nadyn: unknown command '" + std::string(argv[1]) + "'; valid commands: " + names +
           " (see 'nadyn --help')";
}

} // namespace nadyn::cli
