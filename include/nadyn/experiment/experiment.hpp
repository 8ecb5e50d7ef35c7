#pragma once
// An experiment: a base run and sweep axes over any of its parameters, read from a TOML file
// (or text), with --set overrides. Its runs are the cartesian product of the axes, the last
// axis varying fastest.
//
//     [run]                                 # the keys of nadyn simulate's flags
//     scheme = "pre-ln"                     # (the parameter registry's names)
//     n = 64
//     positions = "final"                   # none | final | all (default final)
//
//     [sweep]                               # one axis per key, in file order
//     beta = { linspace = [0.1, 15, 20] }   # also: logspace = [a, b, k] (10^a .. 10^b),
//     seed = { range = [1, 512] }           # range = [first, last(, step)], inclusive,
//     scheme = ["pre-ln", "peri-ln"]        # or an explicit list
//
// Errors name the file, the line and the key, and list the valid keys or values.
#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run_config.hpp"
#include "nadyn/files/sweep_file.hpp" // sweep_positions

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nadyn {

struct sweep_axis {
    std::string name;                // a registry parameter
    std::vector<std::string> values; // as text the registry parses
};

// The sweep file's coordinate of `axis`: its labels, and its values in the key's `type`
// (integers, numbers, else the text) parsed as the registry parses them (input_error naming
// the axis), with the scale's description.
sweep_file_axis file_axis(const sweep_axis& axis, value_type type, std::string description);

// The values of a linspace or logspace axis (also --frame-times linspace:A,B,N): `count`
// values evenly spaced from first to last, the last exact; logspace takes 10^ of each.
// input_error unless 1 <= count <= 1e7.
std::vector<double> spaced_values(std::string_view generator, double first, double last,
                                  std::int64_t count);

struct experiment {
    std::string source;                 // the file's path, or a label for text
    std::string text;                   // the experiment file's text, recorded in the result
    std::vector<std::string> overrides; // --set key=value, in order
    run_config base;
    std::vector<sweep_axis> axes;
    sweep_positions positions = sweep_positions::final;

    // Parses an experiment; `overrides` are "table.key=value" (value in TOML syntax, or a
    // bare word taken as a string), applied before validation. input_error on any problem.
    static experiment parse(const std::string& text, const std::string& source,
                            const std::vector<std::string>& overrides = {});
    static experiment load(const std::string& path, const std::vector<std::string>& overrides = {});

    // Number of runs (the product of the axes' lengths; 1 without axes).
    [[nodiscard]] std::size_t size() const;
    // The axis indices of run `index` (row-major over the axes).
    [[nodiscard]] std::vector<std::size_t> coordinates(std::size_t index) const;
    // The configuration of run `index`: the base with each axis's value assigned.
    [[nodiscard]] run_config point(std::size_t index) const;
    // "beta=0.5 seed=3 scheme=pre-ln" for messages and progress.
    [[nodiscard]] std::string label(std::size_t index) const;
    // The run that `point` names, as --point of nadyn rerun and nadyn inspect and the
    // plots take it: "axis=value,..." (every axis with more than one value named once, a
    // value as the experiment writes it or equal as a number), or the run's index in the
    // row-major order; empty names the only run of a one-run experiment. input_error naming
    // the axes, their values and the indices for anything else.
    [[nodiscard]] std::size_t find_point(std::string_view point) const;
    // The configuration warnings of its runs (diagnostics.hpp), each once, in the order of
    // the first run that has it: a sweep says them before it runs.
    [[nodiscard]] std::vector<std::string> warnings() const;

    // Calls `visit(config, index, runs)` once for each combination of the values of the axes
    // `selected` accepts (the others at their first value): `index` is the first run of the
    // combination, `runs` the number of runs that share it. What depends only on those axes
    // (a file read, a cost) is then computed once per combination, not once per run.
    void for_each_combination(const std::function<bool(std::string_view axis)>& selected,
                              const std::function<void(const run_config& config, std::size_t index,
                                                       std::size_t runs)>& visit) const;
    // A hash (FNV-1a, 64 bits, in hex) of the text and the overrides: a sweep file records
    // it at creation, and a resume refuses a file whose recorded experiment was changed since.
    [[nodiscard]] std::string digest() const;
    // Reads every input file the runs name (init, weights and ln_params file:PATH), once per
    // distinct use and as the run will, so that a missing or malformed file is an input_error
    // naming the run before anything runs or any file is written.
    void check_input_files() const;
    // Every distinct input file the runs name, sorted by path, with its SHA-256
    // (input_file_sha256): recorded in the sweep file (input_files, input_sha256) so that a
    // resume can refuse inputs that changed, and compared by the ranks of an MPI sweep.
    [[nodiscard]] std::vector<std::pair<std::string, std::string>> input_file_hashes() const;
};

// An experiment file's text (the checks of experiment::load: a regular file of at most 1 MiB).
std::string read_experiment_text(const std::string& path);

// The model an experiment runs: [run] model = "particles" (the default: nadyn simulate's runs)
// or "meanfield" (nadyn meanfield's densities, nadyn::meanfield). input_error when the text
// is not TOML or names another model.
std::string experiment_model(const std::string& text, const std::string& source,
                             const std::vector<std::string>& overrides = {});

// An experiment's tables as text, for a model that brings its own keys (the density solver's):
// the [run] keys and values and the [sweep] axes in file order, after the --set overrides,
// with the syntax, generators and messages of experiment::parse. `key_type` types each key
// (nullopt: unknown, an input_error listing `valid_keys`); `model` is skipped.
struct experiment_tables {
    std::vector<std::pair<std::string, std::string>> run;
    std::vector<sweep_axis> axes;
};
experiment_tables
parse_experiment_tables(const std::string& text, const std::string& source,
                        const std::vector<std::string>& overrides,
                        const std::function<std::optional<value_type>(std::string_view)>& key_type,
                        const std::string& valid_keys);

} // namespace nadyn
