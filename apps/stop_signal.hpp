#pragma once
// The program's one stop token. SIGINT and SIGTERM set it; a command installs the handlers
// just before its run (not at start-up, so that a signal during parsing or input checks
// still ends the process at once) and hands the token to the library, which polls it
// before every step and writes the last good state as a frame. The library itself installs
// no handler and keeps no flag: a run in a Python process or a test has its own token.
//
// Every way a signal ends nadyn gives the same status, 128 + the signal's number, as a shell
// reports a process the signal killed: 130 for SIGINT, 143 for SIGTERM. A run that stops on
// its own returns stopped_status(); one still running 8 s after the signal (stuck in a
// library call) is ended then with the same status; before install_stop_signals() the
// signal's default action ends the process (the shell's 130 or 143).
#include <atomic>

namespace nadyn::cli {

// Clears the token, installs the handlers of SIGINT, SIGTERM and the grace period's SIGALRM,
// and returns the token.
const std::atomic<bool>* install_stop_signals();

// Whether a signal has set the token since the last install_stop_signals().
bool stop_signalled();

// The exit status of a stopped run: 128 + the first signal that set the token (130 when it
// was set without one, e.g. by the ranks of an MPI job agreeing to stop).
int stopped_status();

} // namespace nadyn::cli
