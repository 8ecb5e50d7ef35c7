// nadyn: normalized attention dynamics. Parses the command line and dispatches to a
// subcommand; every error ends here as one line on stderr and an exit status
// (2: bad input, 1: I/O or numerical failure, 130: interrupted).
#include "app.hpp"

#include "nadyn/error.hpp"
#include "nadyn/integrate.hpp"

#include <iostream>

int main(int argc, char** argv) {
    using namespace nadyn;
    for (int i = 0; i < argc; ++i) {
        if (i) cli::invocation += ' ';
        cli::invocation += argv[i];
    }
    CLI::App app;
    const cli::app_commands commands = cli::build_app(app);
    if (const std::string message = cli::unknown_command(app, argc, argv); !message.empty()) {
        std::cerr << message << '\n';
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ExtrasError& e) {
        std::cerr << cli::unexpected_arguments(app, argc, argv) << '\n';
        return 2;
    } catch (const CLI::ParseError& e) {
        // CLI11 exits 100-127 on its own; bad input is status 2 everywhere in nadyn.
        std::string message = e.what();
        if (message.empty()) message = e.get_name();
        std::cerr << "nadyn: " << message << " (see 'nadyn --help')\n";
        return 2;
    }
    try {
        for (const auto& [sub, run] : commands.run)
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
