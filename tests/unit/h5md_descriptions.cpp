// Files that explain themselves (h5md.hpp, observables.hpp): every observable carries its
// description and unit, counts are integers, the module group states the model and the
// specification, and parameter descriptions land in /parameters/descriptions. Read back
// through the HDF5 C API wrappers, independently of trajectory_reader, and through it.
#include "files/hdf5.hpp"
#include "nadyn/experiment/observable_table.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/observables.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <variant>

using namespace nadyn;

namespace {

std::string text_attribute(const detail::hdf5_object& object, const std::string& name) {
    const auto value = object.read_attribute(name);
    REQUIRE(value.has_value());
    const std::string* text = std::get_if<std::string>(&*value);
    REQUIRE(text != nullptr);
    return *text;
}

std::string write_described_file(bool swmr) {
    std::filesystem::create_directories(NADYN_TEST_TMPDIR);
    const std::string path =
        std::string(NADYN_TEST_TMPDIR) + "/h5md_descriptions" + (swmr ? "_swmr" : "") + ".h5";
    trajectory_layout layout;
    layout.n = 3;
    layout.d = 2;
    layout.swmr = swmr;
    layout.scheme = "peri-ln";
    for (const observable& row : model_observables())
        if (!row.optional) layout.observables.push_back({std::string(row.name), 1, &row});
    trajectory_writer writer(path, layout, true);
    parameter_list parameters;
    parameters.set("beta", 4.0);
    parameters.set("n", std::int64_t{3});
    writer.write_parameters(parameters);
    writer.write_parameter_descriptions(
        {{"beta", "inverse temperature of the softmax"}, {"n", "number of tokens"}});
    writer.write_parameter_descriptions({{"beta", "inverse temperature (replaced)"}});
    const double theta[6] = {1, 0, 0, 1, -1, 0}, r[3] = {1, 1, 1};
    std::vector<double> values(layout.observables.size(), 0.25);
    values[9] = 3.0; // clusters
    writer.write_frame(0, 0.0, theta, r, values);
    writer.finish(run_status::complete, {});
    return path;
}

} // namespace

TEST_CASE("every observable carries the description and unit of its row of the table") {
    for (const bool swmr : {false, true}) {
        CAPTURE(swmr);
        const std::string path = write_described_file(swmr);
        const detail::hdf5_file file = detail::hdf5_file::open_read_only(path);
        for (const observable& entry : model_observables()) {
            if (entry.optional) continue;
            CAPTURE(entry.name);
            const std::string group_path = "observables/" + std::string(entry.name);
            const detail::hdf5_group group = file.open_group(group_path);
            const detail::hdf5_dataset value = file.open_dataset(group_path + "/value");
            CHECK(text_attribute(group, "description") == entry.description);
            CHECK(text_attribute(value, "description") == entry.description);
            CHECK(entry.description.size() > 20); // a sentence, not a placeholder
            CHECK(text_attribute(value, "unit") == entry.unit);
            CHECK(value.type_class() == (entry.integer ? H5T_INTEGER : H5T_FLOAT));
        }
        // clusters is an integer count and reads back exactly.
        std::int64_t clusters = -1;
        file.open_dataset("observables/clusters/value").read_all(H5T_NATIVE_INT64, &clusters);
        CHECK(clusters == 3);

        const detail::hdf5_group module = file.open_group("h5md/modules/nadyn");
        CHECK(text_attribute(module, "specification") == "docs/model.md, version 2");
        CHECK(text_attribute(module, "model").find("P_{theta_k}(A_k) / s_k(t)") !=
              std::string::npos);
        CHECK(text_attribute(module, "speed_divisor") == "s_k = r_k ‖A_k‖");
        CHECK(text_attribute(module, "radial_rate") == "dr_k/dt = <theta_k, A_k> / ‖A_k‖");
        CHECK(module.read_integers("version") == std::vector<std::int64_t>{2});

        const detail::hdf5_group described = file.open_group("parameters/descriptions");
        CHECK(text_attribute(described, "beta") == "inverse temperature (replaced)");
        CHECK(text_attribute(described, "n") == "number of tokens");
    }
}

TEST_CASE("trajectory_reader returns the descriptions it finds") {
    const std::string path = write_described_file(true);
    const trajectory_reader reader(path);
    const observable_description gap = reader.describe_observable("gap");
    CHECK(gap.description == find_observable("gap")->description);
    CHECK(gap.unit == "1");
    CHECK(reader.describe_observable("displacement").unit == "rad");
    CHECK(reader.observable("clusters") == std::vector<double>{3.0});
    const auto parameters = reader.parameter_descriptions();
    // In creation order; a replaced entry is written again, so it comes last.
    REQUIRE(parameters.size() == 2);
    CHECK(parameters[0] == std::pair<std::string, std::string>{"n", "number of tokens"});
    CHECK(parameters[1] ==
          std::pair<std::string, std::string>{"beta", "inverse temperature (replaced)"});
    CHECK_THROWS(reader.describe_observable("no_such"));
    CHECK(find_observable("no_such") == nullptr);
}

TEST_CASE("a file written before an observable existed is continued with its own series") {
    std::filesystem::create_directories(NADYN_TEST_TMPDIR);
    const std::string path = std::string(NADYN_TEST_TMPDIR) + "/h5md_older_observables.h5";
    trajectory_layout layout;
    layout.n = 2;
    layout.d = 2;
    layout.observables = {{"mean_cos"}, {"step_size"}}; // as an older nadyn wrote it
    const double theta[4] = {1, 0, 0, 1}, r[2] = {1, 1};
    {
        trajectory_writer writer(path, layout, true);
        writer.write_frame(0, 0.0, theta, r, {0.5, 0.01});
        writer.finish(run_status::interrupted, {});
    }
    {
        auto writer = trajectory_writer::append(path, 1);
        // Today's values: one more observable in between, which the file does not have.
        writer->set_value_names({"mean_cos", "step_error", "step_size"});
        writer->write_frame(1, 0.1, theta, r, {0.75, 1e-9, 0.02});
        writer->finish(run_status::complete, {});
    }
    {
        const trajectory_reader reader(path);
        CHECK(reader.observable_names() == std::vector<std::string>{"mean_cos", "step_size"});
        CHECK(reader.observable("mean_cos") == std::vector<double>{0.5, 0.75});
        CHECK(reader.observable("step_size") == std::vector<double>{0.01, 0.02});
    }
    // A file with an observable this nadyn does not compute cannot be continued.
    auto writer = trajectory_writer::append(path, 2);
    CHECK_THROWS_AS(writer->set_value_names({"mean_cos"}), input_error);
}
