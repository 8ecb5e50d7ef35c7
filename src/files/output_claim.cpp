#include "files/output_claim.hpp"

#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace nadyn::detail {

namespace {

const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

input_error not_regular(const std::string& path, mode_t mode) {
    if (S_ISDIR(mode))
        return input_error("output file '" + path +
                           "' is a directory; give a file name (for example '" + path +
                           "/run.h5')");
    return input_error("output file '" + path + "' is " + kind_of(mode) +
                       ", not a regular file; nadyn writes (and --force replaces) only regular "
                       "files");
}

input_error held_by_another(const std::string& path, const char* advice) {
    return input_error("'" + path +
                       "' is being written by another process (a run or sweep still going); " +
                       advice);
}

constexpr const char* choose_another = "wait for it to stop, or choose another output file";

// A write lock on the whole file, owned by this open file description. false: another
// description holds a lock on it.
bool try_lock(int fd) {
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0;
    if (::fcntl(fd, F_OFD_SETLK, &lock) == 0) return true;
    if (errno == EAGAIN || errno == EACCES) return false;
    // A kernel without OFD locks (before Linux 3.15): a process-wide lock still keeps other
    // processes out.
    if (errno == EINVAL)
        return ::fcntl(fd, F_SETLK, &lock) == 0 || !(errno == EAGAIN || errno == EACCES);
    return true; // a file system without locks: nothing to exclude with
}

std::string creation_failure(const std::string& path, int error) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path directory = fs::path(path).parent_path();
    if (directory.empty()) directory = ".";
    if (!fs::exists(directory, ec)) return "directory '" + directory.string() + "' does not exist";
    if (!fs::is_directory(directory, ec)) return "'" + directory.string() + "' is not a directory";
    return std::string(std::strerror(error)) + " (directory '" + directory.string() + "')";
}

// A symbolic link whose target does not exist: stat() says ENOENT, but O_CREAT | O_EXCL
// refuses the path (EEXIST) and a plain O_CREAT would create the file wherever the link
// points. Refused like any other path that is not a regular file, with or without --force.
void refuse_dangling_link(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return;
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(path, ec).string();
    throw input_error("output file '" + path + "' is a dangling symbolic link (to '" + target +
                      "', which does not exist); nadyn writes (and --force replaces) only "
                      "regular files: remove the link or choose another output file");
}

std::string kib(std::uintmax_t bytes) {
    return std::to_string((bytes + 1023) >> 10) + " KiB";
}

} // namespace

void output_claim::check(const std::string& path, bool overwrite,
                         const std::function<bool(const std::string&)>& holds_no_data) {
    if (path.empty())
        throw input_error("the output file name is empty (omit --out for a new descriptive name)");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) refuse_dangling_link(path);
        return;
    }
    if (!S_ISREG(st.st_mode)) throw not_regular(path, st.st_mode);
    if (!overwrite && st.st_size > 0 && (!holds_no_data || !holds_no_data(path)))
        throw input_error("output file '" + path +
                          "' already exists; pass --force to overwrite it");
}

output_claim output_claim::create(const std::string& path, bool overwrite,
                                  const std::function<bool(const std::string&)>& holds_no_data) {
    if (path.empty())
        throw input_error("the output file name is empty (omit --out for a new descriptive name)");
    // The path may change under us (another process creating or removing it): a few rounds.
    for (int attempt = 0; attempt < 8; ++attempt) {
        struct stat before {};
        if (::stat(path.c_str(), &before) != 0) {
            if (errno != ENOENT)
                throw input_error("cannot use output file '" + path + "': " + std::strerror(errno));
            refuse_dangling_link(path);
            // O_EXCL: of two processes creating the same path, exactly one succeeds.
            const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd < 0) {
                if (errno == EEXIST) continue;
                const int error = errno;
                throw input_error("cannot create output file '" + path +
                                  "': " + creation_failure(path, error));
            }
            output_claim claim(path, fd);
            claim.m_created = true;
            // A --force writer may have opened it between our create and our lock.
            if (!try_lock(fd)) throw held_by_another(path, choose_another);
            return claim;
        }
        if (!S_ISREG(before.st_mode)) throw not_regular(path, before.st_mode);
        const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
            if (errno == ENOENT) continue;
            throw input_error("cannot open output file '" + path + "': " + std::strerror(errno));
        }
        output_claim claim(path, fd);
        struct stat opened {};
        if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode))
            throw not_regular(path, opened.st_mode);
        if (!try_lock(fd)) throw held_by_another(path, choose_another);
        if (!overwrite && opened.st_size > 0) {
            if (!holds_no_data || !holds_no_data(path))
                throw input_error("output file '" + path +
                                  "' already exists; pass --force to overwrite it");
            claim.m_replaced_empty = true;
        }
        // Still the file we locked (not replaced between the stat and the open)?
        struct stat now {};
        if (::stat(path.c_str(), &now) != 0 || now.st_dev != opened.st_dev ||
            now.st_ino != opened.st_ino)
            continue;
        return claim;
    }
    throw input_error("output file '" + path +
                      "' keeps being created and removed by another process");
}

output_claim output_claim::existing(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw input_error("cannot open '" + path + "': " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        throw input_error("'" + path + "' is " + kind_of(st.st_mode) + ", not a regular file");
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        throw input_error("cannot open '" + path + "' for writing: " + std::strerror(errno));
    output_claim claim(path, fd);
    if (!try_lock(fd)) throw held_by_another(path, "resume it once that process has stopped");
    return claim;
}

output_claim::output_claim(output_claim&& other) noexcept
    : m_path(std::move(other.m_path)), m_fd(std::exchange(other.m_fd, -1)),
      m_reserved_end(std::exchange(other.m_reserved_end, 0)),
      m_replaced_empty(other.m_replaced_empty), m_created(other.m_created) {}

output_claim& output_claim::operator=(output_claim&& other) noexcept {
    if (this != &other) {
        release();
        m_path = std::move(other.m_path);
        m_fd = std::exchange(other.m_fd, -1);
        m_reserved_end = std::exchange(other.m_reserved_end, 0);
        m_replaced_empty = other.m_replaced_empty;
        m_created = other.m_created;
    }
    return *this;
}

output_claim::~output_claim() {
    release();
}

void output_claim::release() noexcept {
    if (m_fd < 0) return;
    // Blocks allocated beyond the end that no write used: truncating to the current size
    // returns them (ext4, XFS and tmpfs drop preallocation past the end on truncate).
    struct stat st {};
    if (m_reserved_end > 0 && ::fstat(m_fd, &st) == 0 &&
        m_reserved_end > static_cast<std::uintmax_t>(st.st_size))
        (void)::ftruncate(m_fd, st.st_size);
    ::close(m_fd); // releases the lock
    m_fd = -1;
    m_reserved_end = 0;
}

void output_claim::reserve(std::uintmax_t bytes, const std::string& what) {
    struct stat st {};
    if (::fstat(m_fd, &st) != 0)
        throw io_error(what + ": cannot query '" + m_path + "': " + std::strerror(errno));
    const auto size = static_cast<std::uintmax_t>(st.st_size);
    const std::uintmax_t target = size + bytes;
    // Reserved ahead of `target` (half as much again, 256 KiB to 8 MiB), within the file
    // size limit: each extension is an extent of its own, and the blocks left beyond the end
    // are returned at release by a truncation whose cost grows with the extents (a small
    // run's 71 extensions, one per frame, cost its process 2.6 ms on ext4: 1.6 ms to
    // truncate, against 0.06 ms for one extension).
    std::uintmax_t ahead =
        std::clamp(target / 2, std::uintmax_t{256} << 10, std::uintmax_t{8} << 20);
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        const std::uintmax_t room = size >= limit.rlim_cur ? 0 : limit.rlim_cur - size;
        if (room < bytes)
            throw io_error(what + " (the file size limit, ulimit -f, leaves " + kib(room) +
                           ", about " + kib(bytes) + " needed)");
        ahead = std::min(ahead, room - bytes);
    }
    // A truncation (HDF5 creating the file) returns what was reserved beyond the end.
    if (m_reserved_end > size && static_cast<std::uintmax_t>(st.st_blocks) * 512 < m_reserved_end)
        m_reserved_end = 0;
    if (target <= m_reserved_end) return;
    // Everything below m_reserved_end is allocated already (holes included: the first
    // reservation starts at 0).
    const std::uintmax_t start = m_reserved_end;
    // Where only `target` fits (a disk nearly full), that much is reserved, below.
    if (ahead > 0 && ::fallocate(m_fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(start),
                                 static_cast<off_t>(target + ahead - start)) == 0) {
        m_reserved_end = target + ahead;
        return;
    }
    if (::fallocate(m_fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(start),
                    static_cast<off_t>(target - start)) == 0) {
        m_reserved_end = target;
        return;
    }
    const int error = errno;
    struct statvfs fs {};
    const bool known = ::fstatvfs(m_fd, &fs) == 0;
    const std::uintmax_t available =
        known ? std::uintmax_t(fs.f_bavail) * std::uintmax_t(fs.f_frsize) : 0;
    if (error == ENOSPC || error == EDQUOT)
        throw io_error(what + " (" + kib(available) + " free, about " + kib(bytes) + " needed)");
    if (error == EOPNOTSUPP || error == ENOSYS || error == EINVAL) {
        // No preallocation here: the free space is the best check there is.
        if (known && available < bytes)
            throw io_error(what + " (" + kib(available) + " free, about " + kib(bytes) +
                           " needed)");
        return;
    }
    throw io_error(what + " (" + std::strerror(error) + ")");
}

bool writer_holds(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return false;
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0;
    const bool held = ::fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
    ::close(fd);
    return held;
}

bool writer_gone(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return false;
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0;
    const bool gone = ::fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type == F_UNLCK;
    ::close(fd);
    return gone;
}

void output_claim::remove_file() noexcept {
    if (m_fd < 0) return;
    struct stat mine {
    }, named{};
    if (::fstat(m_fd, &mine) != 0 || ::lstat(m_path.c_str(), &named) != 0) return;
    if (!S_ISREG(named.st_mode) || named.st_dev != mine.st_dev || named.st_ino != mine.st_ino)
        return;
    ::unlink(m_path.c_str());
}

} // namespace nadyn::detail

namespace nadyn {

void refuse_live_output(const std::string& path) {
    if (detail::writer_holds(path))
        throw input_error("'" + path +
                          "' is being written by another process (a run or sweep still going); "
                          "resume it once that process has stopped");
}

} // namespace nadyn
