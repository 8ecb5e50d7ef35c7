#pragma once
// The program's one stop token. SIGINT and SIGTERM set it; a command installs the handlers
// just before its run (not at start-up, so that a signal during parsing or input checks
// still ends the process at once) and hands the token to the library, which polls it
// before every step and writes the last good state as a frame. The library itself installs
// no handler and keeps no flag: a run in a Python process or a test has its own token.
#include <atomic>

namespace nadyn::cli {

// Clears the token, installs the handlers of SIGINT and SIGTERM, and returns the token.
const std::atomic<bool>* install_stop_signals();

// Whether a signal has set the token since the last install_stop_signals().
bool stop_signalled();

} // namespace nadyn::cli
