// The program loads its shared libraries from where it was built to find them, never from the
// directory it runs in: an empty entry in its RUNPATH (CMake's build-tree default for an
// installed target) made the loader try ./libz.so.1, ./libmpi.so.40, ... first, so a file of
// that name beside a user's data broke or replaced a library.
#include "cli_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace nadyn_test;

TEST_CASE("files named like the program's libraries in the working directory are not loaded") {
    const std::string dir = scratch_dir("library_path");
    // Not libraries: the loader refuses each ("file too short"), so the program would not start
    // if it looked here. Names of the program's libraries (libmpi.so.40 in an MPI-aware build).
    for (const char* name : {"libz.so.1", "libgomp.so.1", "libstdc++.so.6", "libm.so.6",
                             "libgcc_s.so.1", "libmpi.so.40", "libfftw3.so.3", "libglpk.so.40"}) {
        std::ofstream(dir + "/" + name) << "not a library\n";
    }
    const run_result version = run_nadyn({"--version"}, in_dir(dir));
    CHECK(version.status == 0);
    CHECK(version.signal == 0);
    CHECK(version.err.empty());
    CHECK(contains(version.out, "nadyn "));

    const run_result run = run_nadyn({"simulate", "--n", "4", "--T", "0.1", "--out", "run.h5"},
                                     in_dir(dir));
    CHECK(run.status == 0);
    CHECK(contains(run.out, "complete:"));
}
