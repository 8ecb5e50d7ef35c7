// nadyn: normalized attention dynamics. Parses the command line and dispatches to a
// subcommand; every error ends here as one line on stderr and an exit status
// (2: bad input, 1: I/O or numerical failure, 130 or 143: stopped by SIGINT or SIGTERM). In an
// MPI job (mpirun) every rank parses its command line, the ranks agree that they all accepted
// the same one before anything runs, and only one rank prints: one message, and every rank
// exits with the same status.
#include "app.hpp"

#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"
#include "nadyn/parallel/parallel_context.hpp"

#include <functional>
#include <iostream>
#include <new>
#include <string>

int main(int argc, char** argv) {
    using namespace nadyn;
    // This process is nadyn alone: no HDF5 error stack on stderr, at exit included (errors
    // are reported as one line each).
    silence_hdf5_error_stacks();
    const parallel_context ranks(argc, argv);
    cli::sweep_ranks = &ranks;
    // Rank 0 speaks for the job; the others stay quiet (same input, same outcome).
    std::ostream& err = ranks.root() ? std::cerr : cli::quiet_stream();
    for (int i = 0; i < argc; ++i) {
        if (i) cli::invocation += ' ';
        cli::invocation += argv[i];
    }
    CLI::App app;
    // The flags of the command named first alone (all of them for --help, --version or none).
    const std::string_view command = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
    const cli::app_commands commands = cli::build_app(app, command);
    // Every rank reads its own command line, then all agree before anything runs (MPMD
    // launches can start ranks with different arguments): a refusal or a difference on any
    // rank ends every rank with status 2, and one rank says why.
    std::string refusal;         // "nadyn: ..." when this rank refused its command line
    std::function<int()> answer; // --help or --version: printed once the ranks agree
    if (const std::string message = cli::unknown_command(app, argc, argv); !message.empty()) {
        refusal = message;
    } else {
        try {
            app.parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            answer = [&app, e] { return app.exit(e); };
        } catch (const CLI::CallForAllHelp& e) {
            answer = [&app, e] { return app.exit(e); };
        } catch (const CLI::CallForVersion& e) {
            answer = [&app, e] { return app.exit(e); };
        } catch (const CLI::ExtrasError& e) {
            refusal = cli::unexpected_arguments(app, argc, argv);
        } catch (const CLI::ParseError& e) {
            // CLI11 exits 100-127 on its own; bad input is status 2 everywhere in nadyn.
            std::string message = e.what();
            if (message.empty()) message = e.get_name();
            refusal = "nadyn: " + message + " (see 'nadyn --help')";
        }
    }
    const start_agreement agreed =
        ranks.agree_on_start(parallel_context::command_hash(argc, argv), !refusal.empty());
    if (agreed.refused_rank >= 0) {
        // The lowest rank that refused speaks for the job, naming itself unless it is rank 0.
        if (ranks.rank() == agreed.refused_rank) {
            if (ranks.rank() != 0 && refusal.rfind("nadyn: ", 0) == 0)
                refusal.insert(7, "rank " + std::to_string(ranks.rank()) + ": ");
            std::cerr << refusal << '\n';
        }
        return 2;
    }
    if (agreed.differing_rank >= 0) {
        err << "nadyn: MPI rank " << agreed.differing_rank
            << " was started with other arguments than rank 0; every rank of a job must run "
               "the same command (mpirun -np P nadyn ...), so none runs\n";
        return 2;
    }
    if (answer) return ranks.root() ? answer() : 0;
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
    } catch (const out_of_memory& e) {
        err << "nadyn: " << e.what() << '\n';
        return 1;
    } catch (const std::bad_alloc&) {
        err << "nadyn: out of memory (an allocation failed)\n";
        return 1;
    } catch (const std::exception& e) {
        err << "nadyn: internal error: " << e.what() << '\n';
        return 1;
    }
    return 2;
}
