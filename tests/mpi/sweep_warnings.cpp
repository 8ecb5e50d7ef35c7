// mpirun -np P nadyn sweep says the experiment's configuration warnings as the one-process
// sweep does: once, from rank 0 (issue 39 item 8: the MPI sweep said none).
#include "mpi_support.hpp"

#include <doctest/doctest.h>

using namespace nadyn_test;

TEST_CASE("a negative beta is warned once over ranks, as in one process") {
    const std::string dir = scratch_dir("mpi/warnings");
    write_text(dir + "/neg.toml", "[run]\nn = 6\nd = 3\nT = 0.2\n[sweep]\nbeta = [-2, -1, 1]\n"
                                  "seed = [1, 2]\n");
    const run_result one =
        run_nadyn({"sweep", "neg.toml", "--out", "one.h5", "--quiet"}, in_dir(dir));
    REQUIRE(one.status == 0);
    CHECK(count_of(one.err, "beta < 0") == 1);
    for (int ranks : {2, 3}) {
        INFO("ranks: " << ranks);
        std::string out = "p"; // appended: GCC 12 warns (-Wrestrict) on "p" + string
        out += std::to_string(ranks);
        out += ".h5";
        const run_result r =
            run_ranks(ranks, {"sweep", "neg.toml", "--out", out, "--quiet"}, in_dir(dir));
        INFO(r.out << r.err);
        REQUIRE(r.status == 0);
        CHECK(count_of(r.err, "beta < 0") == 1); // rank 0 only, once for the sweep
        CHECK(contains(r.err, "attends most to the keys least aligned with its query"));
    }
    write_text(dir + "/pos.toml", "[run]\nn = 6\nd = 3\nT = 0.2\n[sweep]\nbeta = [1, 2]\n");
    const run_result positive =
        run_ranks(2, {"sweep", "pos.toml", "--out", "pos.h5", "--quiet"}, in_dir(dir));
    REQUIRE(positive.status == 0);
    CHECK_FALSE(contains(positive.err, "beta < 0"));
}
