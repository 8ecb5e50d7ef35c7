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
#include "generated_block.hpp"

#include <string>

namespace {

using nadyn::tools::markdown_cell;

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
    const std::string value = flag ? "switch" : markdown_cell(option.get_type_name());
    std::string fallback = option.get_default_str();
    fallback = fallback.empty() ? "" : "`" + markdown_cell(fallback) + "`";
    std::string meaning = markdown_cell(option.get_description());
    if (option.get_required()) meaning += " (required)";
    if (option.get_items_expected_max() > 1 && !flag &&
        meaning.find("repeatable") == std::string::npos)
        meaning += " (repeatable)";
    return "| " + names + " | " + value + " | " + fallback + " | " + meaning + " |\n";
}

std::string reference() {
    CLI::App app;
    nadyn::cli::build_app(app);
    std::string text =
        "\nEvery subcommand and flag as `nadyn` has them (the `--help` texts); the sections "
        "above explain them.\n";
    for (const CLI::App* sub : app.get_subcommands({})) {
        text += "\n### `nadyn " + sub->get_name() + "` flags\n\n" +
                markdown_cell(sub->get_description()) +
                "\n\n| flag | value | default | meaning |\n|---|---|---|---|\n";
        for (const CLI::Option* option : sub->get_options({})) {
            if (option->get_name() == "--help") continue;
            text += option_row(*option);
        }
    }
    return text + "\n";
}

} // namespace

int main(int argc, char** argv) {
    return nadyn::tools::generated_block_main(
        argc, argv, "nadyn_cli_reference",
        {{"<!-- flag reference: generated from the program by scripts/update_cli_reference.sh; "
          "do not edit -->\n",
          "<!-- end of flag reference -->\n", reference()}},
        "the flag reference differs from the program's flags");
}
