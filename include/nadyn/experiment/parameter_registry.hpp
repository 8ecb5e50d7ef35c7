#pragma once
// Every input of a run, once: its name (the /parameters key, the experiment file's key and
// the Python keyword), its command-line flag, how text becomes a value, what a valid value
// is, how it is recorded, and whether a resumed run may change it.
//
// The table drives `nadyn simulate`'s flags and --help, `run_config::validate()`, the
// /parameters record and its read-back, the resume agreement check, the experiment files of
// `nadyn sweep` and the keywords of the Python module. A new parameter is one row here and
// one field in run_config; nothing else restates its default, its parser or its check.
#include "nadyn/experiment/run_config.hpp"
#include "nadyn/model/parameters.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

// How a parameter's value is written and read: in files, integers and numbers are typed
// HDF5 attributes, switches are 0/1 integers, names are strings.
enum class value_type { integer, number, name, switch_ };

struct parameter_spec {    // rows are written with designated initialisers; omitted: these defaults
    std::string_view name; // /parameters key, experiment-file key, Python keyword
    std::string_view flag{};        // command-line flag ("--t-switch"); empty: none
    value_type type;                //
    std::string_view help{};        // --help text
    std::string_view description{}; // what the value means, recorded beside it in the file
    std::string_view unit{};        // physical unit, empty when dimensionless
    // A bare switch flag sets this text ("1" for --causal, "0" for --no-swmr).
    std::string_view switch_sets{};
    bool resumable = false; // may differ between a file and the command line resuming it
    bool sweepable = true;  // may be an axis of an experiment (a run's outcome depends on it)
    // Value assumed for files written before the parameter existed; empty: the file must
    // carry it.
    std::string_view legacy{};
    // Parses text into the configuration; input_error naming the parameter and its valid
    // values when the text is malformed.
    void (*assign)(run_config& config, std::string_view text) = nullptr;
    // The value as recorded in /parameters (defaults resolved, e.g. t_switch = 0.25 T).
    parameter_value (*record)(const run_config& config) = nullptr;
    // Throws input_error when the configuration's value is out of range (nullptr: any value
    // the parser accepts is valid).
    void (*check)(const run_config& config) = nullptr;
};

// Every parameter, in the order of --help and of /parameters.
std::span<const parameter_spec> parameter_registry();
// The row of `name`, or nullptr.
const parameter_spec* find_parameter(std::string_view name);
// seed and the seeds by purpose (init_seed, weights_seed, noise_seed): a run's validity does
// not depend on them, so a sweep checks one value of each axis of them.
bool is_seed_parameter(std::string_view name);
// "scheme, n, d, ..." for messages.
std::string parameter_names();
// The row of `name`; input_error listing the valid names when unknown.
const parameter_spec& parameter(std::string_view name);

// Assigns `text` to the parameter `name` of `config` (experiment files, --set, Python).
void assign_parameter(run_config& config, std::string_view name, std::string_view text);
// A parameter's value as text a user reads (and that assign_parameter reads back exactly).
std::string parameter_text(const run_config& config, const parameter_spec& spec);
// The default of each parameter as text (from a default run_config, never restated); empty
// for t_switch and every, whose defaults follow from T and dt.
std::string default_text(const parameter_spec& spec);

// Refuses a resume whose given parameters disagree with the recorded run, except those the
// registry marks resumable; `given` names the parameters the caller set explicitly. T may
// only grow (input_error otherwise).
void check_resume_agreement(const run_config& recorded, const run_config& given,
                            const std::vector<std::string>& given_names, const std::string& file);

// Strict text-to-value parsing shared by the rows (and by the command line of other tools):
// decimal integers in range, finite or infinite doubles ("1e-3", "inf"), switches as
// true/false/1/0/yes/no/on/off. input_error names `what` and the text.
std::int64_t parse_integer(std::string_view text, std::string_view what);
double parse_number(std::string_view text, std::string_view what);
bool parse_switch(std::string_view text, std::string_view what);

} // namespace nadyn
