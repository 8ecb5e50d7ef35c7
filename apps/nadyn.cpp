// nadyn: normalized attention dynamics. Parses the command line and dispatches to a
// subcommand; every error ends here as one line on stderr and an exit status
// (2: bad input, 1: I/O or numerical failure, 130: interrupted).
#include "commands.hpp"

#include "nadyn/error.hpp"
#include "nadyn/integrate.hpp"
#include "nadyn/version.hpp"

#include <iostream>
#include <map>

namespace nadyn::cli {
std::string invocation;
}

int main(int argc, char** argv) {
    using namespace nadyn;
    for (int i = 0; i < argc; ++i) {
        if (i) cli::invocation += ' ';
        cli::invocation += argv[i];
    }
    CLI::App app{"nadyn: normalized attention dynamics. Tokens are particles on the unit sphere "
                 "moved by softmax self-attention; the normalisation scheme sets their speed."};
    app.set_version_flag("--version",
                         std::string("nadyn ") + version() + " (" + git_commit() + ")");
    app.require_subcommand(1);
    std::map<CLI::App*, cli::command> commands;
    auto* simulate = app.add_subcommand("simulate", "Integrate the particle system and write an "
                                                    "H5MD trajectory file");
    commands[simulate] = cli::add_simulate(*simulate);
    auto* inspect = app.add_subcommand("inspect", "Print a trajectory file's parameters and "
                                                  "observables");
    commands[inspect] = cli::add_inspect(*inspect);
    auto* reduced = app.add_subcommand(
        "reduced", "Integrate the scalar ODE of the symmetric orthogonal start (MODEL.md 3)");
    commands[reduced] = cli::add_reduced(*reduced);
    auto* table = app.add_subcommand(
        "table", "Recompute the paper's tables: initial, terminal, random, or all (results/)");
    commands[table] = cli::add_table(*table);

    // CLI11 reports an unknown command as "A subcommand is required", hiding the typo.
    if (argc > 1 && argv[1][0] != '-') {
        bool known = false;
        std::string names;
        for (const auto* sub : app.get_subcommands({})) {
            known = known || sub->get_name() == argv[1];
            names += (names.empty() ? "" : ", ") + sub->get_name();
        }
        if (!known) {
            std::cerr << "nadyn: unknown command '" << argv[1] << "'; valid commands: " << names
                      << " (see 'nadyn --help')\n";
            return 2;
        }
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // CLI11 exits 100-127 on its own; bad input is status 2 everywhere in nadyn.
        std::string message = e.what();
        if (message.empty()) message = e.get_name();
        std::cerr << "nadyn: " << message << " (see 'nadyn --help')\n";
        return 2;
    }
    try {
        for (auto& [sub, run] : commands)
            if (sub->parsed()) return run();
    } catch (const input_error& e) {
        std::cerr << "nadyn: " << e.what() << '\n';
        return 2;
    } catch (const io_error& e) {
        std::cerr << "nadyn: " << e.what() << '\n';
        return 1;
    } catch (const numerical_fault& e) {
        std::cerr << "nadyn: " << e.what() << '\n';
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "nadyn: internal error: " << e.what() << '\n';
        return 1;
    }
    return 2;
}
