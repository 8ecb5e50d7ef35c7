// Fuzz target: the readers of init and weights files (--init file:PATH, --weights file:PATH).
//
// Input: byte 0 picks n in 1..8, byte 1 picks d in 2..9, the rest is written to a temporary
// file that make_initial and make_weights read. A malformed file must end in input_error or
// io_error; any other exception, a crash, a sanitizer report or a hang is a bug.
#include "nadyn/files/input_files.hpp"
#include "fuzz_support.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/initial.hpp"
#include "nadyn/model/weights.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

using nadyn_fuzz::expect_clean_failure;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t n = 1 + data[0] % 8;
    const std::size_t d = 2 + data[1] % 8;
    const std::string& path = nadyn_fuzz::write_input(data + 2, size - 2);
    expect_clean_failure(
        [&] {
            const auto state = nadyn::make_initial(
                nadyn::with_file_contents(nadyn::initial_spec::parse("file:" + path), n, d), n, d,
                1, 1.0);
            // What make_initial promises: n unit rows and n positive, finite magnitudes.
            if (state.theta.size() != n * d || state.r.size() != n) std::abort();
            for (std::size_t k = 0; k < n; ++k) {
                double norm2 = 0.0;
                for (std::size_t a = 0; a < d; ++a)
                    norm2 += state.theta[k * d + a] * state.theta[k * d + a];
                if (!(std::abs(norm2 - 1.0) < 1e-12)) {
                    std::fprintf(stderr, "nadyn fuzz: row %zu of theta has |theta|^2 = %g\n", k,
                                 norm2);
                    std::abort();
                }
                if (!(state.r[k] > 0.0 && std::isfinite(state.r[k]))) std::abort();
            }
        },
        "make_initial");
    expect_clean_failure(
        [&] {
            const auto weights = nadyn::make_weights(
                nadyn::with_file_contents(nadyn::weights_spec::parse("file:" + path), d), d, 1);
            for (const auto& head : weights.heads)
                for (const auto* m : {&head.Q, &head.K, &head.V})
                    if (m->size() != 0 &&
                        (m->rows() != Eigen::Index(d) || m->cols() != Eigen::Index(d)))
                        std::abort();
        },
        "make_weights");
    return 0;
}
