#pragma once
// Helpers of the tests that run nadyn under mpirun (tests/mpi/*.cpp).
#include "cli_support.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace nadyn_test {

inline const std::string mpirun = NADYN_MPIRUN;

// mpirun's arguments for `ranks` copies of nadyn running `args`. As root (CI containers) Open
// MPI needs --allow-run-as-root; oversubscribe: 3 ranks on 2 cores. Each rank runs one OpenMP
// thread: P ranks of 2 threads each on CI's 2 cores spend most of their time spinning (libgomp's
// and Open MPI's busy waits against each other), which doubled these suites' time. The
// one-process runs they are compared with keep all their threads, so the bitwise comparisons
// also hold across thread counts.
inline std::vector<std::string> mpirun_args(int ranks, const std::vector<std::string>& args) {
    std::vector<std::string> all = {
        "--allow-run-as-root", "--oversubscribe", "-x", "OMP_NUM_THREADS=1", "-np",
        std::to_string(ranks), nadyn_path};
    all.insert(all.end(), args.begin(), args.end());
    return all;
}

inline run_result run_ranks(int ranks, const std::vector<std::string>& args,
                            const run_options& options) {
    return run_program(mpirun, mpirun_args(ranks, args), options);
}

// `nadyn sweep EXPERIMENT --out OUT --quiet` in `dir`: in one process when ranks is 0, else
// over `ranks` ranks.
inline run_result quiet_sweep(int ranks, const std::string& dir, const std::string& experiment,
                              const std::string& out) {
    const std::vector<std::string> args = {"sweep", experiment, "--out", out, "--quiet"};
    return ranks == 0 ? run_nadyn(args, in_dir(dir)) : run_ranks(ranks, args, in_dir(dir));
}

// The file a sweep over `ranks` ranks writes in a test that compares several: "p<ranks>.h5".
inline std::string ranks_file(int ranks) {
    std::string out = "p"; // appended: GCC 12 warns (-Wrestrict) on "p" + string
    out += std::to_string(ranks);
    out += ".h5";
    return out;
}

// The counts of the summary's "runs per rank a, b, ...;" (rank 0 first); empty without one.
inline std::vector<std::size_t> runs_per_rank(const std::string& out) {
    const std::string mark = "runs per rank ";
    const auto at = out.find(mark);
    if (at == std::string::npos) return {};
    const auto end = out.find(';', at);
    std::istringstream list(out.substr(at + mark.size(), end - at - mark.size()));
    std::vector<std::size_t> counts;
    for (std::string item; std::getline(list, item, ',');)
        counts.push_back(std::stoul(item));
    return counts;
}

// The file's `status` attribute ("running", "complete", "interrupted", ...).
inline std::string status_text(const std::string& path) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t attribute = H5Aopen(file, "status", H5P_DEFAULT);
    const hid_t type = H5Aget_type(attribute);
    char* value = nullptr;
    H5Aread(attribute, type, &value);
    std::string text = value ? value : "";
    H5free_memory(value);
    H5Tclose(type);
    H5Aclose(attribute);
    H5Fclose(file);
    return text;
}

// How many lines of `text` start with `start` (one report per job, not one per rank).
inline std::size_t lines_starting(const std::string& text, const std::string& start) {
    const auto lines = split_lines(text);
    return static_cast<std::size_t>(std::count_if(
        lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(start, 0) == 0; }));
}

} // namespace nadyn_test
