// The observables' tables of docs/file-format.md, from the library's table of observables
// (include/nadyn/experiment/observable_table.hpp): one row per observable, its name, unit,
// values per frame, pass and definition, as the files describe it.
//
//   nadyn_observable_reference                 print both tables (Markdown)
//   nadyn_observable_reference --check FILE    exit 1 unless FILE's generated tables are these
//   nadyn_observable_reference --write FILE    replace FILE's generated tables with these
//
// ctest runs --check on docs/file-format.md (docs/observable_reference), so an observable
// added, removed or re-described without the docs fails the suite;
// scripts/update_cli_reference.sh writes it.
#include "observable_reference.hpp"

namespace {

nadyn::tools::generated_block table_block(bool optional) {
    const std::string kind = optional ? "optional observables" : "standard observables";
    return {"<!-- " + kind +
                ": generated from the table of observables by scripts/update_cli_reference.sh; "
                "do not edit -->\n",
            "<!-- end of " + kind + " -->\n", nadyn::tools::observable_reference(optional)};
}

} // namespace

int main(int argc, char** argv) {
    return nadyn::tools::generated_block_main(
        argc, argv, "nadyn_observable_reference", {table_block(false), table_block(true)},
        "the observables' tables differ from the library's table of observables");
}
