// Metastable plateaus (docs/model.md §5.3) on starts whose answer is known: three
// well-separated caps stay three clusters for a time that grows with beta; the symmetric
// start collapses in one event. The table survives a stop and a resume; sweeps record the
// longest plateau per run; bad --plateau-min values exit 2 without a file.
#include "cli_support.hpp"

#include "files/hdf5.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/plateaus.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <set>

using namespace nadyn_test;
using nadyn::plateau;

namespace {

std::vector<plateau> table_of(const std::string& path) {
    const nadyn::trajectory_reader file(path);
    const auto table = file.plateaus();
    REQUIRE(table);
    // The stored table is the library's function of the file's own clusters series.
    CHECK(table->plateaus ==
          nadyn::find_plateaus(file.times(), file.observable("clusters"), table->min_length));
    return table->plateaus;
}

// Post-LN from K = 3 caps of radius 0.01 (every cap one cluster at t = 0): the caps merge
// after a time that grows with beta.
std::vector<plateau> caps_run(const std::string& dir, const std::string& beta) {
    const std::string out = dir + "/caps_beta" + beta + ".h5";
    const auto r =
        run_nadyn({"simulate", "--scheme", "post-ln", "--init", "caps:3,0.01", "--n", "12", "--d",
                   "3", "--beta", beta, "--T", "40", "--seed", "2", "--quiet", "--out", out});
    REQUIRE_MESSAGE(r.status == 0, r.err);
    return table_of(out);
}

} // namespace

TEST_CASE("three separated caps: a first plateau at 3 clusters, longer at larger beta") {
    const std::string dir = scratch_dir("plateaus/caps");
    const auto low = caps_run(dir, "1");
    const auto high = caps_run(dir, "4");
    for (const auto* table : {&low, &high}) {
        REQUIRE(table->size() >= 2);
        CHECK(table->front().start == 0.0);
        CHECK(table->front().clusters == 3);
        CHECK_FALSE(table->front().censored);
        // The run ends as one cluster, still going: the last plateau is censored at T.
        CHECK(table->back().clusters == 1);
        CHECK(table->back().censored);
        CHECK(table->back().end == 40.0);
    }
    CHECK(high.front().length() > 2.0 * low.front().length());

    // nadyn inspect --plateaus lists the table, marking the censored plateau.
    const auto shown = run_nadyn({"inspect", dir + "/caps_beta4.h5", "--plateaus"});
    REQUIRE(shown.status == 0);
    CHECK(contains(shown.out, "lasting at least 2 (plateau_min = 5%)"));
    CHECK(count_of(shown.out, "censored") == 1);
    CHECK(line_count(shown.out) == 2 + high.size());
    const auto summary = run_nadyn({"inspect", dir + "/caps_beta4.h5"});
    REQUIRE(summary.status == 0);
    CHECK(contains(summary.out, "plateaus    " + std::to_string(high.size()) + " lasting"));

    // A file without /plateaus (a run killed, or still going): inspect computes the table from
    // the clusters series at the file's plateau_min, and says so.
    nadyn::detail::hdf5_file::open_read_write(dir + "/caps_beta4.h5").remove("plateaus");
    CHECK_FALSE(nadyn::trajectory_reader(dir + "/caps_beta4.h5").plateaus());
    const auto computed = run_nadyn({"inspect", dir + "/caps_beta4.h5", "--plateaus"});
    REQUIRE(computed.status == 0);
    CHECK(contains(computed.out, "computed from /observables/clusters"));
    const auto stored_rows = split_lines(shown.out), computed_rows = split_lines(computed.out);
    REQUIRE(computed_rows.size() == stored_rows.size());
    for (std::size_t i = 1; i < stored_rows.size(); ++i)
        CHECK(computed_rows[i] == stored_rows[i]);
}

TEST_CASE("the symmetric start collapses in one event: a plateau at n, then one at 1") {
    const std::string dir = scratch_dir("plateaus/simplex");
    const std::string out = dir + "/simplex.h5";
    // --plateau-min 0: every stretch of constant count is listed, so none is hidden.
    const auto r =
        run_nadyn({"simulate", "--scheme", "post-ln", "--init", "orthogonal", "--n", "6", "--d",
                   "6", "--beta", "1", "--T", "20", "--plateau-min", "0", "--quiet", "--out", out});
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const auto table = table_of(out);
    REQUIRE(table.size() == 2);
    CHECK(table[0].clusters == 6);
    CHECK(table[0].start == 0.0);
    CHECK_FALSE(table[0].censored);
    CHECK(table[1].clusters == 1);
    CHECK(table[1].start == table[0].end);
    CHECK(table[1].censored);
    // Every pairwise cosine is one gamma(t): single linkage sees 6 clusters or 1, nothing
    // between.
    const auto counts = nadyn::trajectory_reader(out).observable("clusters");
    CHECK(std::set<double>(counts.begin(), counts.end()) == std::set<double>{1.0, 6.0});
}

TEST_CASE("a stopped run's table ends censored at the stop; resumed, it is the whole run's") {
    const std::string dir = scratch_dir("plateaus/resume");
    nadyn::run_config c;
    c.scheme_id = nadyn::scheme::post_ln;
    c.init = nadyn::initial_spec::parse("caps:3,0.01");
    c.n = 12;
    c.beta = 4.0;
    c.integration.T = 20.0;
    c.integration.every = 20; // the same frames for the stopped and the whole run
    c.seed = 2;
    const std::string full = dir + "/full.h5", part = dir + "/part.h5";
    nadyn::simulation(c).run_to_file(full, true);
    const auto whole = table_of(full);
    REQUIRE(whole.size() >= 2);
    const double merge = whole.front().end; // the caps' first merge, inside the run
    REQUIRE(merge > 2.0);
    REQUIRE(merge < 18.0);

    // Stopped at the first frame past half the 3-cluster plateau.
    {
        nadyn::simulation first(c);
        std::atomic<bool> stop{false};
        first.run_to_file(part, true, &stop, {}, [&](double t, std::int64_t) {
            if (t >= 0.5 * merge) stop = true;
        });
    }
    const auto stopped = table_of(part);
    REQUIRE(stopped.size() == 1);
    CHECK(stopped[0].clusters == 3);
    CHECK(stopped[0].censored);
    CHECK(stopped[0].end >= 0.5 * merge);
    CHECK(stopped[0].end < merge);

    nadyn::simulation::from_file(part).resume_file(part, std::nullopt);
    CHECK(table_of(part) == whole);
}

TEST_CASE("a sweep records the longest plateau of each run, as the run's own file does") {
    const std::string dir = scratch_dir("plateaus/sweep");
    write_text(dir + "/exp.toml", R"([run]
scheme = "post-ln"
init = "caps:3,0.01"
n = 12
d = 3
T = 40
seed = 2

[sweep]
beta = [1.0, 4.0]
)");
    const auto r = run_nadyn({"sweep", "exp.toml", "--out", "s.h5", "--quiet"}, in_dir(dir));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const auto file = nadyn::detail::hdf5_file::open_read_only(dir + "/s.h5");
    std::vector<double> lengths(2);
    std::vector<std::int64_t> clusters(2);
    file.open_dataset("plateau_length").read_all(H5T_NATIVE_DOUBLE, lengths.data());
    file.open_dataset("plateau_clusters").read_all(H5T_NATIVE_INT64, clusters.data());
    const auto fill = file.open_dataset("plateau_clusters").read_attribute("_FillValue");
    REQUIRE(fill);
    CHECK(std::get<std::int64_t>(*fill) == -1);
    const std::string runs = scratch_dir("plateaus/sweep_runs");
    const std::vector<std::string> betas{"1", "4"};
    for (std::size_t i = 0; i < 2; ++i) {
        CAPTURE(betas[i]);
        const auto longest = nadyn::longest_plateau(caps_run(runs, betas[i]));
        REQUIRE(longest);
        CHECK(lengths[i] == longest->length());
        CHECK(clusters[i] == longest->clusters);
    }
}

TEST_CASE("bad --plateau-min values exit 2 with one line and no file") {
    const std::string dir = scratch_dir("plateaus/bad");
    for (const char* bad : {"-1", "150%", "5%%", "abc", "nan", ""}) {
        CAPTURE(bad);
        const auto r = run_nadyn({"simulate", "--n", "4", "--T", "0.1", "--plateau-min", bad,
                                  "--quiet", "--out", "bad.h5"},
                                 in_dir(dir));
        CHECK(r.status == 2);
        CHECK(line_count(r.err) == 1);
        CHECK(contains(r.err, "plateau-min"));
        CHECK(list_files(dir).empty());
    }
}
