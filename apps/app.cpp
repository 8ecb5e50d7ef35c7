#include "app.hpp"

#include "nadyn/version.hpp"

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
        "table", "Recompute the paper's tables: initial, terminal, random, or all (results/)");
    commands.run[table] = add_table(*table);
    auto* rerun = app.add_subcommand(
        "rerun", "Run the simulation recorded in a trajectory file again (bitwise identical)");
    commands.run[rerun] = add_rerun(*rerun);
    return commands;
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
