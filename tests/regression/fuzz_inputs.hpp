#pragma once
// Inputs that the fuzz targets (fuzz/) found, replayed through the code path of the target
// that found them. The inputs live in tests/regression/data/ as the fuzzer wrote them, so
// `build-fuzz/fuzz/fuzz_<target> tests/regression/data/<file>` replays one too.
#include <doctest/doctest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace nadyn_test {

inline std::string read_data_file(const std::string& name) {
    const std::string path = std::string(NADYN_TEST_DATA_DIR) + "/" + name;
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot read " << path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// An input of fuzz_input_files: byte 0 gives n = 1 + b0 % 8, byte 1 gives d = 2 + b1 % 8,
// the rest is the init/weights file, written here to the tests' scratch directory.
struct input_files_case {
    std::size_t n = 0, d = 0;
    std::string path;
};

inline input_files_case unpack_input_files(const std::string& name) {
    const std::string bytes = read_data_file(name);
    REQUIRE(bytes.size() >= 2);
    input_files_case c;
    c.n = 1 + static_cast<unsigned char>(bytes[0]) % 8;
    c.d = 2 + static_cast<unsigned char>(bytes[1]) % 8;
    std::filesystem::create_directories(NADYN_TEST_TMPDIR);
    c.path = std::string(NADYN_TEST_TMPDIR) + "/regression_" + name + ".h5";
    std::ofstream out(c.path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data() + 2, static_cast<std::streamsize>(bytes.size() - 2));
    REQUIRE(out);
    return c;
}

} // namespace nadyn_test
