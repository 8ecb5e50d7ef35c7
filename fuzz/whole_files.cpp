// Fuzz target: whole nadyn files, as the readers meet them.
//
// Input: the bytes of a file. The seeds are real nadyn files (fuzz/seeds/whole_files/: a
// complete trajectory, one killed in SWMR mode, a --no-swmr one, a sweep file), so the
// mutations are bit flips and cuts of real metadata, not only of small hand-made files.
// Every reader nadyn has runs on it: the trajectory reader and all its accessors, the check
// of a file left empty, the sweep summary, and the full metadata walk that nadyn.open does
// before a SWMR open (--resume reads through the same reader first). A damaged file must end in
// input_error or io_error; any other exception, a crash, a sanitizer report or a hang (the
// SWMR retry loop) is a bug.
#include "nadyn/detail/hdf5.hpp"
#include "nadyn/detail/output_claim.hpp"
#include "nadyn/error.hpp"
#include "nadyn/h5md.hpp"
#include "nadyn/sweep.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

// One scratch directory per process (libFuzzer's -fork/-jobs run several), removed at exit.
std::filesystem::path scratch_directory;

void remove_scratch_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(scratch_directory, ignored);
}

const std::string& input_path() {
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

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = input_path();
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        if (!out) {
            std::perror("nadyn fuzz: cannot write the input file");
            std::abort();
        }
    }
    expect_clean_failure(
        [&] {
            const nadyn::trajectory_reader file(path);
            (void)file.status();
            (void)file.parameters();
            (void)file.parameter_descriptions();
            const std::size_t frames = file.frame_count();
            if (frames == 0) return;
            (void)file.steps();
            (void)file.times();
            for (const auto& name : file.observable_names()) {
                (void)file.observable(name);
                (void)file.describe_observable(name);
            }
            for (const std::size_t frame : {std::size_t{0}, frames - 1}) {
                (void)file.magnitudes(frame);
                if (file.has_positions()) (void)file.positions(frame);
            }
            std::size_t rows = 0, cols = 0, stack = 0;
            for (const char* name : {"theta0", "r_initial", "Q", "K", "V"})
                (void)file.parameter_matrix(name, &rows, &cols, &stack);
        },
        "trajectory_reader");
    // Never throws: damage means "not an empty leftover".
    (void)nadyn::detail::holds_no_results(path);
    expect_clean_failure([&] { nadyn::detail::hdf5_file::verify_readable(path); },
                         "verify_readable");
    expect_clean_failure(
        [&] {
            if (nadyn::is_sweep_file(path)) (void)nadyn::describe_sweep_file(path);
        },
        "describe_sweep_file");
    return 0;
}
