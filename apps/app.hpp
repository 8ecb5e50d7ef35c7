#pragma once
// The nadyn command line as one CLI11 app: the description, --version and every
// subcommand with its flags. The program (nadyn.cpp) parses with it and runs the chosen
// command; the command-line fuzzer (fuzz/cli_parse.cpp) parses with it and only validates.
#include "commands.hpp"

#include "nadyn/experiment/run_config.hpp"

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace nadyn::cli {

struct app_commands {
    std::map<CLI::App*, command> run; // each subcommand's function to run
    // simulate's flags as a run_config, checked as `nadyn simulate` checks them before it
    // validates the config and reads input files (input_error otherwise). Call it only
    // after a parse that chose simulate.
    std::function<run_config()> simulate_config;
};

// Registers the description, --version and every subcommand on `app`. With `only` (the
// name of the command a process runs), only that subcommand gets its flags, the others their
// name and description: a start pays for its own command's flags alone.
app_commands build_app(CLI::App& app, std::string_view only = {});

// The error line for an argv[1] that is neither an option nor a subcommand of `app`
// (CLI11 would only say "A subcommand is required", hiding the typo); empty otherwise.
std::string unknown_command(const CLI::App& app, int argc, const char* const* argv);

// The error line for arguments no option of the chosen subcommand takes: the first unknown
// flag with the closest valid one ("--sheme: unknown flag; did you mean --scheme?"), or the
// stray value, and where the valid flags are listed.
std::string unexpected_arguments(const CLI::App& app, int argc, const char* const* argv);

} // namespace nadyn::cli
