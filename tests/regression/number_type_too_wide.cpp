// Regression: HDF5 1.10.8 overflows a heap buffer (in H5D__scatgath_read, converting to
// double) when a dataset's float type claims to be 26740 bytes wide; a malformed weights file
// with such a dataset K (found by fuzz_input_files) corrupted nadyn's memory. The reader now
// refuses integer and float types wider than 16 bytes, which no real number type is, before
// H5Dread.
#include "fuzz_inputs.hpp"

#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/weights.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace nadyn;

TEST_CASE("the fuzz input: a 26740-byte float type is refused") {
    const auto c = nadyn_test::unpack_input_files("number_type_too_wide.fuzz");
    try {
        (void)read_weights_file(c.path, c.d, 1);
        FAIL("no input_error");
    } catch (const input_error& e) {
        CHECK(std::string(e.what()).find("a number type of 26740 bytes") != std::string::npos);
    }
}
