#include "stop_signal.hpp"

#include <csignal>

namespace nadyn::cli {

namespace {

std::atomic<bool> stop_token{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

extern "C" void request_stop(int) {
    stop_token.store(true);
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
