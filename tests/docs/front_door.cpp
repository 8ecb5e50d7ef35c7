// README.md is the front door: short, with the two set-up commands, and a link to every page
// of the reference in docs/; the licence, the citation file and the changelog ship beside it,
// and the citation names this version and the paper whose model nadyn simulates.
#include <doctest/doctest.h>

#include "nadyn/model/version.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

const fs::path source_dir{NADYN_SOURCE_DIR};

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST_CASE("README.md is at most 200 lines and keeps the quick start's two commands") {
    const std::string readme = read_file(source_dir / "README.md");
    REQUIRE(!readme.empty());
    CHECK(std::count(readme.begin(), readme.end(), '\n') <= 200);
    CHECK(readme.find("\n## Quick start\n") != std::string::npos);
    CHECK(readme.find("\n    bash scripts/quickstart.sh ") != std::string::npos);
    CHECK(readme.find("\n    bash scripts/test.sh ") != std::string::npos);
}

TEST_CASE("README.md links to every page of docs/") {
    const std::string readme = read_file(source_dir / "README.md");
    std::size_t pages = 0;
    for (const auto& entry : fs::directory_iterator(source_dir / "docs")) {
        if (entry.path().extension() != ".md") continue;
        ++pages;
        const std::string link = "](docs/" + entry.path().filename().string() + ")";
        CHECK_MESSAGE(readme.find(link) != std::string::npos, "README.md has no link " << link);
    }
    CHECK(pages >= 7); // cli, file-format, library, model, performance, python, testing
}

TEST_CASE("LICENSE, CITATION.cff and CHANGELOG.md ship with the README") {
    const std::string license = read_file(source_dir / "LICENSE");
    CHECK(license.rfind("MIT License\n", 0) == 0);
    const std::string citation = read_file(source_dir / "CITATION.cff");
    CHECK(citation.rfind("cff-version: 1.2.0\n", 0) == 0);
    CHECK(citation.find("\nversion: \"" + std::string(nadyn::version()) + "\"\n") !=
          std::string::npos);
    CHECK(citation.find("Normalization in Attention Dynamics") != std::string::npos);
    CHECK(citation.find("2510.22026") != std::string::npos);
    const std::string changelog = read_file(source_dir / "CHANGELOG.md");
    CHECK(changelog.find("\n## " + std::string(nadyn::version()) + " ") != std::string::npos);
}
