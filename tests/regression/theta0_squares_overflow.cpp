// Regression: make_initial normalised each theta0 row by 1/sqrt(sum of squares). Entries
// beyond ~1e154 overflow that sum to inf, so the row silently became the zero vector (a token
// with no direction; found by fuzz_input_files); entries below ~1e-154 underflow it to 0, so
// a valid row was refused as "zero". Such rows are now divided by their largest entry first.
#include "fuzz_inputs.hpp"

#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/initial.hpp"

#include <doctest/doctest.h>
#include <hdf5.h>

#include <cmath>
#include <string>
#include <vector>

using namespace nadyn;

namespace {

void write_theta0(const std::string& path, const std::vector<double>& values, hsize_t rows,
                  hsize_t cols) {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(file >= 0);
    const hsize_t dims[2] = {rows, cols};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dataset =
        H5Dcreate2(file, "theta0", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(H5Dwrite(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >=
            0);
    H5Dclose(dataset);
    H5Sclose(space);
    H5Fclose(file);
}

double squared_norm(const std::vector<double>& theta, std::size_t k, std::size_t d) {
    double sum = 0.0;
    for (std::size_t a = 0; a < d; ++a)
        sum += theta[k * d + a] * theta[k * d + a];
    return sum;
}

} // namespace

TEST_CASE("theta0 rows far from unit length normalise to their direction") {
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/regression_theta0_scales.h5";
    // Directions (1, -1, 3)/sqrt 11, (1, 0, 2)/sqrt 5 and (1, 2, 2)/3 at three scales.
    write_theta0(path, {1e200, -1e200, 3e200, 1e-170, 0.0, 2e-170, 1.0, 2.0, 2.0}, 3, 3);
    const initial_state s =
        make_initial(with_file_contents(initial_spec::parse("file:" + path), 3, 3), 3, 3, 1, 1.0);
    const double expected[3][3] = {{1 / std::sqrt(11.0), -1 / std::sqrt(11.0), 3 / std::sqrt(11.0)},
                                   {1 / std::sqrt(5.0), 0.0, 2 / std::sqrt(5.0)},
                                   {1.0 / 3, 2.0 / 3, 2.0 / 3}};
    for (std::size_t k = 0; k < 3; ++k)
        for (std::size_t a = 0; a < 3; ++a)
            CHECK(std::abs(s.theta[k * 3 + a] - expected[k][a]) <= 1e-15);
}

TEST_CASE("a zero theta0 row is still refused, however it is scaled") {
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/regression_theta0_zero.h5";
    write_theta0(path, {1e300, 0.0, 0.0, 0.0}, 2, 2);
    CHECK_THROWS_AS(
        make_initial(with_file_contents(initial_spec::parse("file:" + path), 2, 2), 2, 2, 1, 1.0),
        input_error);
}

TEST_CASE("the fuzz input: theta0 entries up to 1e254 give unit rows") {
    const auto c = nadyn_test::unpack_input_files("theta0_squares_overflow.fuzz");
    const initial_state s = make_initial(
        with_file_contents(initial_spec::parse("file:" + c.path), c.n, c.d), c.n, c.d, 1, 1.0);
    REQUIRE(s.theta.size() == c.n * c.d);
    for (std::size_t k = 0; k < c.n; ++k)
        CHECK(std::abs(squared_norm(s.theta, k, c.d) - 1.0) <= 1e-12);
}
