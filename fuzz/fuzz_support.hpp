#pragma once
// What the file-reading fuzz targets share: a scratch file per process for the input, and the
// rule that a malformed file ends in input_error or io_error, nothing else.
#include "nadyn/model/error.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

namespace nadyn_fuzz {

// One scratch directory per process (libFuzzer's -fork/-jobs run several), removed at exit.
inline std::filesystem::path scratch_directory;

inline void remove_scratch_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(scratch_directory, ignored);
}

inline const std::string& input_path() {
    static const std::string path = [] {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/nadyn-fuzz-XXXXXX";
        if (!mkdtemp(pattern.data())) {
            std::perror("nadyn fuzz: mkdtemp");
            std::abort();
        }
        scratch_directory = pattern;
        std::atexit(remove_scratch_directory);
        return (scratch_directory / "input.h5").string();
    }();
    return path;
}

// Writes `size` bytes to the input file, replacing it; returns its path.
inline const std::string& write_input(const std::uint8_t* data, std::size_t size) {
    const std::string& path = input_path();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) {
        std::perror("nadyn fuzz: cannot write the input file");
        std::abort();
    }
    return path;
}

template <class Read> void expect_clean_failure(Read read, const char* what) {
    try {
        read();
    } catch (const nadyn::input_error&) {
    } catch (const nadyn::io_error&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nadyn fuzz: %s threw an unexpected exception: %s\n", what, e.what());
        std::abort();
    }
}

} // namespace nadyn_fuzz
