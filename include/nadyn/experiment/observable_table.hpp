#pragma once
// The table of every observable a run can record (one row each, observables.hpp): the model
// layer's rows, this layer's (unselectable: linear programs, GLPK, which the model layer
// knows nothing of) and the rows a program adds (add_observable). It drives --observables and
// --observe (names, checks, help), the files' /observables, the sweep files' variables,
// nadyn inspect --describe and the generated table of docs/file-format.md
// (tests/tools/observable_reference.hpp).
#include "nadyn/model/observables.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace nadyn {

// Every row, in file order: the standard observables first, then the optional ones (this
// layer's, the model's, then those a program added, in the order added).
std::vector<const observable*> observable_table();
// The row named `name`, or whose legacy_name it is (nullptr for a name nadyn does not define).
const observable* find_observable(std::string_view name);
// The names of the standard (optional = false) or the optional rows, in file order.
std::vector<std::string_view> observable_names(bool optional);

// Adds a row to the table of this process (an observable outside the library, such as one a
// test or a program embedding nadyn defines): an optional one, asked for with --observe like
// the others and written after them. Its strings must outlive every run (string literals).
// Throws std::invalid_argument for a standard row, a row without a computation or a name
// already taken. Rows are only ever added, before the runs that use them start.
void add_observable(const observable& row);

// --observe's help: the optional observables' names and costs.
std::string observe_help();

} // namespace nadyn
