#pragma once
// Helpers for the command-line tests: run a program (the nadyn binary by default) with an
// argument vector, no shell in between, and capture its exit status, stdout and stderr
// separately; scratch directories; snapshots of files so a test can prove one untouched.
#include <doctest/doctest.h>
#include <hdf5.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace nadyn_test {

namespace fs = std::filesystem;

inline const std::string nadyn_path = NADYN_CLI_PATH;

struct run_options {
    std::string cwd;                        // empty: the test's working directory
    std::map<std::string, std::string> env; // set (or override) these variables
    bool inherit_env = true;                // false: the child sees only `env`
    // run_program kills a child still running then (a hung child must not hang the suite).
    std::chrono::milliseconds timeout = std::chrono::seconds(60);
};

// Options that only set the working directory.
inline run_options in_dir(const std::string& dir) {
    run_options options;
    options.cwd = dir;
    return options;
}

struct run_result {
    int status = -1; // exit status, or 128 + signal when killed by a signal (as a shell)
    int signal = 0;  // the signal that killed the child, 0 if it exited
    std::string out; // everything written to stdout
    std::string err; // everything written to stderr
};

// Number of lines of a captured stream (a last line without '\n' counts too).
inline std::size_t line_count(const std::string& text) {
    std::size_t lines = 0;
    for (char c : text)
        if (c == '\n') ++lines;
    if (!text.empty() && text.back() != '\n') ++lines;
    return lines;
}

inline std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::string line;
    for (char c : text) {
        if (c == '\n') {
            lines.push_back(line);
            line.clear();
        } else {
            line += c;
        }
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
}

inline bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

inline std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++count;
    return count;
}

// A child process whose stdout and stderr go to pipes. Started at construction; wait()
// drains both pipes (so a chatty child never blocks on a full pipe while we wait) and
// reaps it. The destructor kills and reaps a child that was never waited for.
class child_process {
  public:
    child_process(const std::string& program, const std::vector<std::string>& args,
                  const run_options& options = {}) {
        // Everything the child needs is built before fork: between fork and exec only
        // async-signal-safe calls are allowed.
        std::vector<std::string> argv_storage;
        argv_storage.push_back(program);
        argv_storage.insert(argv_storage.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : argv_storage)
            argv.push_back(a.data());
        argv.push_back(nullptr);

        std::vector<std::string> env_storage;
        if (options.inherit_env) {
            for (char** e = environ; *e; ++e) {
                const std::string entry = *e;
                const std::string name = entry.substr(0, entry.find('='));
                if (!options.env.count(name)) env_storage.push_back(entry);
            }
        }
        for (const auto& [name, value] : options.env)
            env_storage.push_back(name + "=" + value);
        std::vector<char*> envp;
        for (auto& e : env_storage)
            envp.push_back(e.data());
        envp.push_back(nullptr);

        int out_pipe[2], err_pipe[2];
        if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
            throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
        const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();

        m_pid = fork();
        if (m_pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
        if (m_pid == 0) {
            const int null_in = open("/dev/null", O_RDONLY);
            if (null_in >= 0) dup2(null_in, STDIN_FILENO);
            dup2(out_pipe[1], STDOUT_FILENO);
            dup2(err_pipe[1], STDERR_FILENO);
            if (cwd && chdir(cwd) != 0) _exit(126);
            execve(argv[0], argv.data(), envp.data());
            _exit(127);
        }
        close(out_pipe[1]);
        close(err_pipe[1]);
        m_out_fd = out_pipe[0];
        m_err_fd = err_pipe[0];
    }

    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    ~child_process() {
        if (m_pid > 0 && !m_reaped) {
            ::kill(m_pid, SIGKILL);
            int status = 0;
            waitpid(m_pid, &status, 0);
        }
        if (m_out_fd >= 0) close(m_out_fd);
        if (m_err_fd >= 0) close(m_err_fd);
    }

    [[nodiscard]] pid_t pid() const { return m_pid; }

    void send_signal(int sig) const { ::kill(m_pid, sig); }

    // Waits for the child to end, at most `timeout`; a child still running then is killed
    // (status 128 + 9) so a hanging binary fails the test instead of hanging ctest.
    run_result wait(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
        run_result result;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        bool killed = false;
        while (m_out_fd >= 0 || m_err_fd >= 0) {
            pollfd fds[2];
            nfds_t count = 0;
            if (m_out_fd >= 0) fds[count++] = {m_out_fd, POLLIN, 0};
            if (m_err_fd >= 0) fds[count++] = {m_err_fd, POLLIN, 0};
            const int ready = poll(fds, count, 100);
            if (ready < 0 && errno != EINTR) break;
            for (nfds_t i = 0; i < count && ready > 0; ++i) {
                if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                char buffer[4096];
                const ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
                std::string& sink = fds[i].fd == m_out_fd ? result.out : result.err;
                if (got > 0) {
                    sink.append(buffer, static_cast<std::size_t>(got));
                } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                    int& fd = fds[i].fd == m_out_fd ? m_out_fd : m_err_fd;
                    close(fd);
                    fd = -1;
                }
            }
            if (!killed && std::chrono::steady_clock::now() > deadline) {
                ::kill(m_pid, SIGKILL);
                killed = true;
            }
        }
        int status = 0;
        while (waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_reaped = true;
        if (WIFEXITED(status)) {
            result.status = WEXITSTATUS(status);
        } else if (WIFSIGNALED(status)) {
            result.signal = WTERMSIG(status);
            result.status = 128 + result.signal;
        }
        return result;
    }

  private:
    pid_t m_pid = -1;
    int m_out_fd = -1, m_err_fd = -1;
    bool m_reaped = false;
};

// Runs `program` with `args` to completion.
inline run_result run_program(const std::string& program, const std::vector<std::string>& args,
                              const run_options& options = {}) {
    child_process child(program, args, options);
    return child.wait(options.timeout);
}

// Runs the nadyn binary under test.
inline run_result run_nadyn(const std::vector<std::string>& args, const run_options& options = {}) {
    return run_program(nadyn_path, args, options);
}

// A fresh, empty directory NADYN_TEST_TMPDIR/cli/<name> (its previous contents removed),
// so each test case starts from nothing and leaves its files for a post-mortem.
inline std::string scratch_dir(const std::string& name) {
    const fs::path dir = fs::path(NADYN_TEST_TMPDIR) / "cli" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

// Names (not paths) of the entries of `dir`, sorted; with `extension` (".h5") only those.
inline std::vector<std::string> list_files(const std::string& dir,
                                           const std::string& extension = "") {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (extension.empty() || entry.path().extension() == extension) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

// The bytes and modification time of a file: equal snapshots before and after a command
// show the command left the file alone.
struct file_snapshot {
    std::string bytes;
    fs::file_time_type mtime;
    bool operator==(const file_snapshot&) const = default;
};

inline file_snapshot snapshot(const std::string& path) {
    return {read_text(path), fs::last_write_time(path)};
}

// Polls `condition` every 20 ms until it holds or `timeout` passes; returns whether it held.
template <class Condition> bool wait_until(Condition condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

// Sends `signal` to `child` once `ready()` holds (required within 60 s) and returns how the
// child ended (waited for up to 30 s).
template <class Ready> run_result signal_when(child_process& child, int signal, Ready ready) {
    REQUIRE(wait_until(ready, std::chrono::seconds(60)));
    child.send_signal(signal);
    return child.wait(std::chrono::seconds(30));
}

// Whether an executable exists at `path`.
inline bool executable_exists(const std::string& path) {
    return access(path.c_str(), X_OK) == 0;
}

// One dataset of doubles for write_h5: any rank (shape), values row-major.
struct h5_dataset {
    std::string name;
    std::vector<hsize_t> shape;
    std::vector<double> values;
};

// Writes an HDF5 file holding exactly `datasets` at the root (init and weights files, and
// malformed ones), replacing any file at `path`.
inline void write_h5(const std::string& path, const std::vector<h5_dataset>& datasets) {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(file >= 0);
    for (const auto& d : datasets) {
        const hid_t space =
            H5Screate_simple(static_cast<int>(d.shape.size()), d.shape.data(), nullptr);
        REQUIRE(space >= 0);
        const hid_t set = H5Dcreate2(file, d.name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT,
                                     H5P_DEFAULT, H5P_DEFAULT);
        REQUIRE(set >= 0);
        REQUIRE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values.data()) >=
                0);
        H5Dclose(set);
        H5Sclose(space);
    }
    H5Fclose(file);
}

// Whether every component of `link` ("particles/tokens/position") exists in the file.
inline bool h5_has_path(const std::string& path, const std::string& link) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(file >= 0);
    bool present = true;
    std::string prefix;
    for (std::size_t start = 0; present && start < link.size();) {
        std::size_t end = link.find('/', start);
        if (end == std::string::npos) end = link.size();
        if (!prefix.empty()) prefix += '/';
        prefix.append(link, start, end - start);
        present = H5Lexists(file, prefix.c_str(), H5P_DEFAULT) > 0;
        start = end + 1;
    }
    H5Fclose(file);
    return present;
}

} // namespace nadyn_test
