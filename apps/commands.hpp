#pragma once
// The subcommands of the nadyn program. Each registers its options on the CLI11 app and
// returns the function that runs it (exit status).
#include "nadyn/experiment/run_config.hpp"
#include "nadyn/parallel/parallel_context.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

namespace nadyn::cli {

using command = std::function<int()>;

// `config`, when given, receives simulate's flags-to-run_config step alone (app.hpp).
command add_simulate(CLI::App& app, std::function<run_config()>* config = nullptr);
command add_inspect(CLI::App& app);
command add_reduced(CLI::App& app);
command add_table(CLI::App& app);
command add_rerun(CLI::App& app);
command add_sweep(CLI::App& app);
command add_meanfield(CLI::App& app);

// CLI11 2.1 reads integers with strtoll(..., base 0) and no range check: "010" is 8, "0x10"
// is 16, "-1" becomes 2^64 - 1 for an unsigned and 99999999999999999999 saturates. Integer
// flags take plain decimal numbers in the type's range; the text is normalised (no leading
// zeros) before CLI11 converts it.
template <class Integer> CLI::Validator decimal_integer() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            Integer value{};
            const char* last = text.data() + text.size();
            const auto [end, error] = std::from_chars(text.data(), last, value);
            if (error == std::errc::result_out_of_range)
                return "'" + text + "' is out of range (" +
                       std::to_string(std::numeric_limits<Integer>::min()) + " to " +
                       std::to_string(std::numeric_limits<Integer>::max()) + ")";
            if (error != std::errc() || end != last || text.empty())
                return "'" + text + "' is not a whole number" +
                       (std::is_signed_v<Integer> ? "" : " >= 0");
            text = std::to_string(value);
            return {};
        },
        "");
}

// The command line as typed, recorded in output files.
extern std::string invocation;

// The process's place in an MPI job (set by main; null: a job of one). nadyn sweep spreads
// its runs over the ranks when there are several.
extern const parallel_context* sweep_ranks;
// A stream that discards what it is given: the error stream of ranks other than 0.
std::ostream& quiet_stream();

} // namespace nadyn::cli
