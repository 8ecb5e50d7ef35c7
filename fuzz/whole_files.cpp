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
#include "files/output_claim.hpp"
#include "fuzz_support.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

using nadyn_fuzz::expect_clean_failure;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = nadyn_fuzz::write_input(data, size);
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
    expect_clean_failure([&] { nadyn::verify_readable(path); }, "verify_readable");
    expect_clean_failure(
        [&] {
            if (nadyn::is_sweep_file(path)) (void)nadyn::describe_sweep_file(path);
        },
        "describe_sweep_file");
    return 0;
}
