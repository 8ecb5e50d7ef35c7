#include "nadyn/files/child_reader.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>

namespace nadyn {

namespace {

// How the child's read ended, as the first byte of its report on the result pipe.
enum class ending : char { result = 'r', input = 'i', io = 'o', numerical = 'n', other = 'x' };

// Everything readable from `fd` until its writer closes it.
std::string drain(int fd) {
    std::string text;
    char buffer[65536];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got > 0) {
            text.append(buffer, static_cast<std::size_t>(got));
        } else if (got == 0 || errno != EINTR) {
            return text;
        }
    }
}

void write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t put = ::write(fd, text.data() + done, text.size() - done);
        if (put > 0)
            done += static_cast<std::size_t>(put);
        else if (errno != EINTR)
            return;
    }
}

std::string signal_name(int signal) {
    switch (signal) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGABRT:
        return "SIGABRT";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    case SIGKILL:
        return "SIGKILL";
    case SIGTERM:
        return "SIGTERM";
    case SIGINT:
        return "SIGINT";
    default:
        return "signal " + std::to_string(signal);
    }
}

struct pipe_pair {
    int read_end = -1, write_end = -1;
    pipe_pair() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0)
            throw io_error(std::string("cannot start a reader process: pipe: ") +
                           std::strerror(errno));
        read_end = fds[0];
        write_end = fds[1];
    }
    ~pipe_pair() {
        if (read_end >= 0) ::close(read_end);
        if (write_end >= 0) ::close(write_end);
    }
    pipe_pair(const pipe_pair&) = delete;
    pipe_pair& operator=(const pipe_pair&) = delete;
    void close_write() {
        ::close(write_end);
        write_end = -1;
    }
};

// Ends the child at once, by the system call itself: the sanitizers intercept _exit to check
// for leaks, and the child's heap is the parent's copy, not the child's to free.
[[noreturn]] void end_child(int status) {
    ::syscall(SYS_exit_group, status);
    ::_exit(status); // not reached
}

// The child's side: run the read with standard output to `out`, report its ending on
// `report`, and leave without running exit handlers (HDF5's would close what the damage may
// have left half-open, and the parent's buffers are not the child's to flush).
[[noreturn]] void run_child(const std::function<int()>& read, int out, int report, pid_t parent) {
    // Dies with its parent: a parent ended by SIGTERM leaves no reader behind.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) end_child(1);
    ::dup2(out, STDOUT_FILENO);
    // The child's own words on a crash (glibc's "free(): invalid pointer", a sanitizer's
    // report of libhdf5 reading damaged metadata) stay in the child: the parent reports it in
    // one line.
    if (const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0)
        ::dup2(null, STDERR_FILENO);
    std::string message;
    try {
        const int status = read();
        std::fflush(stdout);
        std::cout.flush();
        message = static_cast<char>(ending::result) + std::to_string(status);
    } catch (const input_error& e) {
        message = static_cast<char>(ending::input) + std::string(e.what());
    } catch (const io_error& e) {
        message = static_cast<char>(ending::io) + std::string(e.what());
    } catch (const numerical_fault& e) {
        message = static_cast<char>(ending::numerical) + std::string(e.what());
    } catch (const std::exception& e) {
        message = static_cast<char>(ending::other) + std::string(e.what());
    }
    std::fflush(stdout);
    write_all(report, message);
    end_child(0);
}

} // namespace

child_read read_in_child(const std::string& path, const std::function<int()>& read) {
    pipe_pair out, report;
    // Whatever the parent printed but has not flushed would be printed twice.
    std::fflush(nullptr);
    std::cout.flush();
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0)
        throw io_error("cannot start a reader process for '" + path +
                       "': fork: " + std::strerror(errno));
    if (pid == 0) run_child(read, out.write_end, report.write_end, parent);
    out.close_write();
    report.close_write();
    // The child writes its output first and its report last (a few bytes, within the pipe's
    // buffer), so reading them in that order cannot block it.
    child_read result;
    result.output = drain(out.read_end);
    const std::string ended = drain(report.read_end);
    int wait_status = 0;
    while (::waitpid(pid, &wait_status, 0) < 0)
        if (errno != EINTR)
            throw io_error("cannot wait for the reader process of '" + path +
                           "': " + std::strerror(errno));
    if (WIFSIGNALED(wait_status))
        throw io_error("'" + path + "': damaged HDF5 metadata (the reader crashed: " +
                       signal_name(WTERMSIG(wait_status)) + ")");
    if (ended.empty())
        throw io_error("'" + path + "': the reader process ended without a result (exit status " +
                       std::to_string(WEXITSTATUS(wait_status)) + ")");
    const std::string text = ended.substr(1);
    switch (static_cast<ending>(ended[0])) {
    case ending::result:
        result.status = std::stoi(text);
        return result;
    case ending::input:
        throw input_error(text);
    case ending::io:
        throw io_error(text);
    case ending::numerical:
        throw numerical_fault(text);
    case ending::other:
        break;
    }
    throw std::runtime_error(text);
}

} // namespace nadyn
