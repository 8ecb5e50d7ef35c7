#include "app.hpp"

#include "nadyn/experiment/suggest.hpp"
#include "nadyn/model/version.hpp"

#include <algorithm>
#include <vector>

namespace nadyn::cli {

std::string invocation;

app_commands build_app(CLI::App& app, std::string_view only) {
    app.description("nadyn: normalized attention dynamics. Tokens are particles on the unit sphere "
                    "moved by softmax self-attention; the normalisation scheme sets their speed.");
    app.set_version_flag("--version",
                         std::string("nadyn ") + version() + " (" + git_commit() + ")");
    app.require_subcommand(1);
    app_commands commands;
    auto wanted = [only](const CLI::App* sub) { return only.empty() || sub->get_name() == only; };
    auto* simulate = app.add_subcommand("simulate", "Integrate the particle system and write an "
                                                    "H5MD trajectory file");
    if (wanted(simulate))
        commands.run[simulate] = add_simulate(*simulate, &commands.simulate_config);
    auto* inspect = app.add_subcommand("inspect", "Print a trajectory file's parameters and "
                                                  "observables");
    if (wanted(inspect)) commands.run[inspect] = add_inspect(*inspect);
    auto* reduced = app.add_subcommand(
        "reduced", "Integrate the scalar ODE of the symmetric orthogonal start (docs/model.md §3)");
    if (wanted(reduced)) commands.run[reduced] = add_reduced(*reduced);
    auto* table = app.add_subcommand(
        "table", "Run a study (a folder studies/<name>/; python3 -m nadyn.study runs it) or every "
                 "study of studies/paper.toml and results/README.md (all)");
    if (wanted(table)) commands.run[table] = add_table(*table);
    auto* rerun = app.add_subcommand(
        "rerun", "Run the simulation recorded in a trajectory file again (bitwise identical)");
    if (wanted(rerun)) commands.run[rerun] = add_rerun(*rerun);
    auto* sweep = app.add_subcommand(
        "sweep", "Run an experiment (a TOML file of sweep axes) in one process into one "
                 "labelled file");
    if (wanted(sweep)) commands.run[sweep] = add_sweep(*sweep);
    auto* meanfield = app.add_subcommand(
        "meanfield", "Evolve the tokens' density under the mean-field continuity equation "
                     "(n -> infinity, docs/model.md §16) and write a density file");
    if (wanted(meanfield)) commands.run[meanfield] = add_meanfield(*meanfield);
    return commands;
}

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
        const std::string best = closest_name(arg, flags);
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
