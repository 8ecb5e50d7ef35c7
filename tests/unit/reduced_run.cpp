// nadyn reduced as a library call: the command line's checks and file, with provenance.
#include "nadyn/experiment/reduced_run.hpp"
#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

using namespace nadyn;

TEST_CASE("reduced_run refuses what nadyn reduced refuses") {
    reduced_run r;
    r.n = 1.0;
    CHECK_THROWS_WITH_AS(r.integrate(), "n must be a finite number > 1", input_error);
    r = reduced_run{};
    r.rtol = 0.5e-15;
    CHECK_THROWS_AS(r.validate(), input_error);
    r = reduced_run{};
    r.t_switch = -1.0;
    CHECK_THROWS_WITH_AS(r.validate(), "t-switch must be a finite number >= 0", input_error);
    CHECK_THROWS_WITH_AS(parse_spacing("cubic"), doctest::Contains("valid choices: linear, log"),
                         input_error);
}

TEST_CASE("reduced_run samples start at gamma'(0) of the closed form and its file has provenance") {
    reduced_run r;
    r.id = scheme::peri_ln;
    r.n = 256;
    r.beta = 5;
    r.T = 2;
    r.samples = 4;
    const auto samples = r.integrate();
    REQUIRE(samples.size() == 5);
    // docs/model.md section 3: peri-ln, beta = 5, n = 256, r0 = 1.
    CHECK(samples.front().velocity ==
          doctest::Approx(2.0 / std::sqrt(std::exp(10.0) + 255.0)).epsilon(1e-12));
    CHECK(samples.front().velocity == doctest::Approx(1.339855973539e-02).epsilon(1e-12));
    const auto dir = std::filesystem::path(NADYN_TEST_TMPDIR) / "reduced_run";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "reduced.h5").string();
    r.write_file(path, samples, true, "test");
    const trajectory_reader file(path);
    const parameter_list& p = file.parameters();
    for (const char* key : {"compiler", "compiler_flags", "build_type", "git_commit",
                            "nadyn_version", "command_line"})
        CHECK_MESSAGE(p.text(key).has_value(), key);
    CHECK(p.number("beta") == 5.0);
    CHECK_THROWS_WITH_AS(r.write_file(path, samples, false), doctest::Contains("already exists"),
                         input_error);
}
