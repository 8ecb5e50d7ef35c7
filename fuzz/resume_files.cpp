// Fuzz target: whole nadyn files, resumed.
//
// Input: the bytes of a file (seeds: the real nadyn files of fuzz/seeds/whole_files/, so the
// mutations flip and cut real metadata). The resume path of `nadyn simulate --resume` runs on
// it as the command line runs it, but in one process: the walk of every object that the
// command makes in a child first (verify_readable), the run recorded in the file
// (simulation::from_file), the check of its input files, then resume_file for one more step
// of dt past the last frame: the file reopened for writing, its series cut to the kept frames,
// its status rewritten, one frame appended in SWMR mode, the file closed. A damaged file must
// end in input_error, io_error or numerical_fault; any other exception, a crash, a sanitizer
// report or a hang (> 10 s: a retry loop of HDF5's) is a bug. Crashes inside libhdf5 are told
// from nadyn's by scripts/fuzz.sh (fuzz/README.md); the command line turns them into an error
// message by reading in a child process.
#include "fuzz_support.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/integrate.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = nadyn_fuzz::write_input(data, size);
    nadyn_fuzz::expect_clean_failure(
        [&] {
            try {
                nadyn::verify_readable(path);
                nadyn::simulation run = nadyn::simulation::from_file(path);
                run.check_inputs_unchanged(path);
                double last = 0;
                {
                    // Closed before the resume: HDF5 refuses to open for writing a file this
                    // process holds open for reading.
                    const nadyn::trajectory_reader file(path);
                    if (file.frame_count() == 0) return;
                    last = file.times().back();
                }
                const double dt = run.config().integration.dt;
                if (!std::isfinite(last) || !std::isfinite(dt) || dt <= 0) return;
                // One step more: a small run whatever the file says its T was.
                (void)run.resume_file(path, last + dt);
            } catch (const nadyn::numerical_fault&) {
                // a state the damage made non-finite: the run stops like on a blow-up
            }
        },
        "resume");
    return 0;
}
