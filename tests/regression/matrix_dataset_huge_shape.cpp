// Regression: read_matrix_dataset allocated rows x cols doubles for whatever shape a file
// declared before anyone checked it. A malformed init file declaring theta0 as
// 2 x 6557241057451442178 (found by fuzz_input_files) threw std::length_error, reported as
// an internal error; a shape whose product wraps around 2^64 under-allocated the buffer that
// H5Dread then filled. The callers' shape checks now run before the allocation, and the
// reader refuses any shape whose values exceed the machine's memory.
#include "fuzz_inputs.hpp"

#include "nadyn/files/h5md.hpp"
#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/initial.hpp"
#include "nadyn/model/weights.hpp"

#include <doctest/doctest.h>
#include <hdf5.h>

#include <string>

using namespace nadyn;

namespace {

// A chunked dataset of that shape with no chunk written: a few hundred bytes on disk.
void write_empty_dataset(const std::string& path, const char* name, hsize_t rows, hsize_t cols) {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(file >= 0);
    const hsize_t dims[2] = {rows, cols}, chunk[2] = {1, 1024};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    REQUIRE(H5Pset_chunk(plist, 2, chunk) >= 0);
    const hid_t dataset =
        H5Dcreate2(file, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    REQUIRE(dataset >= 0);
    H5Dclose(dataset);
    H5Pclose(plist);
    H5Sclose(space);
    H5Fclose(file);
}

std::string scratch(const std::string& name) {
    return std::string(NADYN_TEST_TMPDIR) + "/regression_huge_" + name + ".h5";
}

} // namespace

TEST_CASE("a declared shape beyond memory is refused before anything is allocated") {
    const hsize_t two32 = hsize_t{1} << 32;
    // (2^32 + 1) x 2^32 wraps around to 2^32 entries in 64 bits.
    for (auto [rows, cols] : {std::pair{two32 + 1, two32}, {hsize_t{3}, hsize_t{1} << 60}}) {
        CAPTURE(rows);
        CAPTURE(cols);
        const std::string path = scratch("W");
        write_empty_dataset(path, "W", rows, cols);
        try {
            (void)read_matrix_dataset(path, "W");
            FAIL("no input_error");
        } catch (const input_error& e) {
            CHECK(std::string(e.what()).find("more than this machine's memory") !=
                  std::string::npos);
        }
    }
}

TEST_CASE("init and weights files of the wrong, huge shape fail on the shape") {
    const std::string init = scratch("theta0");
    write_empty_dataset(init, "theta0", 2, hsize_t{1} << 40);
    try {
        (void)read_initial_file(init, 2, 3);
        FAIL("no input_error");
    } catch (const input_error& e) {
        CHECK(std::string(e.what()).find("must be 2 x 3 (n x d), found 2 x 1099511627776") !=
              std::string::npos);
    }
    const std::string weights = scratch("Q");
    write_empty_dataset(weights, "Q", 3, hsize_t{1} << 40);
    try {
        (void)read_weights_file(weights, 3, 1);
        FAIL("no input_error");
    } catch (const input_error& e) {
        CHECK(std::string(e.what()).find("must be 3 x 3 or H x 3 x 3, found 3 x 1099511627776") !=
              std::string::npos);
    }
}

TEST_CASE("the fuzz input: theta0 declared 2 x 6557241057451442178") {
    const auto c = nadyn_test::unpack_input_files("theta0_huge_shape.fuzz");
    try {
        (void)make_initial(with_file_contents(initial_spec::parse("file:" + c.path), c.n, c.d), c.n,
                           c.d, 1, 1.0);
        FAIL("no input_error");
    } catch (const input_error& e) {
        CHECK(std::string(e.what()).find("found 2 x 6557241057451442178") != std::string::npos);
    }
}
