// The flag reference of docs/cli.md, from the program's own CLI11 app (apps/app.hpp): every
// subcommand, every flag, its value type, default and help text, as the program has them.
//
//   nadyn_cli_reference                 print the reference (Markdown)
//   nadyn_cli_reference --check FILE    exit 1 unless FILE's generated block is the reference
//   nadyn_cli_reference --write FILE    replace FILE's generated block with the reference
//
// ctest runs --check on docs/cli.md (docs/cli_reference), so a flag added, removed or
// re-described without the docs fails the suite; scripts/update_cli_reference.sh writes it.
#include "app.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

constexpr const char* begin_marker =
    "<!-- flag reference: generated from the program by scripts/update_cli_reference.sh; "
    "do not edit -->\n";
constexpr const char* end_marker = "<!-- end of flag reference -->\n";

// One table cell: no line breaks, and a literal '|' escaped.
std::string cell(const std::string& text) {
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

std::string option_row(const CLI::Option& option) {
    std::string names;
    if (option.get_positional() && option.get_lnames().empty() && option.get_snames().empty()) {
        names = "`" + option.get_name(true) + "` (positional)";
    } else {
        for (const auto& s : option.get_snames())
            names += std::string(names.empty() ? "" : ", ") + "`-" + s + "`";
        for (const auto& l : option.get_lnames())
            names += std::string(names.empty() ? "" : ", ") + "`--" + l + "`";
    }
    // A switch takes no value: CLI11 gives it no type name.
    const bool flag = option.get_type_name().empty() && !option.get_positional();
    const std::string value = flag ? "switch" : cell(option.get_type_name());
    std::string fallback = option.get_default_str();
    fallback = fallback.empty() ? "" : "`" + cell(fallback) + "`";
    std::string meaning = cell(option.get_description());
    if (option.get_required()) meaning += " (required)";
    if (option.get_items_expected_max() > 1 && !flag &&
        meaning.find("repeatable") == std::string::npos)
        meaning += " (repeatable)";
    return "| " + names + " | " + value + " | " + fallback + " | " + meaning + " |\n";
}

std::string reference() {
    CLI::App app;
    nadyn::cli::build_app(app);
    std::string text = begin_marker;
    text += "\nEvery subcommand and flag as `nadyn` has them (the `--help` texts); the sections "
            "above explain them.\n";
    for (const CLI::App* sub : app.get_subcommands({})) {
        text += "\n### `nadyn " + sub->get_name() + "` flags\n\n" + cell(sub->get_description()) +
                "\n\n| flag | value | default | meaning |\n|---|---|---|---|\n";
        for (const CLI::Option* option : sub->get_options({})) {
            if (option->get_name() == "--help") continue;
            text += option_row(*option);
        }
    }
    return text + "\n" + end_marker;
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
        const std::string generated = reference();
        if (argc == 1) {
            std::cout << generated;
            return 0;
        }
        const std::string mode = argv[1];
        if (argc != 3 || (mode != "--check" && mode != "--write")) {
            std::fprintf(stderr, "usage: nadyn_cli_reference [--check|--write FILE]\n");
            return 2;
        }
        const std::string path = argv[2];
        std::string document = read_whole(path);
        const auto begin = document.find(begin_marker);
        const auto end = document.find(end_marker);
        if (begin == std::string::npos || end == std::string::npos || end < begin) {
            std::fprintf(stderr, "%s: no generated flag reference (the markers are missing)\n",
                         path.c_str());
            return 1;
        }
        const std::string current =
            document.substr(begin, end + std::string(end_marker).size() - begin);
        if (mode == "--check") {
            if (current == generated) return 0;
            std::fprintf(stderr,
                         "%s: the flag reference differs from the program's flags; run "
                         "bash scripts/update_cli_reference.sh\n",
                         path.c_str());
            std::cerr << "---- the program's reference:\n" << generated;
            return 1;
        }
        document.replace(begin, current.size(), generated);
        std::ofstream out(path + ".partial");
        out << document;
        out.close();
        if (!out || std::rename((path + ".partial").c_str(), path.c_str()) != 0) {
            std::fprintf(stderr, "cannot write %s\n", path.c_str());
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nadyn_cli_reference: %s\n", e.what());
        return 1;
    }
}
