#pragma once
// A writer's hold on its output file: the checks before anything is written, the lock that
// keeps a second writer out, and the disk space each write needs, reserved before HDF5 sees
// the write.
//
// Why a reservation: HDF5 1.10 cannot recover from a failed write. Once a flush fails (a full
// disk, a file size limit), closing the file fails as well, the library keeps the half-closed
// file, and its exit handler crashes on it; the file is left unreadable. So no write may reach
// HDF5 that the disk cannot take: before each header, frame or sweep run, the claim allocates
// the blocks the write may need beyond the file's end (fallocate with FALLOC_FL_KEEP_SIZE, so
// the file's size and HDF5's view of it are unchanged). Allocation is atomic: another process
// filling the disk afterwards cannot take those blocks. Where a file system cannot preallocate,
// the claim falls back to checking the free space (statvfs). The file size limit (ulimit -f)
// is checked against the file's size in both cases.
//
// Why a lock: two writers of one file (two runs given the same --out, or a resume of a file a
// run is still writing) corrupt it. The claim holds an open-file-description lock (fcntl
// F_OFD_SETLK, a write lock on the whole file) for the writer's lifetime. It is separate from
// HDF5's own file locking (flock), which the writers turn off so that a reader (h5py, nadyn
// inspect) never makes a run fail; readers take no fcntl lock and are never refused by it.
// The lock is per open file description, so two writers in one process (sweep threads, the
// Python module) exclude each other too, and HDF5 closing its own descriptor of the file does
// not drop it. It is advisory and local: on NFS, locks depend on the server.
#include <cstdint>
#include <functional>
#include <string>

namespace nadyn::detail {

class output_claim {
  public:
    // Room HDF5 may need beyond a write's payload (object headers, chunk indexes, the heap
    // of attribute strings); every writer adds it to what it reserves.
    static constexpr std::uintmax_t metadata_margin = std::uintmax_t{256} << 10;

    // The checks of create() on the path as it is now, without creating or locking anything:
    // for failing early, before a run starts (create() repeats them atomically).
    static void check(const std::string& path, bool overwrite,
                      const std::function<bool(const std::string&)>& holds_no_data = {});

    // For a new file at `path`: refuses a path that exists but is not a regular file (a
    // device, a directory, a FIFO; even with overwrite), a file another writer holds, and an
    // existing file unless `overwrite` or `holds_no_data(path)` says it holds nothing (a file
    // left by a run stopped before its first frame; `replaced_empty()` then tells). The file
    // exists, empty or not, and is locked when this returns. input_error for all of these.
    static output_claim create(const std::string& path, bool overwrite,
                               const std::function<bool(const std::string&)>& holds_no_data = {});
    // For appending to an existing regular file: input_error if another writer holds it.
    static output_claim existing(const std::string& path);

    output_claim(output_claim&& other) noexcept;
    output_claim& operator=(output_claim&& other) noexcept;
    output_claim(const output_claim&) = delete;
    output_claim& operator=(const output_claim&) = delete;
    // Releases the blocks reserved beyond the file's end and the lock.
    ~output_claim();

    // Makes sure `bytes` more can be written beyond the file's current end. Throws io_error
    // naming the free space and `bytes` (prefixed by `what`) when the disk or the file size
    // limit cannot take them; nothing has been written then.
    void reserve(std::uintmax_t bytes, const std::string& what);
    // Removes the file if the path still names the file this claim created or truncated (a
    // regular file, same device and inode); never anything else. For a file whose header could
    // not be written.
    void remove_file() noexcept;

    [[nodiscard]] const std::string& path() const { return m_path; }
    [[nodiscard]] bool replaced_empty() const { return m_replaced_empty; }
    // Whether this claim made the file (it did not exist before).
    [[nodiscard]] bool created() const { return m_created; }

  private:
    output_claim(std::string path, int fd) : m_path(std::move(path)), m_fd(fd) {}
    void release() noexcept;

    std::string m_path;
    int m_fd = -1;
    std::uintmax_t m_reserved_end = 0; // blocks are allocated up to here
    bool m_replaced_empty = false;
    bool m_created = false;
};

// Whether the file at `path` holds no result of nadyn's: an HDF5 file with nothing in its root
// group, a trajectory without a frame, or a sweep file none of whose runs has an outcome. What
// a run or sweep stopped before its first frame leaves; false for anything else, and for a
// file that cannot be read. (src/files/h5md.cpp)
bool holds_no_results(const std::string& path);

// Whether a writer holds the claim's lock on the file at `path` now (a run or sweep still
// writing it). false when the file cannot be opened or the file system has no locks.
bool writer_holds(const std::string& path);

// Whether the file at `path` is known to have no live writer: the file system answers lock
// queries and no writer holds the claim's lock. false when in doubt (no locks, no file), so
// that what is safe only for a dead writer's file (clearing its write mark) is never done to
// a live one.
bool writer_gone(const std::string& path);

} // namespace nadyn::detail
