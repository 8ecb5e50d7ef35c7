// nadyn: normalized attention dynamics. Parses the command line and dispatches to a
// subcommand; every error ends here as one line on stderr and an exit status
// (2: bad input, 1: I/O or numerical failure, 130: interrupted). In an MPI job (mpirun)
// every rank parses the same command line and only rank 0 prints: one message, and every
// rank exits with the same status.
#include "app.hpp"

#include "nadyn/error.hpp"
#include "nadyn/integrate.hpp"
#include "nadyn/parallel_context.hpp"

#include <iostream>

int main(int argc, char** argv) {
    using namespace nadyn;
    const parallel_context ranks(argc, argv);
    cli::sweep_ranks = &ranks;
    // Rank 0 speaks for the job; the others stay quiet (same input, same outcome).
    std::ostream& err = ranks.root() ? std::cerr : cli::quiet_stream();
    for (int i = 0; i < argc; ++i) {
        if (i) cli::invocation += ' ';
        cli::invocation += argv[i];
    }
    CLI::App app;
    const cli::app_commands commands = cli::build_app(app);
    if (const std::string message = cli::unknown_command(app, argc, argv); !message.empty()) {
        err << message << '\n';
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return ranks.root() ? app.exit(e) : 0;
    } catch (const CLI::CallForAllHelp& e) {
        return ranks.root() ? app.exit(e) : 0;
    } catch (const CLI::CallForVersion& e) {
        return ranks.root() ? app.exit(e) : 0;
    } catch (const CLI::ExtrasError& e) {
        err << cli::unexpected_arguments(app, argc, argv) << '\n';
        return 2;
    } catch (const CLI::ParseError& e) {
        // CLI11 exits 100-127 on its own; bad input is status 2 everywhere in nadyn.
        std::string message = e.what();
        if (message.empty()) message = e.get_name();
        err << "nadyn: " << message << " (see 'nadyn --help')\n";
        return 2;
    }
    try {
        for (const auto& [sub, run] : commands.run)
            if (sub->parsed()) {
                if (ranks.size() > 1 && !ranks.mpi())
                    throw input_error("this nadyn was built without MPI (NADYN_MPI=OFF): run it "
                                      "without mpirun, or build with -DNADYN_MPI=ON");
                if (ranks.size() > 1 && sub->get_name() != "sweep" && sub->get_name() != "simulate")
                    throw input_error("only 'nadyn sweep' and 'nadyn simulate' run over MPI "
                                      "ranks; run 'nadyn " +
                                      sub->get_name() + "' without mpirun (or with -np 1)");
                return run();
            }
    } catch (const input_error& e) {
        err << "nadyn: " << e.what() << '\n';
        return 2;
    } catch (const io_error& e) {
        err << "nadyn: " << e.what() << '\n';
        return 1;
    } catch (const numerical_fault& e) {
        err << "nadyn: " << e.what() << '\n';
        return 1;
    } catch (const std::exception& e) {
        err << "nadyn: internal error: " << e.what() << '\n';
        return 1;
    }
    return 2;
}
