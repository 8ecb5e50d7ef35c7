#pragma once
// Thin RAII wrappers over the HDF5 1.10 C API. Each C call is made in one place and
// checked; a failure throws io_error naming the file and the object, with the reason HDF5
// gives (its own error stack printing is turned off, so users see only that one line).
// Handles are move-only and close themselves; destructors never throw.
#include "nadyn/model/parameters.hpp"

#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace nadyn::detail {

// Held by every wrapper call (and by code that calls the C API directly): the HDF5 library
// is not thread-safe, and several runs may use it from several threads of one process.
// While the outermost guard of a thread's calls is held, HDF5's own printing of error stacks
// is off (nadyn reports one line instead, from the stack: hdf5_reason); the process's setting
// (h5py's, a host program's) is put back when it is released.
class hdf5_guard {
  public:
    hdf5_guard();
    ~hdf5_guard();
    hdf5_guard(const hdf5_guard&) = delete;
    hdf5_guard& operator=(const hdf5_guard&) = delete;
    // Sets the process's own error-stack handler, the one put back when the outermost guard
    // is released (call it with a guard held).
    static void set_process_default(H5E_auto2_t function, void* data);

  private:
    std::unique_lock<std::recursive_mutex> m_lock;
    bool m_outermost = false;
    H5E_auto2_t m_saved_function = nullptr;
    void* m_saved_data = nullptr;
};
[[nodiscard]] inline hdf5_guard hdf5_lock() {
    return {};
}

// The variable-length UTF-8 string type (h5py's str), as a file type and as a memory type
// (a value in memory is a const char*). One for the process, never closed.
[[nodiscard]] hid_t hdf5_string_type();

// One HDF5 identifier together with the function that releases it.
class hdf5_id {
  public:
    using close_function = herr_t (*)(hid_t);

    hdf5_id() noexcept = default;
    hdf5_id(hid_t id, close_function close) noexcept : m_id(id), m_close(close) {}
    hdf5_id(hdf5_id&& other) noexcept;
    hdf5_id& operator=(hdf5_id&& other) noexcept;
    hdf5_id(const hdf5_id&) = delete;
    hdf5_id& operator=(const hdf5_id&) = delete;
    ~hdf5_id() { reset(); }

    void reset() noexcept;
    // Gives up ownership: the identifier is no longer closed here.
    [[nodiscard]] hid_t release() noexcept;
    [[nodiscard]] hid_t get() const noexcept { return m_id; }
    [[nodiscard]] bool valid() const noexcept { return m_id >= 0; }

  private:
    hid_t m_id = H5I_INVALID_HID;
    close_function m_close = nullptr;
};

// A file's root group, a group or a dataset. It remembers its file path and its path in the
// file, so every failure message can name both.
class hdf5_object {
  public:
    [[nodiscard]] hid_t id() const noexcept { return m_id.get(); }
    [[nodiscard]] const std::string& file_path() const { return m_file_path; }
    [[nodiscard]] const std::string& name() const { return m_name; }

    [[nodiscard]] bool has_attribute(const std::string& name) const;
    // Scalar attributes (int64, double, variable-length UTF-8 string); an existing attribute
    // of that name is replaced.
    void write_attribute(const std::string& name, const parameter_value& value);
    void write_attribute(const std::string& name, const std::vector<int>& values);
    void write_attribute(const std::string& name, const std::vector<std::string>& values);
    // An attribute of `shape` (empty: a scalar) whose values are of `type` in the file and in
    // `data` alike (e.g. H5T_NATIVE_SCHAR).
    void write_attribute(const std::string& name, hid_t type, const std::vector<hsize_t>& shape,
                         const void* data);
    // A scalar integer (as int64), float (as double) or string attribute; nullopt when absent
    // or of another kind.
    [[nodiscard]] std::optional<parameter_value> read_attribute(const std::string& name) const;
    // An integer attribute of any rank, flattened; nullopt when absent or not integer.
    [[nodiscard]] std::optional<std::vector<std::int64_t>>
    read_integers(const std::string& name) const;
    // A string attribute of any rank, flattened (a null string reads as ""); nullopt when
    // absent or not a string.
    [[nodiscard]] std::optional<std::vector<std::string>>
    read_strings(const std::string& name) const;
    // In creation order where the object tracks it, else in name order.
    [[nodiscard]] std::vector<std::string> attribute_names() const;

  protected:
    hdf5_object(hdf5_id id, std::string file_path, std::string name);
    [[nodiscard]] std::string describe() const; // "'/a/b' in 'file.h5'"
    [[nodiscard]] std::string child_path(const std::string& child) const;

    hdf5_id m_id;
    std::string m_file_path;
    std::string m_name;
};

class hdf5_dataset : public hdf5_object {
  public:
    [[nodiscard]] std::vector<hsize_t> shape() const;
    [[nodiscard]] std::vector<hsize_t> chunk_shape() const; // empty if not chunked
    [[nodiscard]] H5T_class_t type_class() const;

    // Sets the extent along the first axis to row + 1 and writes one row (everything after
    // the first axis) from `data`, laid out in `memory_type` (e.g. H5T_NATIVE_DOUBLE).
    void write_row(hsize_t row, hid_t memory_type, const void* data);
    // Sets the extent along the first axis to first + count and writes rows [first, first +
    // count) from `data` (count rows, each laid out as write_row's), in one call.
    void write_rows(hsize_t first, hsize_t count, hid_t memory_type, const void* data);
    // Reads `count` rows from `first` along the first axis, converted to `memory_type`.
    void read_rows(hsize_t first, hsize_t count, hid_t memory_type, void* out) const;
    void read_all(hid_t memory_type, void* out) const;
    void write_all(hid_t memory_type, const void* data);
    // The block of `count` values per axis from `start` (one entry per axis each; both empty
    // for a scalar dataset), from or into `data`, flat in row-major order, in `memory_type`.
    // A block the dataset's shape does not hold is an io_error (the file is not as written).
    void write_block(const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                     hid_t memory_type, const void* data);
    void read_block(const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                    hid_t memory_type, void* out) const;
    // Makes this 1-D dataset a dimension scale called `name` (what netCDF and xarray read as
    // the coordinate of a dimension).
    void make_scale(const std::string& name);
    // Attaches the dimension scale `scale` to axis `axis` of this dataset.
    void attach_scale(const hdf5_dataset& scale, unsigned axis);
    // Sets the extent along the first axis (shrinking drops the rows beyond `rows`).
    void set_rows(hsize_t rows);

  private:
    friend class hdf5_group;
    using hdf5_object::hdf5_object;
};

class hdf5_group : public hdf5_object {
  public:
    // Whether an object exists at `path` (relative, may have several components).
    [[nodiscard]] bool has(const std::string& path) const;
    // H5I_GROUP, H5I_DATASET, H5I_DATATYPE; `path` must exist.
    [[nodiscard]] H5I_type_t kind(const std::string& path) const;

    // track_order: links and attributes come back in creation order.
    hdf5_group create_group(const std::string& name, bool track_order = false);
    [[nodiscard]] hdf5_group open_group(const std::string& path) const;
    [[nodiscard]] hdf5_dataset open_dataset(const std::string& path) const;
    // A dataset extendible along its first axis (initially 0 long); row_shape is the shape
    // after that axis. compress: shuffle + deflate level 4.
    hdf5_dataset create_series(const std::string& name, hid_t file_type,
                               const std::vector<hsize_t>& row_shape,
                               const std::vector<hsize_t>& chunk, bool compress);
    // A fixed-size dataset of doubles, written at once.
    hdf5_dataset create_dataset(const std::string& name, const std::vector<hsize_t>& shape,
                                const double* data);
    // A fixed-size dataset of `file_type`, written later (write_block, write_all); until then
    // its values read as `fill`, one value of `file_type` (nullptr: HDF5's default fill, zero
    // or an empty string). chunk: empty for contiguous storage, else one extent per axis,
    // each clamped to [1, the axis's length].
    hdf5_dataset create_dataset(const std::string& name, hid_t file_type,
                                const std::vector<hsize_t>& shape,
                                const std::vector<hsize_t>& chunk = {}, const void* fill = nullptr);
    // Child link names, in creation order where tracked, else in name order.
    [[nodiscard]] std::vector<std::string> children() const;
    void remove(const std::string& name);

  protected:
    friend class hdf5_file;
    using hdf5_object::hdf5_object;
};

// An open file; as a group it is the root group.
class hdf5_file : public hdf5_group {
  public:
    // Creates or truncates the file at `path`, which the caller has claimed (output_claim:
    // checked, locked, room reserved). Throws io_error with a reason a user can act on.
    // swmr_format: the HDF5 1.10 file format, which single-writer/multiple-reader mode
    // needs (readable by HDF5 >= 1.10); otherwise the 1.8 format.
    static hdf5_file create(const std::string& path, bool swmr_format = false);
    // Throws input_error if the file does not exist or is not an HDF5 file.
    static hdf5_file open_read_only(const std::string& path);
    // For appending to a trajectory; same errors as open_read_only, io_error if not writable.
    // clear_swmr_mark: also open a file whose SWMR writer was killed (as `h5clear -s`);
    // only for a file no other process is writing.
    static hdf5_file open_read_write(const std::string& path, bool clear_swmr_mark = false);
    // What `h5clear -s` does, for a file whose writer is dead: clears the superblock's
    // "open for writing" marks, and says whether it did. Only when no nadyn writer holds the
    // file's claim (writer_gone) and HDF5's own lock can be taken (no other HDF5 program has
    // it open for writing), so a live writer's file is never touched.
    static bool clear_dead_writer_mark(const std::string& path);
    // false for a file that exists but is not HDF5; input_error if it does not exist.
    static bool is_hdf5(const std::string& path);
    // Reads every object header, every attribute and the first and last value of every
    // dataset of the file at `path`, with open_read_only's bounded retries: io_error (or
    // input_error) at the first damage. A reader that has no bound of its own on SWMR
    // retries (h5py) calls it first, so that damaged metadata cannot hold it in HDF5's
    // retry loop.
    static void verify_readable(const std::string& path);

    void flush();
    void close() noexcept { m_id.reset(); }
    // Enters single-writer/multiple-reader mode: readers may open the file while frames are
    // appended. Every dataset must exist by now, and no attribute may be written after.
    void start_swmr_write();
    // Whether the file's format allows SWMR (created with swmr_format).
    [[nodiscard]] bool supports_swmr() const;

  private:
    using hdf5_group::hdf5_group;
};

} // namespace nadyn::detail
