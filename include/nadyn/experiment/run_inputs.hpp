#pragma once
// The input files a run names by path (--init file:PATH, --weights file:PATH, --ln-params
// PATH): which they are, their content hashes' names, and reading them into the run's
// configuration. The readers themselves are the file layer's (files/input_files.hpp).
#include "nadyn/experiment/run_config.hpp"

#include <string>
#include <vector>

namespace nadyn {

// An input file of a run: the parameter that names it (init, weights, ln_params) and its
// path, as given.
struct input_file {
    std::string parameter;
    std::string path;
};
// The files `c` reads (init file:PATH, weights file:PATH, ln_params file:PATH), in that order.
std::vector<input_file> input_files(const run_config& c);
// Where a file's content hash (input_file_sha256, files/input_files.hpp) is recorded:
// /parameters/<parameter>_sha256, so that a resume, or the ranks of an MPI job, can tell
// whether they read the same file.
std::string input_hash_name(const input_file& file);

// Reads the init and weights files that `c` names into c.init.contents and c.weights.contents
// (what make_initial and make_weights need), for the run's n, d and heads.
void read_input_files(run_config& c);

} // namespace nadyn
