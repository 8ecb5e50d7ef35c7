// results/ is produced by commands, never edited by hand: results/README.md embeds every table
// file of results/ verbatim (`nadyn table all` writes both from the same strings), and every
// file the README names exists. A hand edit of either side, or a table regenerated alone
// without the README, fails here.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

const fs::path results_dir = fs::path(NADYN_SOURCE_DIR) / "results";

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST_CASE("results/README.md embeds each study's table verbatim") {
    const std::string readme = read_file(results_dir / "README.md");
    REQUIRE(!readme.empty());
    // Each study's section is "## N. Title (`<table>.md`, ...)" (the headings of
    // studies/paper.toml; tests/python/test_table.py renders the whole README from it). A
    // study's page starts with its own heading ("# ..."); the README has it under its section.
    std::size_t sections = 0;
    for (std::size_t at = readme.find("\n## "); at != std::string::npos;
         at = readme.find("\n## ", at + 1)) {
        const std::string heading = readme.substr(at + 4, readme.find('\n', at + 1) - at - 4);
        const std::size_t open = heading.find("(`");
        if (heading.empty() || !std::isdigit(static_cast<unsigned char>(heading[0])) ||
            open == std::string::npos)
            continue;
        const std::string name = heading.substr(open + 2, heading.find('`', open + 2) - open - 2);
        INFO(heading);
        REQUIRE(name.ends_with(".md"));
        ++sections;
        const std::string page = read_file(results_dir / name);
        REQUIRE(page.rfind("# ", 0) == 0);
        const std::string body = page.substr(page.find_first_not_of('\n', page.find('\n')));
        CHECK(readme.find(body) != std::string::npos);
    }
    CHECK(sections >=
          6); // initial, terminal, random_weights, unselectable, noise, mean_field_limit
}

TEST_CASE("every results file that results/README.md names in backquotes exists") {
    const std::string readme = read_file(results_dir / "README.md");
    std::size_t named = 0;
    for (std::size_t at = readme.find('`'); at != std::string::npos;
         at = readme.find('`', at + 1)) {
        const std::size_t end = readme.find('`', at + 1);
        if (end == std::string::npos) break;
        const std::string name = readme.substr(at + 1, end - at - 1);
        at = end;
        const bool table_file =
            name.find(' ') == std::string::npos && name.find('/') == std::string::npos &&
            (name.ends_with(".md") || name.ends_with(".csv") || name.ends_with(".png"));
        if (!table_file || name == "README.md") continue;
        ++named;
        CHECK_MESSAGE(fs::exists(results_dir / name), "results/README.md names " << name);
    }
    CHECK(named >= 10);
}
