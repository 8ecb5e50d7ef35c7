// Fuzz target: the command line, parsed by the program's own CLI11 app (apps/app.hpp) and,
// for simulate, turned into a run_config and validated. Nothing runs and no file is read.
//
// Input: argv tokens separated by '\n' or '\0' (argv[0] is "nadyn"). Every outcome must be
// a clean one: a parse, a CLI11 ParseError (including --help and --version), or an
// input_error; any other exception, a crash, a sanitizer report or a hang is a bug.
#include "app.hpp"

#include "nadyn/model/error.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> tokens{"nadyn"};
    std::string token;
    for (std::size_t i = 0; i <= size; ++i) {
        if (i == size || data[i] == '\n' || data[i] == '\0') {
            if (i < size || !token.empty()) tokens.push_back(token);
            token.clear();
        } else {
            token += static_cast<char>(data[i]);
        }
    }
    if (tokens.size() > 64) return 0; // long command lines add nothing but time
    std::vector<const char*> argv;
    for (const auto& t : tokens)
        argv.push_back(t.c_str());
    argv.push_back(nullptr);
    const int argc = static_cast<int>(tokens.size());

    nadyn::cli::invocation.clear();
    for (int i = 0; i < argc; ++i)
        nadyn::cli::invocation += (i ? " " : "") + tokens[static_cast<std::size_t>(i)];
    CLI::App app;
    const nadyn::cli::app_commands commands = nadyn::cli::build_app(app);
    if (!nadyn::cli::unknown_command(app, argc, argv.data()).empty()) return 0;
    try {
        app.parse(argc, argv.data());
    } catch (const CLI::ParseError&) {
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nadyn fuzz: parse threw a non-CLI11 exception: %s\n", e.what());
        std::abort();
    }
    // Exactly one subcommand is required, so a clean parse chose one.
    int chosen = 0;
    for (const auto& entry : commands.run)
        chosen += entry.first->parsed() ? 1 : 0;
    if (chosen != 1) {
        std::fprintf(stderr, "nadyn fuzz: a parse chose %d subcommands\n", chosen);
        std::abort();
    }
    if (!app.got_subcommand("simulate")) return 0;
    try {
        commands.simulate_config().validate();
    } catch (const nadyn::input_error&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nadyn fuzz: validation threw an unexpected exception: %s\n",
                     e.what());
        std::abort();
    }
    return 0;
}
