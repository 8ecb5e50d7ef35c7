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
#include "nadyn/experiment/observable_table.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

struct block {
    std::string begin, end, text;
};

block table_block(bool optional) {
    const std::string kind = optional ? "optional observables" : "standard observables";
    return {"<!-- " + kind +
                ": generated from the table of observables by scripts/update_cli_reference.sh; "
                "do not edit -->\n",
            "<!-- end of " + kind + " -->\n", nadyn::observable_reference(optional)};
}

std::string read_whole(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw std::runtime_error("cannot read " + path);
    return text.str();
}

} // namespace

int main(int argc, char** argv) {
    try {
        const block blocks[] = {table_block(false), table_block(true)};
        if (argc == 1) {
            for (const block& b : blocks)
                std::cout << b.begin << b.text << b.end << "\n";
            return 0;
        }
        const std::string mode = argv[1];
        if (argc != 3 || (mode != "--check" && mode != "--write")) {
            std::fprintf(stderr, "usage: nadyn_observable_reference [--check|--write FILE]\n");
            return 2;
        }
        const std::string path = argv[2];
        std::string document = read_whole(path);
        bool same = true;
        for (const block& b : blocks) {
            const auto begin = document.find(b.begin);
            const auto end = document.find(b.end);
            if (begin == std::string::npos || end == std::string::npos || end < begin) {
                std::fprintf(stderr, "%s: no generated table (the marker %s is missing)\n",
                             path.c_str(), b.begin.c_str());
                return 1;
            }
            const std::size_t start = begin + b.begin.size();
            if (document.compare(start, end - start, b.text) == 0) continue;
            same = false;
            document.replace(start, end - start, b.text);
        }
        if (mode == "--check") {
            if (same) return 0;
            std::fprintf(stderr,
                         "%s: the observables' tables differ from the library's table of "
                         "observables; run bash scripts/update_cli_reference.sh\n",
                         path.c_str());
            for (const block& b : blocks)
                std::cerr << "---- the library's table:\n" << b.text;
            return 1;
        }
        std::ofstream out(path + ".partial");
        out << document;
        out.close();
        if (!out || std::rename((path + ".partial").c_str(), path.c_str()) != 0) {
            std::fprintf(stderr, "cannot write %s\n", path.c_str());
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nadyn_observable_reference: %s\n", e.what());
        return 1;
    }
}
