#pragma once
// The subcommands of the nadyn program. Each registers its options on the CLI11 app and
// returns the function that runs it (exit status).
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>

namespace nadyn::cli {

using command = std::function<int()>;

command add_simulate(CLI::App& app);
command add_inspect(CLI::App& app);

// The command line as typed, recorded in output files.
extern std::string invocation;

} // namespace nadyn::cli
