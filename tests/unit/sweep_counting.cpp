// The parts both sweeps (one process, MPI) share: sweep_summary::count() adds a finished run
// by its status, and file_axis() types an axis's values for the file as the key's type says.
#include "nadyn/experiment/experiment.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/model/error.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

using namespace nadyn;

namespace {

sweep_record finished(sweep_run_status status, const std::string& failure = {}) {
    sweep_record r;
    r.status = status;
    r.failure = failure;
    return r;
}

} // namespace

TEST_CASE("a summary counts each record by its status and keeps the first failure") {
    sweep_summary s;
    s.count(finished(sweep_run_status::complete));
    s.count(finished(sweep_run_status::failed, "run 1: non-finite"));
    s.count(finished(sweep_run_status::interrupted));
    s.count(finished(sweep_run_status::failed, "run 3: later"));
    s.count(finished(sweep_run_status::complete));
    CHECK(s.complete == 2);
    CHECK(s.interrupted == 1);
    CHECK(s.failed == 2);
    CHECK(s.first_failure == "run 1: non-finite");
}

TEST_CASE("an axis's file values are in its key's type, its labels as written") {
    const sweep_axis n{"n", {"8", "16"}};
    const sweep_file_axis integers = file_axis(n, value_type::integer, "sweep axis: tokens");
    CHECK(integers.name == "n");
    CHECK(integers.description == "sweep axis: tokens");
    CHECK(integers.labels == std::vector<std::string>{"8", "16"});
    CHECK(std::get<std::vector<std::int64_t>>(integers.values) == std::vector<std::int64_t>{8, 16});

    const sweep_axis beta{"beta", {"0.5", "1e1"}};
    CHECK(std::get<std::vector<double>>(file_axis(beta, value_type::number, "").values) ==
          std::vector<double>{0.5, 10.0});

    const sweep_axis scheme{"scheme", {"pre-ln", "peri-ln"}};
    CHECK(std::get<std::vector<std::string>>(file_axis(scheme, value_type::name, "").values) ==
          scheme.values);

    const sweep_axis bad{"n", {"8", "many"}};
    CHECK_THROWS_AS(file_axis(bad, value_type::integer, ""), input_error);
}
