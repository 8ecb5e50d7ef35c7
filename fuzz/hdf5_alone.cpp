// HDF5 alone on a fuzz_input_files input: the calls nadyn's init and weights readers make
// (open the file, look up theta0, r0, Q, K and V, read each dataset whole as doubles into a
// buffer of the dataspace's size), with no nadyn code. Built with ASan like the fuzz targets;
// scripts/fuzz.sh runs it on each input that found something. If this program crashes or
// ASan reports inside libhdf5, the bug is HDF5's (fuzz/README.md lists those found);
// otherwise it is nadyn's.
//
// Usage: hdf5_alone INPUT   (INPUT as the fuzzer wrote it: two bytes for n and d, then the file)
#include <hdf5.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: hdf5_alone INPUT\n");
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    const std::string bytes(std::istreambuf_iterator<char>(in), {});
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
