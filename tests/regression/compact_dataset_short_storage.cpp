// Regression: HDF5 1.10.8 crashes (a read through a null pointer in H5D__compact_readvv) on
// a compact dataset whose layout message stores fewer bytes than its dataspace needs; a
// malformed init file with such a theta0 (found by fuzz_input_files: a 2 x 3 dataset with
// compact storage of 0 bytes) took nadyn down with SIGSEGV. The reader now compares the
// compact storage size with the dataspace before H5Dread and refuses the file instead.
#include "fuzz_inputs.hpp"

#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/initial.hpp"

#include <doctest/doctest.h>
#include <hdf5.h>

#include <cmath>
#include <string>

using namespace nadyn;

TEST_CASE("the fuzz input: theta0 with 0 bytes of compact storage is refused") {
    const auto c = nadyn_test::unpack_input_files("compact_dataset_short_storage.fuzz");
    try {
        (void)make_initial(with_file_contents(initial_spec::parse("file:" + c.path), c.n, c.d), c.n,
                           c.d, 1, 1.0);
        FAIL("no input_error");
    } catch (const input_error& e) {
        CHECK(std::string(e.what()).find("damaged") != std::string::npos);
    }
}

TEST_CASE("an intact compact theta0 still reads") {
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/regression_compact.h5";
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(file >= 0);
    const hsize_t dims[2] = {2, 3};
    const double theta0[6] = {3, 0, 4, 0, 2, 0};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    REQUIRE(H5Pset_layout(plist, H5D_COMPACT) >= 0);
    const hid_t dataset =
        H5Dcreate2(file, "theta0", H5T_IEEE_F64LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    REQUIRE(H5Dwrite(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, theta0) >= 0);
    H5Dclose(dataset);
    H5Pclose(plist);
    H5Sclose(space);
    H5Fclose(file);
    const initial_state s =
        make_initial(with_file_contents(initial_spec::parse("file:" + path), 2, 3), 2, 3, 1, 1.0);
    const double expected[6] = {0.6, 0.0, 0.8, 0.0, 1.0, 0.0};
    for (int i = 0; i < 6; ++i)
        CHECK(std::abs(s.theta[i] - expected[i]) <= 1e-15);
}
