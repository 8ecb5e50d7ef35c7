#include "nadyn/experiment/run_inputs.hpp"

#include "nadyn/files/input_files.hpp"

#include <utility>

namespace nadyn {

std::vector<input_file> input_files(const run_config& c) {
    std::vector<input_file> files;
    if (c.init.kind == initial_kind::file) files.push_back({"init", c.init.path});
    if (c.weights.family == weights_family::file) files.push_back({"weights", c.weights.path});
    if (!c.ln_params.empty()) files.push_back({"ln_params", c.ln_params});
    return files;
}

std::string input_hash_name(const input_file& file) {
    return file.parameter + "_sha256";
}

void read_input_files(run_config& c) {
    c.init = with_file_contents(std::move(c.init), c.n, c.d);
    c.weights = with_file_contents(std::move(c.weights), c.d);
}

} // namespace nadyn
