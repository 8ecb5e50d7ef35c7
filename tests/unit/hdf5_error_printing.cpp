// HDF5's printing of error stacks is off only around nadyn's own calls: a failure inside nadyn
// prints nothing (nadyn reports one line), and the process's own setting (h5py's, a host
// program's handler) is in force again afterwards.
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <hdf5.h>

namespace {

int printed = 0;

herr_t count_error_stack(hid_t, void*) {
    ++printed;
    return 0;
}

std::string empty_hdf5_file() {
    std::filesystem::create_directories(NADYN_TEST_TMPDIR);
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/hdf5_error_printing.h5";
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(file >= 0);
    H5Fclose(file);
    return path;
}

} // namespace

TEST_CASE("a failure inside nadyn prints no HDF5 error stack, and the process's handler is "
          "in force before and after") {
    const std::string path = empty_hdf5_file();
    H5E_auto2_t before_function = nullptr;
    void* before_data = nullptr;
    H5Eget_auto2(H5E_DEFAULT, &before_function, &before_data);
    REQUIRE(H5Eset_auto2(H5E_DEFAULT, count_error_stack, nullptr) >= 0);

    // HDF5 fails inside: the file has no trajectory (and a dataset lookup fails).
    printed = 0;
    CHECK_THROWS_AS(nadyn::trajectory_reader{path}, nadyn::input_error);
    CHECK_THROWS(nadyn::verify_readable(path + ".missing"));
    CHECK(printed == 0);

    H5E_auto2_t function = nullptr;
    void* data = nullptr;
    H5Eget_auto2(H5E_DEFAULT, &function, &data);
    const bool restored = function == count_error_stack;
    CHECK(restored);

    // The process's own failing call is reported to its handler, as HDF5 does by default.
    H5Eset_auto2(H5E_DEFAULT, count_error_stack, nullptr);
    CHECK(H5Fopen((path + ".missing").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT) < 0);
    CHECK(printed == 1);
    H5Eset_auto2(H5E_DEFAULT, before_function, before_data);
}
