// nadyn table random: the study studies/random_weights/ under its table's name, its
// settings as --set; the flags of the table it replaced are refused.
#include "cli_support.hpp"

#include <doctest/doctest.h>

using namespace nadyn_test;

TEST_CASE("table random runs the random-weights study: a row per scheme, settings as --set") {
    const std::string dir = scratch_dir("table_random");
    const run_result csv =
        run_nadyn({"table", "random", "--format", "csv", "--no-figures", "--out-dir", dir, "--set",
                   "run.n=12", "--set", "run.d=8", "--set", "run.beta=2.8284271247461903", "--set",
                   "run.T=20", "--set", "sweep.seed=[1,2]"});
    INFO(csv.err);
    REQUIRE(csv.status == 0);
    const auto rows = split_lines(csv.out);
    REQUIRE(rows.size() == 7);
    CHECK(rows[0].rfind("scheme,gain_layer1,gain_layer1_sem,", 0) == 0);
    CHECK(rows[0].find(",collapse_votes,") != std::string::npos);
    for (const char* scheme : {"post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"})
        CHECK_MESSAGE(count_of(csv.out, std::string("\n") + scheme + ",") == 1, scheme);
    // Two seeds voted on each collapse law.
    CHECK(count_of(csv.out, "/2,") == 6);
    // The files of a study: its table, the sweep, the per-layer data of figure 5.
    CHECK(read_text(dir + "/random_weights.csv") == csv.out);
    CHECK(read_text(dir + "/random_weights.md").rfind("# Random weights", 0) == 0);
    const std::string curves = read_text(dir + "/data/random_mean_cos.csv");
    CHECK(curves.rfind("scheme,seed,layer,mean_cos\n", 0) == 0);
    CHECK(line_count(curves) == 1 + 6 * 2 * 21); // six schemes, two seeds, layers 0..20
    CHECK(!read_text(dir + "/data/random_weights.h5").empty());
}

TEST_CASE("table random refuses the flags of the C++ table it replaced, and bad settings") {
    const std::string dir = scratch_dir("table_random_bad");
    for (const auto& flags : std::vector<std::vector<std::string>>{{"--random-n", "12"},
                                                                   {"--random-d", "8"},
                                                                   {"--layers", "20"},
                                                                   {"--quick"},
                                                                   {"--r0", "2"},
                                                                   {"--alpha", "0.5"}}) {
        std::vector<std::string> args{"table", "random", "--out-dir", dir};
        args.insert(args.end(), flags.begin(), flags.end());
        const run_result r = run_nadyn(args);
        INFO(flags[0] << ": " << r.err);
        CHECK(r.status == 2);
        CHECK(contains(r.err, flags[0]));
    }
    const run_result bad = run_nadyn({"table", "random", "--out-dir", dir, "--set", "run.n=0"});
    INFO(bad.err);
    CHECK(bad.status == 2);
    CHECK(line_count(bad.err) == 1);
    CHECK(list_files(dir).empty()); // nothing written
}

TEST_CASE("table runs the Python package of its source tree, before any on PYTHONPATH") {
    // nadyn table execs python3 -m nadyn.study with python/ of the tree the program was built
    // from first on PYTHONPATH: a package named nadyn elsewhere (another checkout, an older
    // install) on PYTHONPATH is not the one that runs. The tree is found beside the program
    // (build/bin/nadyn) or, for a program outside it (a build tree elsewhere, a copy), as
    // CMake recorded it.
    const std::string dir = scratch_dir("table_package_beside");
    fs::create_directories(dir + "/other/nadyn");
    fs::create_directories(dir + "/studies");
    write_text(dir + "/other/nadyn/__init__.py", "");
    write_text(dir + "/other/nadyn/study.py", "import sys\nprint('the other package')\n"
                                              "sys.exit(3)\n");
    run_options options;
    options.env["PYTHONPATH"] = dir + "/other";
    // A copy of the program where no ancestor holds python/nadyn/ (the temporary directory,
    // not the build tree: that is inside the source tree in CI).
    const fs::path outside =
        fs::temp_directory_path() / ("nadyn_table_copy_" + std::to_string(::getpid()));
    fs::remove_all(outside);
    fs::create_directories(outside);
    fs::copy_file(nadyn_path, outside / "nadyn");
    for (fs::path up = outside; !up.empty() && up != up.root_path(); up = up.parent_path())
        REQUIRE_FALSE(fs::exists(up / "python" / "nadyn" / "study.py"));
    for (const std::string& program : {nadyn_path, (outside / "nadyn").string()}) {
        CAPTURE(program);
        const run_result r =
            run_program(program, {"table", "no_such", "--studies", dir + "/studies"}, options);
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(line_count(r.err) == 1);
        CHECK(contains(r.err, "unknown table or study 'no_such' (valid: all)"));
    }
    fs::remove_all(outside);
}
