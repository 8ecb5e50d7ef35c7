#include "stop_signal.hpp"

#include <csignal>

#include <unistd.h>

namespace nadyn::cli {

namespace {

std::atomic<bool> stop_token{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

// Seconds a stopped run may take to write its last frame and close: past them the process
// ends on SIGALRM (exit status 142). A run stuck inside a library call (HDF5 retrying a read
// of damaged metadata, a blocked open) polls no stop token, and would otherwise ignore the
// signal for ever; the frames it flushed before stay readable (SWMR), and readers clear the
// dead writer's mark.
constexpr unsigned stop_grace_seconds = 8;

extern "C" void request_stop(int) {
    stop_token.store(true);
    ::alarm(stop_grace_seconds); // async-signal-safe; a second signal restarts the count
}

} // namespace

const std::atomic<bool>* install_stop_signals() {
    stop_token.store(false);
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    return &stop_token;
}

bool stop_signalled() {
    return stop_token.load();
}

} // namespace nadyn::cli
