#include "files/hdf5.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/version.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
    fs::create_directories(NADYN_TEST_TMPDIR);
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/h5md_" + name;
    fs::remove(path);
    return path;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

// Values whose bits a lossy path would change: irrational, tiny, negative zero.
std::vector<double> frame_values(std::size_t count, std::size_t frame) {
    std::vector<double> values(count);
    for (std::size_t i = 0; i < count; ++i)
        values[i] = std::sin(1.0 + static_cast<double>(i) + 100.0 * static_cast<double>(frame));
    values[0] = frame == 0 ? -0.0 : 1e-310;
    return values;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

nadyn::trajectory_layout small_layout() {
    nadyn::trajectory_layout layout;
    layout.n = 5;
    layout.d = 3;
    layout.observables = {{"energy"}, {"order"}};
    layout.scheme = "rk4";
    return layout;
}

// Writes `frames` frames of small_layout()-shaped data: steps 0, 10, ..., times 0, 0.1, ...
void write_frames(nadyn::trajectory_writer& writer, std::size_t frames, std::size_t n,
                  std::size_t d) {
    for (std::size_t f = 0; f < frames; ++f) {
        const auto theta = frame_values(n * d, f);
        const auto r = frame_values(n, f + 7);
        writer.write_frame(static_cast<std::int64_t>(10 * f), 0.1 * static_cast<double>(f),
                           theta.data(), r.data(), {1.0 / 3.0 + f, -2.5 * f});
    }
}

} // namespace

TEST_CASE("a trajectory round-trips bit for bit") {
    const std::string path = temp_path("roundtrip.h5");
    nadyn::parameter_list parameters;
    parameters.set("seed", std::int64_t{42});
    parameters.set("big", std::int64_t{1} << 62);
    parameters.set("dt", 0.1);
    parameters.set("scheme", std::string("rk4 \xCE\xB8")); // UTF-8 survives
    nadyn::parameter_list statistics;
    statistics.set("steps_taken", std::int64_t{20});
    statistics.set("wall_time", 1.25);
    const std::vector<double> q{1, 2, 3, 4, 5, 6, 7, 8, 9.5};
    const std::vector<double> r0{0.5, 1, 1.5, 2, 2.5};
    {
        nadyn::trajectory_writer writer(path, small_layout(), false);
        writer.write_parameters(parameters);
        writer.write_parameter_matrix("Q", 3, 3, q.data());
        writer.write_parameter_matrix("r0", 5, 1, r0.data());
        write_frames(writer, 3, 5, 3);
        CHECK(writer.frames_written() == 3);
        writer.finish(nadyn::run_status::complete, statistics);
    }

    const nadyn::trajectory_reader reader(path);
    CHECK(reader.status() == "complete");
    CHECK(reader.n() == 5);
    CHECK(reader.d() == 3);
    CHECK(reader.has_positions());
    REQUIRE(reader.frame_count() == 3);
    CHECK(reader.steps() == std::vector<std::int64_t>{0, 10, 20});
    CHECK(reader.times() == std::vector<double>{0.0, 0.1, 0.2});
    CHECK(reader.observable_names() == std::vector<std::string>{"energy", "order"});
    CHECK(reader.observable("energy") ==
          std::vector<double>{1.0 / 3.0, 1.0 / 3.0 + 1, 1.0 / 3.0 + 2});
    CHECK(reader.observable("order") == std::vector<double>{0.0, -2.5, -5.0});
    for (std::size_t f = 0; f < 3; ++f) {
        CHECK(same_bits(reader.positions(f), frame_values(15, f)));
        CHECK(same_bits(reader.magnitudes(f), frame_values(5, f + 7)));
    }

    auto expected = parameters.entries();
    expected.insert(expected.end(), statistics.entries().begin(), statistics.entries().end());
    CHECK(reader.parameters().entries() == expected); // names, order, types and values

    std::size_t rows = 0, cols = 0;
    CHECK(reader.parameter_matrix("Q", &rows, &cols) == q);
    CHECK((rows == 3 && cols == 3));
    CHECK(reader.parameter_matrix("r0", &rows, &cols) == r0);
    CHECK((rows == 5 && cols == 1));
    CHECK_FALSE(reader.parameter_matrix("V").has_value());

    CHECK_THROWS_AS((void)reader.positions(3), nadyn::input_error);
    CHECK_THROWS_AS((void)reader.magnitudes(3), nadyn::input_error);
    CHECK_THROWS_AS((void)reader.observable("missing"), nadyn::input_error);
}

TEST_CASE("the file carries the H5MD 1.1 header and the chunk layout") {
    const std::string path = temp_path("header.h5");
    {
        nadyn::trajectory_writer writer(path, small_layout(), false);
        write_frames(writer, 1, 5, 3);
    }
    const auto file = nadyn::detail::hdf5_file::open_read_only(path);
    CHECK(file.open_group("h5md").read_integers("version") == std::vector<std::int64_t>{1, 1});
    const auto creator = file.open_group("h5md/creator");
    CHECK(creator.read_attribute("name") == nadyn::parameter_value(std::string("nadyn")));
    CHECK(creator.read_attribute("version") ==
          nadyn::parameter_value(std::string(nadyn::version())));
    CHECK(file.open_group("h5md/author").read_attribute("name").has_value());
    const auto module = file.open_group("h5md/modules/nadyn");
    CHECK(module.read_integers("version") == std::vector<std::int64_t>{nadyn::file_format_version});
    CHECK(module.read_attribute("scheme") == nadyn::parameter_value(std::string("rk4")));
    CHECK(file.open_group("particles/tokens/box").read_attribute("dimension") ==
          nadyn::parameter_value(std::int64_t{3}));
    CHECK(file.open_dataset("particles/tokens/position/value").chunk_shape() ==
          std::vector<hsize_t>{1, 5, 3});
    CHECK(file.open_dataset("particles/tokens/magnitude/value").chunk_shape() ==
          std::vector<hsize_t>{1, 5});
    CHECK(file.open_dataset("observables/energy/step").chunk_shape() == std::vector<hsize_t>{256});
}

TEST_CASE("a trajectory without positions, compressed") {
    const std::string path = temp_path("no_positions.h5");
    auto layout = small_layout();
    layout.positions = false;
    layout.compress = true;
    {
        nadyn::trajectory_writer writer(path, layout, false);
        for (std::size_t f = 0; f < 2; ++f) {
            const auto r = frame_values(5, f);
            writer.write_frame(static_cast<std::int64_t>(f), 0.5 * f, nullptr, r.data(), {1, 2});
        }
        writer.finish(nadyn::run_status::complete, {});
    }
    const nadyn::trajectory_reader reader(path);
    CHECK_FALSE(reader.has_positions());
    CHECK(reader.n() == 5);
    CHECK(reader.d() == 3);
    REQUIRE(reader.frame_count() == 2);
    CHECK(same_bits(reader.magnitudes(1), frame_values(5, 1)));
    CHECK(reader.times() == std::vector<double>{0.0, 0.5});
    CHECK_THROWS_AS((void)reader.positions(0), nadyn::input_error);
}

TEST_CASE("a writer destroyed without finish leaves a readable running file") {
    const std::string path = temp_path("unfinished.h5");
    {
        nadyn::trajectory_writer writer(path, small_layout(), false);
        write_frames(writer, 2, 5, 3);
    }
    const nadyn::trajectory_reader reader(path);
    CHECK(reader.status() == "running");
    REQUIRE(reader.frame_count() == 2);
    CHECK(reader.steps() == std::vector<std::int64_t>{0, 10});
    CHECK(same_bits(reader.positions(1), frame_values(15, 1)));
}

TEST_CASE("a frame missing from any series is not counted") {
    // As if the run was killed after writing the values of frame 2 but before its steps.
    const std::string path = temp_path("partial.h5");
    {
        nadyn::trajectory_writer writer(path, small_layout(), false);
        write_frames(writer, 2, 5, 3);
    }
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(file >= 0);
    const hid_t set = H5Dopen2(file, "particles/tokens/magnitude/value", H5P_DEFAULT);
    const hsize_t dims[2] = {3, 5};
    CHECK(H5Dset_extent(set, dims) >= 0);
    H5Dclose(set);
    H5Fclose(file);
    const nadyn::trajectory_reader reader(path);
    CHECK(reader.frame_count() == 2);
    CHECK(reader.steps() == std::vector<std::int64_t>{0, 10});
    CHECK_THROWS_AS((void)reader.magnitudes(2), nadyn::input_error);
}

TEST_CASE("finish records an interrupted run") {
    const std::string path = temp_path("interrupted.h5");
    {
        nadyn::trajectory_writer writer(path, small_layout(), false);
        write_frames(writer, 1, 5, 3);
        writer.finish(nadyn::run_status::interrupted, {});
    }
    const nadyn::trajectory_reader reader(path);
    CHECK(reader.status() == "interrupted");
    CHECK(reader.frame_count() == 1);
}

TEST_CASE("an existing file is only replaced when asked") {
    const std::string path = temp_path("existing.h5");
    write_text(path, "keep me");
    CHECK_THROWS_AS((nadyn::trajectory_writer{path, small_layout(), false}), nadyn::input_error);
    CHECK(read_text(path) == "keep me");
    { nadyn::trajectory_writer writer(path, small_layout(), true); }
    CHECK(nadyn::trajectory_reader(path).frame_count() == 0);
}

TEST_CASE("an uncreatable output file is an input_error and leaves nothing behind") {
    const std::string path = "/nonexistent_dir/x.h5";
    try {
        nadyn::trajectory_writer writer(path, small_layout(), false);
        FAIL("expected input_error");
    } catch (const nadyn::input_error& e) {
        const std::string message = e.what();
        CHECK(message.find(path) != std::string::npos);
        CHECK(message.find("does not exist") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(path));
}

TEST_CASE("reading trajectories that are not trajectories") {
    CHECK_THROWS_AS(nadyn::trajectory_reader{temp_path("absent.h5")}, nadyn::input_error);
    const std::string text = temp_path("text.h5");
    write_text(text, "not hdf5\n");
    CHECK_THROWS_AS(nadyn::trajectory_reader{text}, nadyn::input_error);
    const std::string empty = temp_path("empty.h5");
    nadyn::detail::hdf5_file::create(empty, false);
    CHECK_THROWS_AS(nadyn::trajectory_reader{empty}, nadyn::input_error);
}

TEST_CASE("read_matrix_dataset") {
    const std::string path = temp_path("matrices.h5");
    const std::vector<double> w{1, 2, 3, 4, 5, 6};
    {
        auto file = nadyn::detail::hdf5_file::create(path, false);
        file.create_dataset("W", {2, 3}, w.data());
        file.create_group("g").create_dataset("vec", {4}, w.data());
        file.create_dataset("cube", {2, 1, 3}, w.data());
        const std::vector<double> bad{1, std::numeric_limits<double>::quiet_NaN()};
        file.create_dataset("bad", {1, 2}, bad.data());
        // An integer dataset: any numeric type is read converted to double.
        const int ints[2][2] = {{1, -2}, {3, 4}};
        const hsize_t dims[2] = {2, 2};
        const hid_t space = H5Screate_simple(2, dims, nullptr);
        const hid_t set =
            H5Dcreate2(file.id(), "I", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        REQUIRE(H5Dwrite(set, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, ints) >= 0);
        H5Dclose(set);
        H5Sclose(space);
    }

    const auto matrix = nadyn::read_matrix_dataset(path, "W");
    REQUIRE(matrix.has_value());
    CHECK((matrix->rows == 2 && matrix->cols == 3));
    CHECK(matrix->values == w);
    const auto ints = nadyn::read_matrix_dataset(path, "I");
    REQUIRE(ints.has_value());
    CHECK(ints->values == std::vector<double>{1, -2, 3, 4});
    CHECK_FALSE(nadyn::read_matrix_dataset(path, "missing").has_value());
    CHECK_FALSE(nadyn::read_matrix_dataset(path, "g/missing").has_value());
    CHECK_FALSE(nadyn::read_matrix_dataset(path, "nothere/missing").has_value());

    const auto vec = nadyn::read_matrix_dataset(path, "g/vec", true);
    REQUIRE(vec.has_value());
    CHECK((vec->rows == 4 && vec->cols == 1));
    CHECK_THROWS_AS(nadyn::read_matrix_dataset(path, "g/vec"), nadyn::input_error);
    CHECK_THROWS_AS(nadyn::read_matrix_dataset(path, "g"), nadyn::input_error);
    CHECK_THROWS_AS(nadyn::read_matrix_dataset(path, "bad"), nadyn::input_error);
    try {
        (void)nadyn::read_matrix_dataset(path, "cube");
        FAIL("expected input_error");
    } catch (const nadyn::input_error& e) {
        CHECK(std::string(e.what()) == "dataset 'cube' in '" + path +
                                           "' must be a 2-D array of numbers, found a 3-D "
                                           "array of floats");
    }

    CHECK_THROWS_AS(nadyn::read_matrix_dataset(temp_path("absent.h5"), "W"), nadyn::input_error);
    const std::string text = temp_path("matrix.txt");
    write_text(text, "1 2\n3 4\n");
    CHECK_THROWS_AS(nadyn::read_matrix_dataset(text, "W"), nadyn::input_error);
}

TEST_CASE("a frame larger than 4 MiB is chunked along tokens and round-trips") {
    const std::string path = temp_path("large.h5");
    nadyn::trajectory_layout layout;
    layout.n = 70000;
    layout.d = 8;
    layout.scheme = "euler";
    {
        nadyn::trajectory_writer writer(path, layout, false);
        for (std::size_t f = 0; f < 2; ++f) {
            const auto theta = frame_values(layout.n * layout.d, f);
            const auto r = frame_values(layout.n, f);
            writer.write_frame(static_cast<std::int64_t>(f), 1.0 * f, theta.data(), r.data(), {});
        }
    }
    {
        const auto file = nadyn::detail::hdf5_file::open_read_only(path);
        // 65536 tokens x 8 doubles = 4 MiB exactly.
        CHECK(file.open_dataset("particles/tokens/position/value").chunk_shape() ==
              std::vector<hsize_t>{1, 65536, 8});
        CHECK(file.open_dataset("particles/tokens/magnitude/value").chunk_shape() ==
              std::vector<hsize_t>{1, 70000});
    }
    const nadyn::trajectory_reader reader(path);
    REQUIRE(reader.frame_count() == 2);
    CHECK(same_bits(reader.positions(1), frame_values(layout.n * layout.d, 1)));
    CHECK(same_bits(reader.magnitudes(0), frame_values(layout.n, 0)));
}

TEST_CASE("a dimension in the thousands fits the box attributes") {
    // d "none" strings exceed the 64 KiB an attribute may take in a classic object header.
    const std::string path = temp_path("wide.h5");
    nadyn::trajectory_layout layout;
    layout.n = 2;
    layout.d = 5000;
    {
        nadyn::trajectory_writer writer(path, layout, false);
        const auto theta = frame_values(layout.n * layout.d, 0);
        const std::vector<double> r{1, 2};
        writer.write_frame(0, 0, theta.data(), r.data(), {});
    }
    const nadyn::trajectory_reader reader(path);
    CHECK(reader.d() == 5000);
    CHECK(same_bits(reader.positions(0), frame_values(layout.n * layout.d, 0)));
}
