// The sweep file through the files layer's interface (nadyn/files/sweep_file.hpp), with no
// experiment and no run: a layout, a record written at its point over the axes, and what the
// readers give back (the record, the statuses, the trust a resume puts in a run, the overview
// nadyn inspect shows, the provenance). The datasets are checked through the HDF5 wrappers.
#include "nadyn/files/sweep_file.hpp"
#include "files/hdf5.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <hdf5.h>

using namespace nadyn;

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

std::string scratch(const std::string& name) {
    std::filesystem::create_directories(NADYN_TEST_TMPDIR);
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/sweep_file_" + name + ".h5";
    std::filesystem::remove(path);
    return path;
}

// beta (2 numbers) x scheme (2 names): 4 runs of 3 frames, 2 tokens in 2 dimensions.
sweep_layout small_layout() {
    sweep_layout layout;
    sweep_file_axis beta;
    beta.name = "beta";
    beta.description = "sweep axis: beta";
    beta.labels = {"0.5", "1"};
    beta.values = std::vector<double>{0.5, 1.0};
    sweep_file_axis scheme;
    scheme.name = "scheme";
    scheme.description = "sweep axis: scheme";
    scheme.labels = {"pre-ln", "post-ln"};
    scheme.values = std::vector<std::string>{"pre-ln", "post-ln"};
    layout.axes = {beta, scheme};
    layout.times = {0.0, 0.5, 1.0};
    layout.frames = 3;
    layout.tokens = 2;
    layout.dims = 2;
    layout.observables = {"mean_cos", "clusters"};
    layout.widths = {1, 1};
    layout.counts = {false, true}; // clusters: int64, -1 where a run has no frame
    layout.descriptions = {"mean cosine", "cluster count"};
    layout.positions = sweep_positions::final;
    return layout;
}

sweep_provenance small_provenance() {
    sweep_provenance p;
    p.experiment = "[run]\nn = 2\n";
    p.source = "small.toml";
    p.overrides = {"run.d=2"};
    p.digest = "0123456789abcdef";
    p.input_files = std::vector<std::string>{"init.h5"};
    p.input_sha256 = std::vector<std::string>{"feed"};
    return p;
}

// Run 3 (beta = 1, scheme = post-ln): two frames of three, the third missing.
sweep_record run_three() {
    sweep_record r;
    r.index = 3;
    r.status = sweep_run_status::complete;
    r.observables = {{0.25, 0.75, nan}, {2.0, 1.0, nan}};
    r.positions = {1.0, 0.0, 0.0, 1.0};
    r.magnitudes = {1.5, 2.5};
    r.clustering_times = {0.5, 0.0};
    merge_event m;
    m.time = 0.5;
    m.frame = 1;
    m.label = 0;
    m.absorbed = 1;
    m.size = 2;
    m.absorbed_size = 1;
    m.clusters_after = 1;
    r.merges.push_back(m);
    r.frames = 2;
    r.rhs = 40;
    r.accepted = 10;
    r.wall = 0.01;
    r.plateau_length = 0.5;
    r.plateau_clusters = 1;
    r.parameters = "scheme=post-ln; beta=1";
    return r;
}

} // namespace

TEST_CASE("layout coordinates are row-major over the axes, the last fastest") {
    const sweep_layout layout = small_layout();
    CHECK(layout.runs() == 4);
    CHECK(layout.coordinates(0) == std::vector<std::size_t>{0, 0});
    CHECK(layout.coordinates(1) == std::vector<std::size_t>{0, 1});
    CHECK(layout.coordinates(3) == std::vector<std::size_t>{1, 1});
    CHECK(sweep_layout{}.runs() == 1);
}

TEST_CASE("a record lands at its point over the axes and reads back") {
    const std::string path = scratch("record");
    const sweep_layout layout = small_layout();
    {
        sweep_file file = sweep_file::create(path, small_provenance(), layout, false);
        file.write(run_three());
        file.finish("interrupted", 0);
    }
    CHECK(is_sweep_file(path));
    {
        const auto guard = detail::hdf5_lock();
        const detail::hdf5_file f = detail::hdf5_file::open_read_only(path);
        const detail::hdf5_dataset mean_cos = f.open_dataset("mean_cos");
        CHECK(mean_cos.shape() == std::vector<hsize_t>{2, 2, 3});
        std::vector<double> all(12);
        mean_cos.read_all(H5T_NATIVE_DOUBLE, all.data());
        for (std::size_t i = 0; i < 9; ++i)
            CHECK(std::isnan(all[i])); // runs 0..2 not written
        CHECK(all[9] == 0.25);
        CHECK(all[10] == 0.75);
        CHECK(std::isnan(all[11]));
        // A count is int64, its missing frame the fill value -1.
        std::vector<std::int64_t> clusters(12);
        f.open_dataset("clusters").read_all(H5T_NATIVE_INT64, clusters.data());
        CHECK(clusters[9] == 2);
        CHECK(clusters[10] == 1);
        CHECK(clusters[11] == -1);
        CHECK(clusters[0] == -1);
        CHECK(f.open_dataset("clusters").read_attribute("description") ==
              std::optional<parameter_value>(std::string("cluster count")));
        std::vector<double> beta(2);
        f.open_dataset("beta").read_all(H5T_NATIVE_DOUBLE, beta.data());
        CHECK(beta == std::vector<double>{0.5, 1.0});
        std::vector<signed char> status(4);
        f.open_dataset("status").read_all(H5T_NATIVE_SCHAR, status.data());
        CHECK(status == std::vector<signed char>{0, 0, 0, 1});
        std::int64_t merges = 0;
        f.open_dataset("merge_count").read_block({1, 1}, {1, 1}, H5T_NATIVE_INT64, &merges);
        CHECK(merges == 1);
    }
    {
        sweep_file file = sweep_file::open(path, layout);
        const sweep_record back = file.read(3);
        CHECK(back.observables[0][0] == 0.25);
        CHECK(back.observables[0][1] == 0.75);
        CHECK(std::isnan(back.observables[0][2]));
        CHECK(back.observables[1][0] == 2.0);
        CHECK(std::isnan(back.observables[1][2])); // the count's fill value reads as NaN
        CHECK(back.positions == std::vector<double>{1.0, 0.0, 0.0, 1.0});
        CHECK(back.magnitudes == std::vector<double>{1.5, 2.5});
        CHECK(file.statuses() ==
              std::vector<sweep_run_status>{sweep_run_status::not_run, sweep_run_status::not_run,
                                            sweep_run_status::not_run, sweep_run_status::complete});
        std::size_t distrusted = 99;
        CHECK(file.trusted_runs(distrusted) == std::vector<bool>{false, false, false, true});
        CHECK(distrusted == 0);
    }
    // Read-only, once the writer has closed it.
    const sweep_file_overview overview = read_sweep_overview(path, layout, {"mean_cos", "r_mean"});
    CHECK(overview.status == "interrupted");
    CHECK(overview.runs[3] == sweep_run_status::complete);
    CHECK(overview.last.at("mean_cos")[3] == 0.75); // the last frame it has
    CHECK(std::isnan(overview.last.at("mean_cos")[0]));
    CHECK(overview.last.count("r_mean") == 0); // not recorded

    const sweep_run_history history = read_sweep_history(path, layout, 3);
    CHECK(history.merge_count == 1);
    REQUIRE(history.merges.size() == 1);
    CHECK(history.merges[0].absorbed == 1);
    CHECK(history.clustering_times == std::vector<double>{0.5, 0.0});
}

TEST_CASE("a run whose results changed after its mark is distrusted") {
    const std::string path = scratch("tampered");
    const sweep_layout layout = small_layout();
    {
        sweep_file file = sweep_file::create(path, small_provenance(), layout, false);
        file.write(run_three());
    }
    {
        const auto guard = detail::hdf5_lock();
        detail::hdf5_file f = detail::hdf5_file::open_read_write(path);
        const double other = 0.5;
        f.open_dataset("mean_cos").write_block({1, 1, 1}, {1, 1, 1}, H5T_NATIVE_DOUBLE, &other);
    }
    sweep_file file = sweep_file::open(path, layout);
    std::size_t distrusted = 0;
    CHECK(file.trusted_runs(distrusted) == std::vector<bool>{false, false, false, false});
    CHECK(distrusted == 1);
}

TEST_CASE("the provenance reads back as written") {
    const std::string path = scratch("provenance");
    { (void)sweep_file::create(path, small_provenance(), small_layout(), false); }
    const sweep_provenance p = read_sweep_provenance(path);
    CHECK(p.experiment == "[run]\nn = 2\n");
    CHECK(p.source == "small.toml");
    CHECK(p.overrides == std::vector<std::string>{"run.d=2"});
    CHECK(p.digest == std::optional<std::string>("0123456789abcdef"));
    CHECK(p.input_files == std::optional<std::vector<std::string>>({"init.h5"}));
    CHECK(p.input_sha256 == std::optional<std::vector<std::string>>({"feed"}));
}

TEST_CASE("creating over a sweep file with results needs overwrite") {
    const std::string path = scratch("exists");
    {
        sweep_file file = sweep_file::create(path, small_provenance(), small_layout(), false);
        file.write(run_three());
    }
    CHECK_THROWS_AS((void)sweep_file::create(path, small_provenance(), small_layout(), false),
                    input_error);
    CHECK(read_sweep_provenance(path).source == "small.toml"); // untouched
}
