// The HDF5 wrappers a sweep file is written with: fixed-size datasets with chunks and fill
// values, N-d blocks written and read in place, dimension scales and attributes of any type.
// Each block lands where its start says and nowhere else (the rest keeps the fill value); a
// block the dataset's shape cannot hold is an io_error that shows the shape.
#include "files/hdf5.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <hdf5.h>

using nadyn::detail::hdf5_dataset;
using nadyn::detail::hdf5_file;

namespace {

std::string scratch(const std::string& name) {
    std::filesystem::create_directories(NADYN_TEST_TMPDIR);
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/hdf5_blocks_" + name + ".h5";
    std::filesystem::remove(path);
    return path;
}

// Equal bit for bit (NaN equal to NaN, -0 not equal to 0).
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

} // namespace

TEST_CASE("a block of a 3-d chunked dataset lands at its start; the rest keeps the fill") {
    const std::string path = scratch("cube");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    {
        hdf5_file file = hdf5_file::create(path);
        hdf5_dataset cube =
            file.create_dataset("cube", H5T_NATIVE_DOUBLE, {2, 3, 4}, {1, 1, 4}, &nan);
        CHECK(cube.chunk_shape() == std::vector<hsize_t>{1, 1, 4});
        const std::vector<double> row{0.5, -0.0, 1e-310, 7.0};
        cube.write_block({1, 2, 0}, {1, 1, 4}, H5T_NATIVE_DOUBLE, row.data());
        const std::vector<double> column{1.0, 2.0};
        cube.write_block({0, 0, 3}, {2, 1, 1}, H5T_NATIVE_DOUBLE, column.data());
    }
    const hdf5_file file = hdf5_file::open_read_only(path);
    const hdf5_dataset cube = file.open_dataset("cube");
    // Row-major: element (i, j, k) is at 12 i + 4 j + k.
    std::vector<double> expected(24, nan);
    expected[3] = 1.0;
    expected[15] = 2.0;
    const std::vector<double> row{0.5, -0.0, 1e-310, 7.0};
    std::copy(row.begin(), row.end(), expected.begin() + 20);
    std::vector<double> all(24);
    cube.read_all(H5T_NATIVE_DOUBLE, all.data());
    CHECK(same_bits(all, expected));
    std::vector<double> block(4);
    cube.read_block({1, 2, 0}, {1, 1, 4}, H5T_NATIVE_DOUBLE, block.data());
    CHECK(same_bits(block, row));
    std::vector<double> column(2);
    cube.read_block({0, 0, 3}, {2, 1, 1}, H5T_NATIVE_DOUBLE, column.data());
    CHECK(column == std::vector<double>{1.0, 2.0});
}

TEST_CASE("chunk extents are clamped to the axes; a dataset without axes is one block") {
    const std::string path = scratch("shapes");
    hdf5_file file = hdf5_file::create(path);
    // HDF5 refuses a chunk extent of 0 and one longer than a fixed-size axis.
    const std::int64_t missing = -1;
    const hdf5_dataset counts =
        file.create_dataset("counts", H5T_NATIVE_INT64, {3, 2}, {5, 0}, &missing);
    CHECK(counts.chunk_shape() == std::vector<hsize_t>{3, 1});
    std::vector<std::int64_t> values(6);
    counts.read_all(H5T_NATIVE_INT64, values.data());
    CHECK(values == std::vector<std::int64_t>(6, -1));

    const signed char zero = 0, three = 3;
    hdf5_dataset status = file.create_dataset("status", H5T_NATIVE_SCHAR, {}, {}, &zero);
    CHECK(status.shape().empty());
    CHECK(status.chunk_shape().empty());
    status.write_block({}, {}, H5T_NATIVE_SCHAR, &three);
    signed char read = 0;
    status.read_block({}, {}, H5T_NATIVE_SCHAR, &read);
    CHECK(read == 3);
}

TEST_CASE("a block the dataset's shape does not hold is an io_error showing the shape") {
    const std::string path = scratch("outside");
    hdf5_file file = hdf5_file::create(path);
    hdf5_dataset grid = file.create_dataset("grid", H5T_NATIVE_DOUBLE, {2, 3});
    const std::vector<double> values(3, 1.0);
    const std::string past_the_end =
        "cannot write the block at (1, 1) of dataset '/grid' in '" + path +
        "': the dataset's shape, 2 x 3, does not hold a block of 1 x 3 there";
    CHECK_THROWS_WITH_AS(grid.write_block({1, 1}, {1, 3}, H5T_NATIVE_DOUBLE, values.data()),
                         past_the_end.c_str(), nadyn::io_error);
    std::vector<double> out(3);
    const std::string other_rank =
        "cannot read the block at (0, 0, 0) of dataset '/grid' in '" + path +
        "': the dataset's shape, 2 x 3, does not hold a block of 1 x 1 x 3 there";
    CHECK_THROWS_WITH_AS(grid.read_block({0, 0, 0}, {1, 1, 3}, H5T_NATIVE_DOUBLE, out.data()),
                         other_rank.c_str(), nadyn::io_error);
}

TEST_CASE("dimension scales are attached, and attributes of any type and string lists read back") {
    const std::string path = scratch("scales");
    {
        hdf5_file file = hdf5_file::create(path);
        const std::vector<double> betas{0.5, 3.0};
        hdf5_dataset beta = file.create_dataset("beta", H5T_NATIVE_DOUBLE, {2});
        beta.write_all(H5T_NATIVE_DOUBLE, betas.data());
        beta.make_scale("beta");
        const std::vector<const char*> names{"pre-ln", "peri-ln"};
        hdf5_dataset scheme = file.create_dataset("scheme", nadyn::detail::hdf5_string_type(), {2});
        scheme.write_all(nadyn::detail::hdf5_string_type(), names.data());
        scheme.make_scale("scheme");
        hdf5_dataset value = file.create_dataset("value", H5T_NATIVE_DOUBLE, {2, 2}, {1, 2});
        value.attach_scale(beta, 0);
        value.attach_scale(scheme, 1);
        const signed char flags[4] = {0, 1, 2, 3};
        value.write_attribute("flag_values", H5T_NATIVE_SCHAR, {4}, flags);
        value.write_attribute("overrides", std::vector<std::string>{"run.n=8", "", "üñí"});
        value.write_attribute("description", std::string("a value"));
    }
    const hdf5_file file = hdf5_file::open_read_only(path);
    // What H5DSset_scale and H5DSattach_scale record (what netCDF and xarray read).
    const auto beta = file.open_dataset("beta");
    CHECK(beta.read_attribute("CLASS") == nadyn::parameter_value{std::string("DIMENSION_SCALE")});
    CHECK(beta.read_attribute("NAME") == nadyn::parameter_value{std::string("beta")});
    CHECK(beta.has_attribute("REFERENCE_LIST"));
    CHECK(file.open_dataset("scheme").has_attribute("REFERENCE_LIST"));
    const auto value = file.open_dataset("value");
    CHECK(value.has_attribute("DIMENSION_LIST"));
    CHECK(value.read_integers("flag_values") == std::vector<std::int64_t>{0, 1, 2, 3});
    CHECK(value.read_strings("overrides") == std::vector<std::string>{"run.n=8", "", "üñí"});
    CHECK(value.read_strings("description") == std::vector<std::string>{"a value"});
    CHECK(!value.read_strings("flag_values").has_value());
    CHECK(!value.read_strings("absent").has_value());
}

TEST_CASE("read_strings reads fixed-size strings too, a full one whole") {
    const std::string path = scratch("fixed");
    {
        const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        REQUIRE(file >= 0);
        const hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, 4);
        H5Tset_strpad(type, H5T_STR_NULLPAD);
        const hsize_t three = 3;
        const hid_t space = H5Screate_simple(1, &three, nullptr);
        const hid_t attribute = H5Acreate2(file, "names", type, space, H5P_DEFAULT, H5P_DEFAULT);
        const char text[12] = {'a', 'b', 'c', 'd', 'x', 0, 0, 0, 0, 0, 0, 0};
        REQUIRE(H5Awrite(attribute, type, text) >= 0);
        H5Aclose(attribute);
        H5Sclose(space);
        H5Tclose(type);
        H5Fclose(file);
    }
    const hdf5_file file = hdf5_file::open_read_only(path);
    CHECK(file.read_strings("names") == std::vector<std::string>{"abcd", "x", ""});
}
