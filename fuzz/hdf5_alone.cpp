// HDF5 alone on a fuzz_input_files input: the calls nadyn's init and weights readers make
// (open the file, look up theta0, r0, Q, K and V, read each dataset whole as doubles into a
// buffer of the dataspace's size), with no nadyn code. Built with ASan like the fuzz targets;
// scripts/fuzz.sh runs it on each input that found something. If this program crashes or
// ASan reports inside libhdf5, the bug is HDF5's (fuzz/README.md lists those found);
// otherwise it is nadyn's.
//
// Usage: hdf5_alone INPUT   (INPUT as the fuzzer wrote it: two bytes for n and d, then the file)
//        hdf5_alone --whole INPUT   (a fuzz_whole_files input: the file itself; every object
//        opened, every attribute and numeric dataset read, as nadyn's readers do, with the
//        SWMR-read fallback and no metadata retries)
#include <hdf5.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

herr_t read_attribute(hid_t object, const char* name, const H5A_info_t*, void*) {
    const hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
    if (attribute < 0) return 0;
    const hid_t type = H5Aget_type(attribute);
    const hid_t space = H5Aget_space(attribute);
    const hssize_t points = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (type >= 0 && points > 0 && points < (hssize_t{1} << 20)) {
        const H5T_class_t kind = H5Tget_class(type);
        if (kind == H5T_INTEGER || kind == H5T_FLOAT) {
            std::vector<double> values(static_cast<std::size_t>(points));
            H5Aread(attribute, H5T_NATIVE_DOUBLE, values.data());
        } else if (kind == H5T_STRING && H5Tis_variable_str(type) > 0) {
            std::vector<char*> texts(static_cast<std::size_t>(points), nullptr);
            const hid_t memory = H5Tcopy(H5T_C_S1);
            H5Tset_size(memory, H5T_VARIABLE);
            H5Tset_cset(memory, H5Tget_cset(type));
            if (H5Aread(attribute, memory, texts.data()) >= 0)
                H5Dvlen_reclaim(memory, space, H5P_DEFAULT, texts.data());
            H5Tclose(memory);
        }
    }
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    H5Aclose(attribute);
    return 0;
}

herr_t skip_link(hid_t, const char*, const H5L_info_t*, void*) {
    return 0;
}

// As nadyn lists members and attributes: in creation order first, by name when the object
// does not track it.
void list_members(hid_t object) {
    if (H5Iget_type(object) == H5I_GROUP || H5Iget_type(object) == H5I_FILE) {
        if (H5Literate(object, H5_INDEX_CRT_ORDER, H5_ITER_INC, nullptr, skip_link, nullptr) < 0)
            H5Literate(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, skip_link, nullptr);
    }
    if (H5Aiterate2(object, H5_INDEX_CRT_ORDER, H5_ITER_INC, nullptr, read_attribute, nullptr) < 0)
        H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, read_attribute, nullptr);
}

herr_t read_object(hid_t file, const char* name, const H5O_info_t*, void*) {
    const hid_t object = H5Oopen(file, name, H5P_DEFAULT);
    if (object < 0) return 0;
    list_members(object);
    if (H5Iget_type(object) == H5I_DATASET) {
        const hid_t type = H5Dget_type(object);
        const hid_t space = H5Dget_space(object);
        const hssize_t points = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
        const H5T_class_t kind = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
        if ((kind == H5T_INTEGER || kind == H5T_FLOAT) && points > 0 &&
            points < (hssize_t{1} << 24)) {
            std::vector<double> values(static_cast<std::size_t>(points));
            H5Dread(object, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
        }
        if (space >= 0) H5Sclose(space);
        if (type >= 0) H5Tclose(type);
    }
    H5Oclose(object);
    return 0;
}

int whole_file(const std::string& path) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    if (H5Fis_hdf5(path.c_str()) <= 0) return 0;
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        const hid_t access = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_metadata_read_attempts(access, 1);
        file = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, access);
        H5Pclose(access);
    }
    if (file < 0) return 0;
    list_members(file);
    H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, read_object, nullptr, H5O_INFO_BASIC);
    H5Fclose(file);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    const bool whole = argc == 3 && std::string(argv[1]) == "--whole";
    if (argc != 2 && !whole) {
        std::fprintf(stderr, "usage: hdf5_alone [--whole] INPUT\n");
        return 2;
    }
    std::ifstream in(argv[whole ? 2 : 1], std::ios::binary);
    const std::string bytes(std::istreambuf_iterator<char>(in), {});
    if (whole) {
        const char* tmp = std::getenv("TMPDIR");
        std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/nadyn-hdf5-alone-XXXXXX";
        const int fd = mkstemp(path.data());
        if (fd < 0) return 2;
        std::FILE* out = fdopen(fd, "wb");
        std::fwrite(bytes.data(), 1, bytes.size(), out);
        std::fclose(out);
        const int status = whole_file(path);
        std::remove(path.c_str());
        return status;
    }
    if (bytes.size() < 2) return 0;
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/nadyn-hdf5-alone-XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) return 2;
    std::FILE* out = fdopen(fd, "wb");
    std::fwrite(bytes.data() + 2, 1, bytes.size() - 2, out);
    std::fclose(out);

    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    for (const char* name : {"theta0", "r0", "Q", "K", "V"}) {
        if (H5Fis_hdf5(path.c_str()) <= 0) break;
        const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        if (file < 0) continue;
        if (H5Lexists(file, name, H5P_DEFAULT) > 0 &&
            H5Oexists_by_name(file, name, H5P_DEFAULT) > 0) {
            const hid_t object = H5Oopen(file, name, H5P_DEFAULT);
            if (object >= 0 && H5Iget_type(object) == H5I_DATASET) {
                const hid_t space = H5Dget_space(object);
                const hssize_t points = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
                // Like nadyn: nothing larger than 2 GiB is read.
                if (points > 0 && points < (hssize_t{1} << 28)) {
                    std::vector<double> values(static_cast<std::size_t>(points));
                    H5Dread(object, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                            values.data());
                }
                if (space >= 0) H5Sclose(space);
            }
            if (object >= 0) H5Oclose(object);
        }
        H5Fclose(file);
    }
    std::remove(path.c_str());
    return 0;
}
