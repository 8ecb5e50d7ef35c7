// nadyn sweep refuses bad input before anything runs (issue 24, points 9 and 10): input
// files of every distinct point, what an experiment file is, its keys' types and spellings,
// the messages' length and characters, --set, --jobs, a resumed file's experiment, and a
// dry run of many runs that answers at once. Each refusal is one line, status 2, no file.
#include "cli_support.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace nadyn_test;

namespace {

// Refused as bad input: status 2, one line naming `part`, no result file out.h5.
void check_refused(const run_result& r, const std::string& dir, const std::string& part) {
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(line_count(r.err) == 1);
    CHECK_MESSAGE(contains(r.err, part), part);
    CHECK(!fs::exists(dir + "/out.h5"));
}

} // namespace

TEST_CASE("a sweep whose input file is missing is refused before any run, writing nothing") {
    const std::string dir = scratch_dir("sweep_input/missing_init");
    write_h5(dir + "/good.h5", {{"theta0", {4, 3}, std::vector<double>(12, 1.0)}});
    // One point of the init axis names a file that is not there: the whole sweep is refused.
    write_text(dir + "/exp.toml", "[run]\nn = 4\nd = 3\nT = 0.2\n[sweep]\n"
                                  "init = [\"file:good.h5\", \"file:absent.h5\"]\n"
                                  "seed = [1, 2]\n");
    check_refused(run_nadyn({"sweep", "exp.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "absent.h5");
    // A file of the wrong shape for one n of the sweep, too.
    write_text(dir + "/shape.toml", "[run]\nd = 3\nT = 0.2\ninit = \"file:good.h5\"\n"
                                    "[sweep]\nn = [4, 5]\n");
    check_refused(run_nadyn({"sweep", "shape.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "run 1 (n=5)");
    // Weights and ln_params files as well.
    write_text(dir + "/weights.toml", "[run]\nn = 4\nd = 3\nT = 0.2\n"
                                      "weights = \"file:noweights.h5\"\n");
    check_refused(run_nadyn({"sweep", "weights.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "noweights.h5");
    write_text(dir + "/ln.toml", "[run]\nn = 4\nd = 3\nT = 0.2\nnorm = \"layernorm\"\n"
                                 "init = \"uniform\"\nln_params = \"file:nogain.h5\"\n");
    check_refused(run_nadyn({"sweep", "ln.toml", "--out", "out.h5"}, in_dir(dir)), dir,
                  "nogain.h5");
}
