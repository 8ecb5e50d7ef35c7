#include "stop_signal.hpp"

#include <csignal>
#include <cstring>

#include <unistd.h>

namespace nadyn::cli {

namespace {

std::atomic<bool> stop_token{false};
// The signal that set the token first (0: none); it decides the exit status.
std::atomic<int> stop_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "set from a signal handler");

// Seconds a stopped run may take to write its last frame and close: past them the process
// ends (SIGALRM) with the status of the signal that stopped it. A run stuck inside a library
// call (HDF5 retrying a read of damaged metadata, a blocked open) polls no stop token, and
// would otherwise ignore the signal for ever; the frames it flushed before stay readable
// (SWMR), and readers clear the dead writer's mark.
constexpr unsigned stop_grace_seconds = 8;

extern "C" void request_stop(int signal) {
    // The first signal starts the grace period; later ones neither restart nor extend it.
    int none = 0;
    if (stop_signal.compare_exchange_strong(none, signal)) ::alarm(stop_grace_seconds);
    stop_token.store(true);
}

extern "C" void end_after_grace(int) {
    const int signal = stop_signal.load();
    if (signal == 0) { // an alarm nadyn did not set: its default action
        std::signal(SIGALRM, SIG_DFL);
        std::raise(SIGALRM);
        return;
    }
    // write(2) and _exit(2) are async-signal-safe; stdio and exit() are not.
    const char* message = signal == SIGINT
                              ? "nadyn: stopped by SIGINT, but the run did not end within 8 s "
                                "(stuck in a library call); ended, the frames flushed so far "
                                "are kept\n"
                              : "nadyn: stopped by SIGTERM, but the run did not end within 8 s "
                                "(stuck in a library call); ended, the frames flushed so far "
                                "are kept\n";
    const ssize_t ignored = ::write(STDERR_FILENO, message, std::strlen(message));
    (void)ignored;
    ::_exit(128 + signal);
}

} // namespace

const std::atomic<bool>* install_stop_signals() {
    stop_token.store(false);
    stop_signal.store(0);
    std::signal(SIGALRM, end_after_grace);
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    return &stop_token;
}

bool stop_signalled() {
    return stop_token.load();
}

int stopped_status() {
    const int signal = stop_signal.load();
    return 128 + (signal == 0 ? SIGINT : signal);
}

} // namespace nadyn::cli
