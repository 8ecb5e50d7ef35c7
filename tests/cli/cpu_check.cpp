// A binary compiled for an instruction set the CPU lacks refuses to start: exit status 2 and
// one line naming the missing extension and the build option to use, never SIGILL. The CPU
// check (src/model/cpu_check.cpp) honours NADYN_FORCE_MISSING_CPU_FEATURE so the refusal can be
// forced on a machine that has everything.
#include "cli_support.hpp"

#include "nadyn/model/version.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using namespace nadyn_test;

std::string first_required_feature() {
    const std::string all = nadyn::simd_required_features();
    return all.substr(0, all.find(','));
}

run_options missing(const std::string& feature) {
    run_options options;
    options.env["NADYN_FORCE_MISSING_CPU_FEATURE"] = feature;
    return options;
}

} // namespace

TEST_CASE("a CPU lacking a required feature is refused with exit status 2 and one line") {
    const std::string level = nadyn::simd_level();
    const std::string feature = first_required_feature();
    if (level == "portable") {
        // Nothing beyond the x86-64 baseline is required: nothing is checked or refused.
        CHECK(feature.empty());
        const run_result r = run_nadyn({"--version"}, missing("avx512f"));
        CHECK(r.status == 0);
        CHECK(r.err.empty());
        return;
    }
    REQUIRE_FALSE(feature.empty());
    if (level == "avx512") CHECK(feature == "avx512f");
    if (level == "avx2") CHECK(feature == "avx2");

    // Every required feature is checked, not only the first.
    std::string all = nadyn::simd_required_features();
    all += ',';
    for (std::size_t start = 0, end; (end = all.find(',', start)) != std::string::npos;
         start = end + 1) {
        const std::string f = all.substr(start, end - start);
        CAPTURE(f);
        const run_result r = run_nadyn({"simulate", "--n", "4", "--T", "0.1"}, missing(f));
        CHECK(r.status == 2);
        CHECK(r.signal == 0);
        CHECK(r.out.empty());
        CHECK(line_count(r.err) == 1);
        CHECK(contains(r.err, "this CPU lacks " + f + ";"));
        CHECK(contains(r.err, "NADYN_SIMD=" + std::string(nadyn::simd_option())));
        CHECK(contains(r.err, "-DNADYN_SIMD=portable"));
    }
}

TEST_CASE("the message names the level the binary was built for") {
    const std::string level = nadyn::simd_level();
    if (level == "portable") return;
    const run_result r = run_nadyn({"--version"}, missing(first_required_feature()));
    CHECK(r.status == 2);
    if (level == "avx512") CHECK(contains(r.err, "built for AVX-512 (NADYN_SIMD="));
    if (level == "avx2") CHECK(contains(r.err, "built for AVX2 (NADYN_SIMD="));
    CHECK(contains(r.err, "nadyn: this binary was built for "));
}

TEST_CASE("an unknown or absent forced feature changes nothing") {
    const run_result r = run_nadyn({"--version"}, missing("no-such-feature"));
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(contains(r.out, "nadyn "));
}

TEST_CASE("this process itself passed the check (the test binary links the same library)") {
    // Reaching here means the constructor ran and the CPU has every required feature; the
    // recorded flags include the instruction set's.
    const std::string flags = nadyn::compiler_flags();
    const std::string level = nadyn::simd_level();
    if (level == "avx512") CHECK(contains(flags, "-march=x86-64-v4"));
    if (level == "avx2") CHECK(contains(flags, "-march=x86-64-v3"));
    if (level == "native") CHECK(contains(flags, "-march=native"));
    if (level == "portable") CHECK_FALSE(contains(flags, "-march="));
}
