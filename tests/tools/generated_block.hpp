#pragma once
// The generated blocks of the docs (the flag reference of docs/cli.md, the observables' tables
// of docs/file-format.md): Markdown built from the program's own tables, kept between two
// marker comments, printed, checked (ctest) or rewritten (scripts/update_cli_reference.sh) by
// one small tool each. This header is what those tools (and the tests that read a table)
// share: the table cell, and the print/--check/--write command line.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace nadyn::tools {

// One Markdown table cell: no line breaks, a literal '|' escaped, no trailing blanks.
inline std::string markdown_cell(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (c == '\n')
            out += ' ';
        else if (c == '|')
            out += "\\|";
        else
            out += c;
    }
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    return out;
}

// A generated block: the text kept between the lines `begin` and `end` of a document.
struct generated_block {
    std::string begin, end, text;
};

inline std::string read_whole(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw std::runtime_error("cannot read " + path);
    return text.str();
}

// The tool's command line:
//   TOOL                 print the blocks, with their markers
//   TOOL --check FILE    exit 1 unless FILE's blocks are these (`differs` says what to do)
//   TOOL --write FILE    replace FILE's blocks with these (atomically: a .partial, renamed)
inline int generated_block_main(int argc, char** argv, const char* tool,
                                const std::vector<generated_block>& blocks, const char* differs) {
    try {
        if (argc == 1) {
            for (std::size_t i = 0; i < blocks.size(); ++i)
                std::cout << (i ? "\n" : "") << blocks[i].begin << blocks[i].text << blocks[i].end;
            return 0;
        }
        const std::string mode = argv[1];
        if (argc != 3 || (mode != "--check" && mode != "--write")) {
            std::fprintf(stderr, "usage: %s [--check|--write FILE]\n", tool);
            return 2;
        }
        const std::string path = argv[2];
        std::string document = read_whole(path);
        bool same = true;
        for (const generated_block& b : blocks) {
            const auto begin = document.find(b.begin);
            const auto end = document.find(b.end);
            if (begin == std::string::npos || end == std::string::npos || end < begin) {
                std::fprintf(stderr, "%s: no generated block (the marker %s is missing)\n",
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
            std::fprintf(stderr, "%s: %s; run bash scripts/update_cli_reference.sh\n", path.c_str(),
                         differs);
            for (const generated_block& b : blocks)
                std::cerr << "---- the program's block:\n" << b.text;
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
        std::fprintf(stderr, "%s: %s\n", tool, e.what());
        return 1;
    }
}

} // namespace nadyn::tools
