#include "files/hdf5.hpp"

#include "files/output_claim.hpp"

#include "nadyn/model/error.hpp"

#include <hdf5_hl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <variant>

#include <unistd.h>

namespace nadyn::detail {

namespace {

// Debian's HDF5 is built without its thread-safety option: one lock for the whole library
// serialises every call, so runs in several threads of one process (a sweep, the Python
// module) can each read and write their files.
std::recursive_mutex& library_mutex() {
    static std::recursive_mutex library;
    return library;
}
// How many guards the lock's holder has nested, and the outermost of them (only the holder
// reads or writes either).
int guard_depth = 0;
hdf5_guard* outermost_guard = nullptr;

} // namespace

hdf5_guard::hdf5_guard() : m_lock(library_mutex()) {
    if (guard_depth++ > 0) return;
    // HDF5 prints its whole error stack to stderr by default; nadyn reports one line instead,
    // and only around its own calls.
    m_outermost = true;
    outermost_guard = this;
    H5Eget_auto2(H5E_DEFAULT, &m_saved_function, &m_saved_data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

hdf5_guard::~hdf5_guard() {
    --guard_depth;
    if (!m_outermost) return;
    outermost_guard = nullptr;
    H5Eset_auto2(H5E_DEFAULT, m_saved_function, m_saved_data);
}

void hdf5_guard::set_process_default(H5E_auto2_t function, void* data) {
    if (outermost_guard) {
        outermost_guard->m_saved_function = function;
        outermost_guard->m_saved_data = data;
    } else {
        H5Eset_auto2(H5E_DEFAULT, function, data);
    }
}

namespace {

namespace fs = std::filesystem;

herr_t innermost_error(unsigned depth, const H5E_error2_t* error, void* out) {
    if (depth == 0 && error->desc) *static_cast<std::string*>(out) = error->desc;
    return 0;
}

// The reason for the last failure, from HDF5's error stack. The innermost entry is the most
// specific; when it quotes an errno message, that message alone is what a user needs.
std::string hdf5_reason() {
    std::string description;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_error, &description);
    H5Eclear2(H5E_DEFAULT);
    if (description.find("unable to lock file") != std::string::npos)
        return "the file is locked by another process (a run still writing it? setting "
               "HDF5_USE_FILE_LOCKING=FALSE allows reading it anyway)";
    const std::string marker = "error message = '";
    if (const auto start = description.find(marker); start != std::string::npos) {
        const auto begin = start + marker.size();
        return description.substr(begin, description.find('\'', begin) - begin);
    }
    return description.empty() ? "unknown HDF5 error" : description;
}

// Every C call goes through here: a negative result (HDF5's failure convention for herr_t,
// hid_t and htri_t alike) becomes an io_error.
template <class T> T check(T result, const std::string& what) {
    if (result < 0) throw io_error(what + ": " + hdf5_reason());
    return result;
}

hdf5_id checked_id(hid_t id, hdf5_id::close_function close, const std::string& what) {
    return {check(id, what), close};
}

hdf5_id utf8_string_type(std::size_t size, const std::string& what) {
    hdf5_id type = checked_id(H5Tcopy(H5T_C_S1), H5Tclose, what);
    check(H5Tset_size(type.get(), size), what);
    check(H5Tset_cset(type.get(), H5T_CSET_UTF8), what);
    return type;
}

hdf5_id simple_space(const std::vector<hsize_t>& dims, const std::string& what,
                     const hsize_t* max_dims = nullptr) {
    return checked_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max_dims),
                      H5Sclose, what);
}

herr_t collect_attribute(hid_t, const char* name, const H5A_info_t*, void* out) {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
}

herr_t collect_link(hid_t, const char* name, const H5L_info_t*, void* out) {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
}

// Creation order where the object tracks it (it is not an error to ask otherwise, only a
// failure we fall back from), else name order.
template <class Iterate>
std::vector<std::string> in_creation_order(Iterate iterate, const std::string& what) {
    std::vector<std::string> names;
    if (iterate(H5_INDEX_CRT_ORDER, &names) >= 0) return names;
    H5Eclear2(H5E_DEFAULT);
    names.clear();
    check(iterate(H5_INDEX_NAME, &names), what);
    return names;
}

// Why H5Fcreate failed, in terms a user can act on.
std::string creation_failure(const std::string& path) {
    const std::string hdf5 = hdf5_reason();
    std::error_code ec;
    fs::path directory = fs::path(path).parent_path();
    if (directory.empty()) directory = ".";
    if (fs::is_directory(path, ec)) return "it is a directory";
    if (!fs::exists(directory, ec)) return "directory '" + directory.string() + "' does not exist";
    if (!fs::is_directory(directory, ec)) return "'" + directory.string() + "' is not a directory";
    if (::access(directory.c_str(), W_OK) != 0)
        return std::string(std::strerror(errno)) + " (directory '" + directory.string() + "')";
    return hdf5;
}

} // namespace

hid_t hdf5_string_type() {
    const auto guard = hdf5_lock();
    // Made under the library lock rather than as a function-local static: a thread holding
    // the lock that waited here for another thread's static initialisation, itself waiting
    // for the lock, would deadlock.
    static hid_t type = H5I_INVALID_HID;
    if (type < 0)
        type = utf8_string_type(H5T_VARIABLE, "cannot make the HDF5 string type").release();
    return type;
}

// ---- hdf5_id ------------------------------------------------------------------------------

hdf5_id::hdf5_id(hdf5_id&& other) noexcept : m_id(other.m_id), m_close(other.m_close) {
    other.m_id = H5I_INVALID_HID;
    other.m_close = nullptr;
}

hdf5_id& hdf5_id::operator=(hdf5_id&& other) noexcept {
    if (this != &other) {
        reset();
        m_id = other.m_id;
        m_close = other.m_close;
        other.m_id = H5I_INVALID_HID;
        other.m_close = nullptr;
    }
    return *this;
}

hid_t hdf5_id::release() noexcept {
    const hid_t id = m_id;
    m_id = H5I_INVALID_HID;
    m_close = nullptr;
    return id;
}

void hdf5_id::reset() noexcept {
    const auto guard = hdf5_lock();
    // A failing close has nowhere to report to from a destructor; data written so far was
    // already flushed by the callers that care.
    if (m_id >= 0 && m_close) m_close(m_id);
    m_id = H5I_INVALID_HID;
    m_close = nullptr;
}

// ---- hdf5_object --------------------------------------------------------------------------

hdf5_object::hdf5_object(hdf5_id id, std::string file_path, std::string name)
    : m_id(std::move(id)), m_file_path(std::move(file_path)), m_name(std::move(name)) {}

std::string hdf5_object::describe() const {
    return "'" + m_name + "' in '" + m_file_path + "'";
}

std::string hdf5_object::child_path(const std::string& child) const {
    if (child.starts_with('/')) return child;
    return m_name == "/" ? "/" + child : m_name + "/" + child;
}

bool hdf5_object::has_attribute(const std::string& name) const {
    const auto guard = hdf5_lock();
    return check(H5Aexists(id(), name.c_str()),
                 "cannot look up attribute '" + name + "' of " + describe()) > 0;
}

namespace {

void write_new_attribute(hid_t object, const std::string& name, hid_t type, hid_t space,
                         const void* data, const std::string& what) {
    if (check(H5Aexists(object, name.c_str()), what) > 0)
        check(H5Adelete(object, name.c_str()), what);
    const hdf5_id attribute = checked_id(
        H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, what);
    check(H5Awrite(attribute.get(), type, data), what);
}

} // namespace

void hdf5_object::write_attribute(const std::string& name, const parameter_value& value) {
    const auto guard = hdf5_lock();
    const std::string what = "cannot write attribute '" + name + "' of " + describe();
    const hdf5_id space = checked_id(H5Screate(H5S_SCALAR), H5Sclose, what);
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) {
                const hdf5_id type = utf8_string_type(H5T_VARIABLE, what);
                const char* text = v.c_str();
                write_new_attribute(id(), name, type.get(), space.get(), &text, what);
            } else {
                const hid_t type = std::is_same_v<T, double> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
                write_new_attribute(id(), name, type, space.get(), &v, what);
            }
        },
        value);
}

void hdf5_object::write_attribute(const std::string& name, const std::vector<int>& values) {
    const auto guard = hdf5_lock();
    const std::string what = "cannot write attribute '" + name + "' of " + describe();
    const hdf5_id space = simple_space({values.size()}, what);
    write_new_attribute(id(), name, H5T_NATIVE_INT, space.get(), values.data(), what);
}

void hdf5_object::write_attribute(const std::string& name, hid_t type,
                                  const std::vector<hsize_t>& shape, const void* data) {
    const auto guard = hdf5_lock();
    const std::string what = "cannot write attribute '" + name + "' of " + describe();
    const hdf5_id space = shape.empty() ? checked_id(H5Screate(H5S_SCALAR), H5Sclose, what)
                                        : simple_space(shape, what);
    write_new_attribute(id(), name, type, space.get(), data, what);
}

void hdf5_object::write_attribute(const std::string& name, const std::vector<std::string>& values) {
    const auto guard = hdf5_lock();
    const std::string what = "cannot write attribute '" + name + "' of " + describe();
    std::vector<const char*> texts;
    for (const auto& value : values)
        texts.push_back(value.c_str());
    const hdf5_id space = simple_space({values.size()}, what);
    const hdf5_id type = utf8_string_type(H5T_VARIABLE, what);
    write_new_attribute(id(), name, type.get(), space.get(), texts.data(), what);
}

namespace {

// The `count` strings of a string attribute whose dataspace is `space` (a null one reads as
// ""), variable-length or fixed-size.
std::vector<std::string> read_string_values(hid_t attribute, hid_t file_type, hid_t space,
                                            std::size_t count, const std::string& what) {
    std::vector<std::string> values;
    if (count == 0) return values;
    values.reserve(count);
    const hdf5_id memory_type = checked_id(H5Tcopy(H5T_C_S1), H5Tclose, what);
    // Converting between character sets is refused by HDF5, so read in the file's own.
    const H5T_cset_t cset = H5Tget_cset(file_type);
    check(static_cast<int>(cset), what);
    check(H5Tset_cset(memory_type.get(), cset), what);
    if (check(H5Tis_variable_str(file_type), what) > 0) {
        check(H5Tset_size(memory_type.get(), H5T_VARIABLE), what);
        std::vector<char*> texts(count, nullptr);
        check(H5Aread(attribute, memory_type.get(), texts.data()), what);
        for (const char* text : texts)
            values.emplace_back(text ? text : "");
        H5Dvlen_reclaim(memory_type.get(), space, H5P_DEFAULT, texts.data());
        return values;
    }
    const std::size_t size = H5Tget_size(file_type);
    if (size == 0) check(-1, what);
    // Null-padded, not null-terminated, so that a string filling its whole size survives.
    check(H5Tset_size(memory_type.get(), size), what);
    check(H5Tset_strpad(memory_type.get(), H5T_STR_NULLPAD), what);
    std::vector<char> buffer(size * count);
    check(H5Aread(attribute, memory_type.get(), buffer.data()), what);
    for (std::size_t i = 0; i < count; ++i) {
        const char* text = buffer.data() + i * size;
        values.emplace_back(text, strnlen(text, size));
    }
    return values;
}

} // namespace

std::optional<parameter_value> hdf5_object::read_attribute(const std::string& name) const {
    const auto guard = hdf5_lock();
    if (!has_attribute(name)) return std::nullopt;
    const std::string what = "cannot read attribute '" + name + "' of " + describe();
    const hdf5_id attribute = checked_id(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose, what);
    const hdf5_id space = checked_id(H5Aget_space(attribute.get()), H5Sclose, what);
    if (check(H5Sget_simple_extent_npoints(space.get()), what) != 1) return std::nullopt;
    const hdf5_id type = checked_id(H5Aget_type(attribute.get()), H5Tclose, what);
    switch (H5Tget_class(type.get())) {
    case H5T_INTEGER: {
        std::int64_t value = 0;
        check(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value), what);
        return value;
    }
    case H5T_FLOAT: {
        double value = 0;
        check(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value), what);
        return value;
    }
    case H5T_STRING:
        return read_string_values(attribute.get(), type.get(), space.get(), 1, what).front();
    case H5T_NO_CLASS:
        check(-1, what);
        [[fallthrough]];
    default:
        return std::nullopt;
    }
}

std::optional<std::vector<std::int64_t>> hdf5_object::read_integers(const std::string& name) const {
    const auto guard = hdf5_lock();
    if (!has_attribute(name)) return std::nullopt;
    const std::string what = "cannot read attribute '" + name + "' of " + describe();
    const hdf5_id attribute = checked_id(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose, what);
    const hdf5_id type = checked_id(H5Aget_type(attribute.get()), H5Tclose, what);
    if (H5Tget_class(type.get()) != H5T_INTEGER) return std::nullopt;
    const hdf5_id space = checked_id(H5Aget_space(attribute.get()), H5Sclose, what);
    std::vector<std::int64_t> values(
        static_cast<std::size_t>(check(H5Sget_simple_extent_npoints(space.get()), what)));
    if (!values.empty()) check(H5Aread(attribute.get(), H5T_NATIVE_INT64, values.data()), what);
    return values;
}

std::optional<std::vector<std::string>> hdf5_object::read_strings(const std::string& name) const {
    const auto guard = hdf5_lock();
    if (!has_attribute(name)) return std::nullopt;
    const std::string what = "cannot read attribute '" + name + "' of " + describe();
    const hdf5_id attribute = checked_id(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose, what);
    const hdf5_id file_type = checked_id(H5Aget_type(attribute.get()), H5Tclose, what);
    if (H5Tget_class(file_type.get()) != H5T_STRING) return std::nullopt;
    const hdf5_id space = checked_id(H5Aget_space(attribute.get()), H5Sclose, what);
    const auto count =
        static_cast<std::size_t>(check(H5Sget_simple_extent_npoints(space.get()), what));
    return read_string_values(attribute.get(), file_type.get(), space.get(), count, what);
}

std::vector<std::string> hdf5_object::attribute_names() const {
    const auto guard = hdf5_lock();
    return in_creation_order(
        [&](H5_index_t index, std::vector<std::string>* out) {
            return H5Aiterate2(id(), index, H5_ITER_INC, nullptr, collect_attribute, out);
        },
        "cannot list the attributes of " + describe());
}

// ---- hdf5_dataset -------------------------------------------------------------------------

namespace {

// Cheap checks for damage that HDF5 1.10 does not catch itself and crashes on, each found by
// fuzzing init files: a compact dataset whose layout message stores fewer bytes than its
// dataspace needs (read through a null pointer), and a number type thousands of bytes wide
// (a heap overflow converting it). No integer or float type is wider than 16 bytes.
void refuse_damaged_dataset(hid_t dataset, const std::string& description) {
    const std::string what = "cannot read dataset " + description;
    const hdf5_id type = checked_id(H5Dget_type(dataset), H5Tclose, what);
    const std::size_t type_size = H5Tget_size(type.get());
    if (type_size == 0) check(-1, what);
    const H5T_class_t type_class = H5Tget_class(type.get());
    if ((type_class == H5T_INTEGER || type_class == H5T_FLOAT) && type_size > 16)
        throw input_error(what + ": the file is damaged (a number type of " +
                          std::to_string(type_size) + " bytes)");
    const hdf5_id plist = checked_id(H5Dget_create_plist(dataset), H5Pclose, what);
    const H5D_layout_t layout = H5Pget_layout(plist.get());
    check(static_cast<int>(layout), what);
    if (layout != H5D_COMPACT) return;
    const hdf5_id space = checked_id(H5Dget_space(dataset), H5Sclose, what);
    const auto points =
        static_cast<hsize_t>(check(H5Sget_simple_extent_npoints(space.get()), what));
    const hsize_t stored = H5Dget_storage_size(dataset);
    if (stored / type_size < points)
        throw input_error(what + ": the file is damaged (compact storage of " +
                          std::to_string(stored) + " bytes for " + std::to_string(points) +
                          " values of " + std::to_string(type_size) + " bytes)");
}

} // namespace

std::vector<hsize_t> hdf5_dataset::shape() const {
    const auto guard = hdf5_lock();
    const std::string what = "cannot read the shape of dataset " + describe();
    const hdf5_id space = checked_id(H5Dget_space(id()), H5Sclose, what);
    std::vector<hsize_t> dims(
        static_cast<std::size_t>(check(H5Sget_simple_extent_ndims(space.get()), what)));
    check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), what);
    return dims;
}

std::vector<hsize_t> hdf5_dataset::chunk_shape() const {
    const auto guard = hdf5_lock();
    const std::string what = "cannot read the layout of dataset " + describe();
    const hdf5_id plist = checked_id(H5Dget_create_plist(id()), H5Pclose, what);
    const H5D_layout_t layout = H5Pget_layout(plist.get());
    check(static_cast<int>(layout), what);
    if (layout != H5D_CHUNKED) return {};
    std::vector<hsize_t> dims(shape().size());
    check(H5Pget_chunk(plist.get(), static_cast<int>(dims.size()), dims.data()), what);
    return dims;
}

H5T_class_t hdf5_dataset::type_class() const {
    const auto guard = hdf5_lock();
    const std::string what = "cannot read the type of dataset " + describe();
    const hdf5_id type = checked_id(H5Dget_type(id()), H5Tclose, what);
    const H5T_class_t type_class = H5Tget_class(type.get());
    check(static_cast<int>(type_class), what);
    return type_class;
}

void hdf5_dataset::write_row(hsize_t row, hid_t memory_type, const void* data) {
    write_rows(row, 1, memory_type, data);
}

void hdf5_dataset::write_rows(hsize_t first, hsize_t count, hid_t memory_type, const void* data) {
    const auto guard = hdf5_lock();
    const std::string what = (count == 1 ? "cannot write frame " + std::to_string(first)
                                         : "cannot write frames " + std::to_string(first) + " to " +
                                               std::to_string(first + count - 1)) +
                             " of dataset " + describe();
    std::vector<hsize_t> dims = shape();
    if (dims.empty()) throw std::logic_error("write_rows on a scalar dataset " + describe());
    if (count == 0) return;
    dims[0] = first + count;
    check(H5Dset_extent(id(), dims.data()), what);
    const hdf5_id file_space = checked_id(H5Dget_space(id()), H5Sclose, what);
    std::vector<hsize_t> start(dims.size(), 0), block = dims;
    start[0] = first;
    block[0] = count;
    check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(),
                              nullptr),
          what);
    const hdf5_id memory_space = simple_space(block, what);
    check(H5Dwrite(id(), memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, data),
          what);
}

void hdf5_dataset::set_rows(hsize_t rows) {
    const auto guard = hdf5_lock();
    std::vector<hsize_t> dims = shape();
    if (dims.empty()) throw std::logic_error("set_rows on a scalar dataset " + describe());
    dims[0] = rows;
    check(H5Dset_extent(id(), dims.data()), "cannot resize dataset " + describe());
}

void hdf5_dataset::read_rows(hsize_t first, hsize_t count, hid_t memory_type, void* out) const {
    const auto guard = hdf5_lock();
    const std::string what = "cannot read dataset " + describe();
    std::vector<hsize_t> dims = shape();
    if (dims.empty() || first + count > dims[0])
        throw std::out_of_range("rows [" + std::to_string(first) + ", " +
                                std::to_string(first + count) + ") out of range of " + describe());
    if (count == 0) return;
    refuse_damaged_dataset(id(), describe());
    const hdf5_id file_space = checked_id(H5Dget_space(id()), H5Sclose, what);
    std::vector<hsize_t> start(dims.size(), 0);
    start[0] = first;
    dims[0] = count;
    check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, dims.data(),
                              nullptr),
          what);
    const hdf5_id memory_space = simple_space(dims, what);
    check(H5Dread(id(), memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, out), what);
}

void hdf5_dataset::read_all(hid_t memory_type, void* out) const {
    const auto guard = hdf5_lock();
    refuse_damaged_dataset(id(), describe());
    check(H5Dread(id(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out),
          "cannot read dataset " + describe());
}

void hdf5_dataset::write_all(hid_t memory_type, const void* data) {
    const auto guard = hdf5_lock();
    check(H5Dwrite(id(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
          "cannot write dataset " + describe());
}

namespace {

std::string block_position(const std::vector<hsize_t>& start) {
    std::string text = "(";
    for (std::size_t i = 0; i < start.size(); ++i)
        text += (i ? ", " : "") + std::to_string(start[i]);
    return text + ")";
}

std::string extent_text(const std::vector<hsize_t>& extent) {
    if (extent.empty()) return "a scalar";
    std::string text;
    for (std::size_t i = 0; i < extent.size(); ++i)
        text += (i ? " x " : "") + std::to_string(extent[i]);
    return text;
}

// A block of a dataset: its file dataspace with the block selected, and a flat memory
// dataspace of the block's size (a scalar one for a scalar dataset).
struct selected_block {
    hdf5_id file_space, memory_space;
};

// A dataset whose shape does not hold the block was changed since its writer made it (the
// caller knows the shape it wrote): an io_error, as HDF5's own refusal would be, that also
// says what the shape is.
selected_block select_block(hid_t dataset, const std::vector<hsize_t>& shape,
                            const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                            const std::string& what) {
    if (start.size() != count.size())
        throw std::logic_error(what + ": a start of rank " + std::to_string(start.size()) +
                               " and a count of rank " + std::to_string(count.size()));
    bool fits = start.size() == shape.size();
    hsize_t elements = 1;
    for (std::size_t i = 0; fits && i < shape.size(); ++i) {
        fits = start[i] + count[i] <= shape[i];
        elements *= count[i];
    }
    if (!fits)
        throw io_error(what + ": the dataset's shape, " + extent_text(shape) +
                       ", does not hold a block of " + extent_text(count) + " there");
    hdf5_id file_space = checked_id(H5Dget_space(dataset), H5Sclose, what);
    if (shape.empty())
        return {std::move(file_space), checked_id(H5Screate(H5S_SCALAR), H5Sclose, what)};
    check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                              nullptr),
          what);
    return {std::move(file_space), simple_space({elements}, what)};
}

// The transfer properties of block writes: a small type-conversion buffer. HDF5's default
// allocates and zeroes 1 MiB for the conversion and 1 MiB for the background of every write
// that converts (a variable-length string): a third of the time of a small run in a sweep,
// which writes its results as a dozen blocks. Made under the library lock (see
// hdf5_string_type).
hid_t small_buffer_transfer(const std::string& what) {
    static hid_t list = H5I_INVALID_HID;
    if (list < 0) {
        hdf5_id made = checked_id(H5Pcreate(H5P_DATASET_XFER), H5Pclose, what);
        check(H5Pset_buffer(made.get(), 64 * 1024, nullptr, nullptr), what);
        list = made.release();
    }
    return list;
}

} // namespace

void hdf5_dataset::write_block(const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                               hid_t memory_type, const void* data) {
    const auto guard = hdf5_lock();
    const std::string what =
        "cannot write the block at " + block_position(start) + " of dataset " + describe();
    const selected_block block = select_block(id(), shape(), start, count, what);
    check(H5Dwrite(id(), memory_type, block.memory_space.get(), block.file_space.get(),
                   small_buffer_transfer(what), data),
          what);
}

void hdf5_dataset::read_block(const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                              hid_t memory_type, void* out) const {
    const auto guard = hdf5_lock();
    const std::string what =
        "cannot read the block at " + block_position(start) + " of dataset " + describe();
    const selected_block block = select_block(id(), shape(), start, count, what);
    refuse_damaged_dataset(id(), describe());
    check(H5Dread(id(), memory_type, block.memory_space.get(), block.file_space.get(), H5P_DEFAULT,
                  out),
          what);
}

void hdf5_dataset::make_scale(const std::string& name) {
    const auto guard = hdf5_lock();
    check(H5DSset_scale(id(), name.c_str()),
          "cannot make dataset " + describe() + " a dimension scale");
}

void hdf5_dataset::attach_scale(const hdf5_dataset& scale, unsigned axis) {
    const auto guard = hdf5_lock();
    check(H5DSattach_scale(id(), scale.id(), axis),
          "cannot attach the dimension scale '" + scale.name() + "' to axis " +
              std::to_string(axis) + " of dataset " + describe());
}

// ---- hdf5_group ---------------------------------------------------------------------------

bool hdf5_group::has(const std::string& path) const {
    const auto guard = hdf5_lock();
    // H5Lexists fails rather than answers when an intermediate group is missing, and a link
    // may dangle, so walk the path one component at a time.
    const std::string what = "cannot look up '" + path + "' in " + describe();
    std::string prefix = path.starts_with('/') ? "/" : "";
    bool any = false;
    for (std::size_t begin = 0; begin < path.size();) {
        std::size_t end = path.find('/', begin);
        if (end == std::string::npos) end = path.size();
        if (end > begin) {
            if (!prefix.empty() && prefix.back() != '/') prefix += '/';
            prefix += path.substr(begin, end - begin);
            if (check(H5Lexists(id(), prefix.c_str(), H5P_DEFAULT), what) == 0) return false;
            if (check(H5Oexists_by_name(id(), prefix.c_str(), H5P_DEFAULT), what) == 0)
                return false;
            any = true;
        }
        begin = end + 1;
    }
    return any;
}

H5I_type_t hdf5_group::kind(const std::string& path) const {
    const auto guard = hdf5_lock();
    const std::string what = "cannot open '" + child_path(path) + "' in '" + m_file_path + "'";
    const hdf5_id object = checked_id(H5Oopen(id(), path.c_str(), H5P_DEFAULT), H5Oclose, what);
    const H5I_type_t type = H5Iget_type(object.get());
    check(static_cast<int>(type), what);
    return type;
}

hdf5_group hdf5_group::create_group(const std::string& name, bool track_order) {
    const auto guard = hdf5_lock();
    const std::string path = child_path(name);
    const std::string what = "cannot create group '" + path + "' in '" + m_file_path + "'";
    const hdf5_id plist = checked_id(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, what);
    if (track_order) {
        const unsigned flags = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
        check(H5Pset_link_creation_order(plist.get(), flags), what);
        check(H5Pset_attr_creation_order(plist.get(), flags), what);
    }
    return {checked_id(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, plist.get(), H5P_DEFAULT),
                       H5Gclose, what),
            m_file_path, path};
}

hdf5_group hdf5_group::open_group(const std::string& path) const {
    const auto guard = hdf5_lock();
    const std::string full = child_path(path);
    return {checked_id(H5Gopen2(id(), path.c_str(), H5P_DEFAULT), H5Gclose,
                       "cannot open group '" + full + "' in '" + m_file_path + "'"),
            m_file_path, full};
}

hdf5_dataset hdf5_group::open_dataset(const std::string& path) const {
    const auto guard = hdf5_lock();
    const std::string full = child_path(path);
    return {checked_id(H5Dopen2(id(), path.c_str(), H5P_DEFAULT), H5Dclose,
                       "cannot open dataset '" + full + "' in '" + m_file_path + "'"),
            m_file_path, full};
}

hdf5_dataset hdf5_group::create_series(const std::string& name, hid_t file_type,
                                       const std::vector<hsize_t>& row_shape,
                                       const std::vector<hsize_t>& chunk, bool compress) {
    const auto guard = hdf5_lock();
    const std::string path = child_path(name);
    const std::string what = "cannot create dataset '" + path + "' in '" + m_file_path + "'";
    if (chunk.size() != row_shape.size() + 1)
        throw std::logic_error("chunk rank does not match dataset rank for " + path);
    std::vector<hsize_t> dims{0}, max_dims{H5S_UNLIMITED};
    dims.insert(dims.end(), row_shape.begin(), row_shape.end());
    max_dims.insert(max_dims.end(), row_shape.begin(), row_shape.end());
    const hdf5_id space = simple_space(dims, what, max_dims.data());
    const hdf5_id plist = checked_id(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, what);
    check(H5Pset_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()), what);
    if (compress) {
        check(H5Pset_shuffle(plist.get()), what);
        check(H5Pset_deflate(plist.get(), 4), what);
    }
    return {checked_id(H5Dcreate2(id(), name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                  plist.get(), H5P_DEFAULT),
                       H5Dclose, what),
            m_file_path, path};
}

hdf5_dataset hdf5_group::create_dataset(const std::string& name, const std::vector<hsize_t>& shape,
                                        const double* data) {
    const auto guard = hdf5_lock();
    const std::string path = child_path(name);
    const std::string what = "cannot write dataset '" + path + "' in '" + m_file_path + "'";
    const hdf5_id space = simple_space(shape, what);
    hdf5_dataset dataset{checked_id(H5Dcreate2(id(), name.c_str(), H5T_IEEE_F64LE, space.get(),
                                               H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                                    H5Dclose, what),
                         m_file_path, path};
    check(H5Dwrite(dataset.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), what);
    return dataset;
}

hdf5_dataset hdf5_group::create_dataset(const std::string& name, hid_t file_type,
                                        const std::vector<hsize_t>& shape,
                                        const std::vector<hsize_t>& chunk, const void* fill) {
    const auto guard = hdf5_lock();
    const std::string path = child_path(name);
    const std::string what = "cannot create dataset '" + path + "' in '" + m_file_path + "'";
    if (!chunk.empty() && chunk.size() != shape.size())
        throw std::logic_error("chunk rank does not match dataset rank for " + path);
    const hdf5_id space = simple_space(shape, what);
    const hdf5_id plist = checked_id(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, what);
    if (!chunk.empty()) {
        // HDF5 refuses a chunk extent of 0, and one longer than a fixed-size axis.
        std::vector<hsize_t> extents(chunk);
        for (std::size_t i = 0; i < extents.size(); ++i)
            extents[i] = std::max<hsize_t>(1, std::min(extents[i], shape[i]));
        check(H5Pset_chunk(plist.get(), static_cast<int>(extents.size()), extents.data()), what);
    }
    if (fill) check(H5Pset_fill_value(plist.get(), file_type, fill), what);
    return {checked_id(H5Dcreate2(id(), name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                  plist.get(), H5P_DEFAULT),
                       H5Dclose, what),
            m_file_path, path};
}

std::vector<std::string> hdf5_group::children() const {
    const auto guard = hdf5_lock();
    return in_creation_order(
        [&](H5_index_t index, std::vector<std::string>* out) {
            return H5Literate(id(), index, H5_ITER_INC, nullptr, collect_link, out);
        },
        "cannot list the members of " + describe());
}

void hdf5_group::remove(const std::string& name) {
    const auto guard = hdf5_lock();
    check(H5Ldelete(id(), name.c_str(), H5P_DEFAULT),
          "cannot remove '" + child_path(name) + "' from '" + m_file_path + "'");
}

// ---- hdf5_file ----------------------------------------------------------------------------

namespace {

// File access for the writer: the format, and no file locking. A reader (h5py, nadyn
// inspect) that holds the file must never make the run fail; SWMR keeps what readers see
// consistent, and the writer is the only one that writes.
hdf5_id writer_access(const std::string& what, H5F_libver_t format) {
    hdf5_id access = checked_id(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, what);
    check(H5Pset_libver_bounds(access.get(), format, format), what);
    check(H5Pset_file_locking(access.get(), false, true), what);
    return access;
}

} // namespace

hdf5_file hdf5_file::create(const std::string& path, bool swmr_format) {
    const auto guard = hdf5_lock();
    const std::string what = "cannot create output file '" + path + "'";
    // The 1.8 file format stores attributes that outgrow an object header (box/boundary for
    // d in the thousands, many parameters) densely, where the default format fails; files
    // stay readable by HDF5 1.8 and later. SWMR needs the 1.10 format.
    const hdf5_id access = writer_access(what, swmr_format ? H5F_LIBVER_V110 : H5F_LIBVER_V18);
    const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
    if (id < 0) throw io_error(what + ": " + creation_failure(path));
    hdf5_file file{hdf5_id(id, H5Fclose), path, "/"};
    // On disk at once as a whole empty file: a writer killed in its first milliseconds then
    // leaves a file that holds_no_results() recognises (and a new run replaces), not the
    // superblock's first 48 bytes, which no reader opens.
    check(H5Fflush(id, H5F_SCOPE_LOCAL), what);
    return file;
}

bool hdf5_file::is_hdf5(const std::string& path) {
    const auto guard = hdf5_lock();
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    if (ec) throw io_error("cannot open '" + path + "': " + ec.message());
    if (!exists) throw input_error("cannot open '" + path + "': no such file");
    if (fs::is_directory(path, ec))
        throw input_error("cannot open '" + path + "': it is a directory");
    // HDF5 opens whatever the path names: a FIFO blocks it forever in open() (no writer comes),
    // beyond the reach of any stop request, and a device reads without end. Only regular files
    // (symbolic links followed) are read.
    if (!fs::is_regular_file(path, ec))
        throw input_error("cannot open '" + path +
                          "': it is not a regular file (a FIFO, a socket or a device); give an "
                          "HDF5 file");
    return check(H5Fis_hdf5(path.c_str()), "cannot open '" + path + "'") > 0;
}

hdf5_file hdf5_file::open_read_only(const std::string& path) {
    const auto guard = hdf5_lock();
    if (!is_hdf5(path)) throw input_error("'" + path + "' is not an HDF5 file");
    hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (id >= 0) return {hdf5_id(id, H5Fclose), path, "/"};
    const std::string first = hdf5_reason();
    // A file being written in SWMR mode, or left so by a writer that was killed, opens as a
    // SWMR reader: the frames flushed so far are consistent. A SWMR reader retries a
    // metadata read whose checksum fails, in case the writer was changing it, 100 times by
    // default with a growing sleep: minutes, signals unanswered, on a file that is simply
    // damaged. So the retries are bounded: a few while a writer holds the file (its flush
    // of a frame takes milliseconds), none when no writer does (the file no longer changes,
    // a failing checksum is damage).
    const hdf5_id access =
        checked_id(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "cannot open '" + path + "'");
    check(H5Pset_metadata_read_attempts(access.get(), writer_holds(path) ? 12 : 1),
          "cannot open '" + path + "'");
    id = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, access.get());
    if (id >= 0) return {hdf5_id(id, H5Fclose), path, "/"};
    const std::string second = hdf5_reason();
    // Marked open for writing, but not in SWMR mode: a writer that is still writing its
    // header, or one that was stopped before its first frame, or a resume killed before it
    // re-entered SWMR mode, which leaves every frame of the run before it behind the mark.
    // A dead writer's mark protects nothing: cleared (h5clear -s), the file opens as it is.
    const bool marked = first.find("already open for write") != std::string::npos ||
                        second.find("not already open for SWMR writing") != std::string::npos;
    if (marked && clear_dead_writer_mark(path)) {
        id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        if (id >= 0) return {hdf5_id(id, H5Fclose), path, "/"};
    }
    if (marked)
        throw io_error("cannot open '" + path +
                       "': it is marked open for writing by a run that has not written a frame "
                       "(still starting, or stopped before its first frame; a new run with the "
                       "same output replaces such a file, and h5clear -s clears the mark)");
    throw io_error("cannot open '" + path + "': " + second);
}

namespace {

herr_t collect_object(hid_t, const char* name, const H5O_info_t*, void* out) {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
}

} // namespace

void hdf5_file::verify_readable(const std::string& path) {
    const auto guard = hdf5_lock();
    const hdf5_file file = open_read_only(path);
    const std::string what = "cannot read '" + path + "'";
    std::vector<std::string> objects;
    check(H5Ovisit2(file.id(), H5_INDEX_NAME, H5_ITER_NATIVE, collect_object, &objects,
                    H5O_INFO_BASIC),
          what);
    auto read_attributes = [](const hdf5_object& object) {
        for (const auto& attribute : object.attribute_names())
            (void)object.read_attribute(attribute);
    };
    // The first and last value of a numeric dataset: they reach the ends of its chunk index.
    auto read_ends = [&](const hdf5_dataset& dataset, const std::string& name) {
        const auto shape = dataset.shape();
        const H5T_class_t type_class = dataset.type_class();
        if (shape.empty() || (type_class != H5T_INTEGER && type_class != H5T_FLOAT)) return;
        hsize_t points = 1;
        for (const hsize_t n : shape)
            points *= n;
        if (points == 0) return;
        refuse_damaged_dataset(dataset.id(), "'" + name + "' in '" + path + "'");
        const hdf5_id space = checked_id(H5Dget_space(dataset.id()), H5Sclose, what);
        for (const hsize_t index : {hsize_t{0}, points - 1}) {
            std::vector<hsize_t> at(shape.size());
            hsize_t rest = index;
            for (std::size_t k = shape.size(); k-- > 0;) {
                at[k] = rest % shape[k];
                rest /= shape[k];
            }
            check(H5Sselect_elements(space.get(), H5S_SELECT_SET, 1, at.data()), what);
            const hsize_t one = 1;
            const hdf5_id memory = simple_space({one}, what);
            double value = 0;
            if (H5Dread(dataset.id(), H5T_NATIVE_DOUBLE, memory.get(), space.get(), H5P_DEFAULT,
                        &value) >= 0)
                continue;
            const std::string reason = hdf5_reason();
            // The last value past the file's end of allocation: the tail a writer killed
            // during an append left (its extent grew, its data never reached the disk), which
            // the resume drops and readers stop before. Not damage.
            if (index > 0 && reason.find("addr overflow") != std::string::npos) continue;
            throw io_error(what + " (dataset " + name + "): " + reason);
        }
    };
    read_attributes(file);
    for (const auto& name : objects) {
        const H5I_type_t kind = file.kind(name);
        if (kind == H5I_GROUP) read_attributes(file.open_group(name));
        if (kind != H5I_DATASET) continue;
        const hdf5_dataset dataset = file.open_dataset(name);
        read_attributes(dataset);
        read_ends(dataset, name);
    }
}

void hdf5_file::start_swmr_write() {
    const auto guard = hdf5_lock();
    check(H5Fstart_swmr_write(id()),
          "cannot enter SWMR mode on '" + m_file_path +
              "' (the file system may lack the locking it needs; use --no-swmr)");
}

bool hdf5_file::supports_swmr() const {
    const auto guard = hdf5_lock();
    const hdf5_id access =
        checked_id(H5Fget_access_plist(id()), H5Pclose, "cannot query '" + m_file_path + "'");
    H5F_libver_t low = H5F_LIBVER_EARLIEST, high = H5F_LIBVER_LATEST;
    check(H5Pget_libver_bounds(access.get(), &low, &high), "cannot query '" + m_file_path + "'");
    return low >= H5F_LIBVER_V110;
}

hdf5_file hdf5_file::open_read_write(const std::string& path, bool clear_swmr_mark) {
    const auto guard = hdf5_lock();
    if (!is_hdf5(path)) throw input_error("'" + path + "' is not an HDF5 file");
    const std::string what = "cannot open '" + path + "' for writing";
    const hdf5_id access = checked_id(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, what);
    check(H5Pset_file_locking(access.get(), false, true), what);
    hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, access.get());
    // A writer killed in SWMR mode leaves its mark in the superblock; what `h5clear -s` does
    // is an HDF5 file-access property, set here by name when this HDF5 has it.
    static const char* const clear_flags = "clear_status_flags";
    if (id < 0 && clear_swmr_mark && H5Pexist(access.get(), clear_flags) > 0) {
        H5Eclear2(H5E_DEFAULT);
        hbool_t clear = true;
        check(H5Pset(access.get(), clear_flags, &clear), what);
        id = H5Fopen(path.c_str(), H5F_ACC_RDWR, access.get());
        // A SWMR writer records its end of allocation (EOA) in the superblock only when it
        // flushes that: a killed one leaves chunks and chunk-index blocks past the recorded
        // EOA. Left so, this writer would read those blocks as out of bounds and allocate
        // new ones over them, which destroys the frames it resumes (h5clear --increment is
        // the same repair): the allocation restarts past the end of the file.
        if (id >= 0 && H5Fincrement_filesize(id, 0) < 0) {
            const std::string reason = hdf5_reason();
            H5Fclose(id);
            throw io_error(what + ": " + reason);
        }
    }
    if (id < 0) throw io_error(what + ": " + hdf5_reason());
    return {hdf5_id(id, H5Fclose), path, "/"};
}

bool hdf5_file::clear_dead_writer_mark(const std::string& path) {
    const auto guard = hdf5_lock();
    // The claim's lock is taken before HDF5 marks a file and held until the mark is gone, so
    // a free lock means the writer is dead (or was never nadyn; see below).
    if (!writer_gone(path)) return false;
    static const char* const clear_flags = "clear_status_flags";
    const hid_t access = H5Pcreate(H5P_FILE_ACCESS);
    if (access < 0) return false;
    hbool_t clear = true;
    // HDF5's own file lock on (nadyn's writers turn it off, h5py's keep it): another program
    // writing the file through HDF5 makes this open fail instead of losing its mark.
    hid_t id = -1;
    if (H5Pexist(access, clear_flags) > 0 && H5Pset_file_locking(access, true, true) >= 0 &&
        H5Pset(access, clear_flags, &clear) >= 0)
        id = H5Fopen(path.c_str(), H5F_ACC_RDWR, access);
    H5Pclose(access);
    H5Eclear2(H5E_DEFAULT);
    return id >= 0 && H5Fclose(id) >= 0;
}

void hdf5_file::flush() {
    const auto guard = hdf5_lock();
    check(H5Fflush(id(), H5F_SCOPE_LOCAL), "cannot write to '" + m_file_path + "'");
}

} // namespace nadyn::detail
