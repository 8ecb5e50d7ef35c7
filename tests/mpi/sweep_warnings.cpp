// mpirun -np P nadyn sweep says the experiment's configuration warnings as the one-process
// sweep does: once, from rank 0 (issue 39 item 8: the MPI sweep said none).
#include "mpi_support.hpp"

#include <doctest/doctest.h>

using namespace nadyn_test;

TEST_CASE("a negative beta is warned once over ranks, as in one process") {
    const std::string dir = scratch_dir("mpi/warnings");
    write_text(dir + "/neg.toml", "[run]\nn = 6\nd = 3\nT = 0.2\n[sweep]\nbeta = [-2, -1, 1]\n"
                                  "seed = [1, 2]\n");
    const run_result one = quiet_sweep(0, dir, "neg.toml", "one.h5");
    REQUIRE(one.status == 0);
    CHECK(count_of(one.err, "beta < 0") == 1);
    for (int ranks : {2, 3}) {
        INFO("ranks: " << ranks);
        const run_result r = quiet_sweep(ranks, dir, "neg.toml", ranks_file(ranks));
        INFO(r.out << r.err);
        REQUIRE(r.status == 0);
        CHECK(count_of(r.err, "beta < 0") == 1); // rank 0 only, once for the sweep
        CHECK(contains(r.err, "attends most to the keys least aligned with its query"));
    }
    write_text(dir + "/pos.toml", "[run]\nn = 6\nd = 3\nT = 0.2\n[sweep]\nbeta = [1, 2]\n");
    const run_result positive = quiet_sweep(2, dir, "pos.toml", "pos.h5");
    REQUIRE(positive.status == 0);
    CHECK_FALSE(contains(positive.err, "beta < 0"));
}
