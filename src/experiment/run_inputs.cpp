#include "nadyn/experiment/run_inputs.hpp"

#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"

#include <string_view>
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

namespace {

// Runs `read` of the file that parameter `name` (flag `flag`) names: its errors say which
// input they are about, since one run may read three files. `path` is a copy: `read` moves
// the spec that holds it.
template <class Read>
void reading(std::string_view name, std::string_view flag, std::string path, Read read) {
    const auto which = [&] {
        return std::string(name) + " = file:" + path + " (" + std::string(flag) + "): ";
    };
    try {
        read();
    } catch (const input_error& error) {
        throw input_error(which() + error.what());
    } catch (const io_error& error) {
        throw io_error(which() + error.what());
    }
}

} // namespace

void read_input_files(run_config& c) {
    if (c.init.kind == initial_kind::file)
        reading("init", "--init", c.init.path,
                [&] { c.init = with_file_contents(std::move(c.init), c.n, c.d); });
    if (c.weights.family == weights_family::file)
        reading("weights", "--weights", c.weights.path,
                [&] { c.weights = with_file_contents(std::move(c.weights), c.d); });
}

} // namespace nadyn
