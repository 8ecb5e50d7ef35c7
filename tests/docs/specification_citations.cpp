// The specification ships with the project: every text file cites docs/model.md, never a
// specification users do not have, and every citation points at something that exists
// (a section number that docs/model.md has, a Markdown link whose file and heading exist).
// Every other relative Markdown link of a shipped document reaches its file and heading too,
// so that text moved between README.md and docs/ keeps its links.
//
// The forbidden strings are assembled from pieces, so this file does not contain them and
// is scanned like every other.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path source_dir{NADYN_SOURCE_DIR};
const fs::path model_path = source_dir / "docs" / "model.md";

// What the repository ships as text: top-level documents and these folders.
const std::vector<std::string> scanned_roots{"README.md",
                                             "ARCHITECTURE.md",
                                             "CHANGELOG.md",
                                             "CITATION.cff",
                                             "LICENSE",
                                             "CMakeLists.txt",
                                             "CMakePresets.json",
                                             "docs",
                                             "include",
                                             "src",
                                             "apps",
                                             "tests",
                                             "results",
                                             "scripts",
                                             "bench",
                                             "examples",
                                             "fuzz",
                                             "python",
                                             ".ci"};

bool skipped_directory(const fs::path& dir) {
    const std::string name = dir.filename().string();
    return name == ".git" || name.rfind("build", 0) == 0 || name == "__pycache__" ||
           name == ".ipynb_checkpoints" || name == ".pytest_cache";
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

struct text_file {
    fs::path path;
    std::string text;
};

// Every shipped file that is text (no NUL byte: HDF5 files, images and fuzz inputs are not).
std::vector<text_file> shipped_text_files() {
    std::vector<fs::path> paths;
    for (const auto& root : scanned_roots) {
        const fs::path top = source_dir / root;
        if (fs::is_regular_file(top)) paths.push_back(top);
        if (!fs::is_directory(top)) continue;
        // The other suites run beside this one (ctest -j) and make and remove scratch files
        // and caches under python/ and results/: an entry that vanishes while the tree is
        // walked is not an error (the walk of that root ends there).
        std::error_code error;
        for (auto it = fs::recursive_directory_iterator(top, error); !error && it != fs::end(it);
             it.increment(error)) {
            if (it->is_directory(error) && skipped_directory(it->path())) {
                it.disable_recursion_pending();
                continue;
            }
            if (it->is_regular_file(error)) paths.push_back(it->path());
        }
    }
    std::sort(paths.begin(), paths.end());
    std::vector<text_file> files;
    for (const auto& path : paths) {
        std::string text = read_file(path);
        if (!fs::exists(path)) continue; // removed since the walk
        if (text.find('\0') == std::string::npos) files.push_back({path, std::move(text)});
    }
    return files;
}

std::string repository_path(const fs::path& path) {
    return path.lexically_relative(source_dir).generic_string();
}

std::size_t line_of(const std::string& text, std::size_t offset) {
    return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

// GitHub's heading anchors: lower case, spaces to '-', punctuation dropped ('-' and '_'
// kept), a repeated anchor suffixed -1, -2, ... Non-ASCII bytes are dropped as symbols
// (right for ‖ or §, wrong for accented letters, which docs/model.md headings avoid).
std::string github_anchor(const std::string& heading) {
    std::string anchor;
    for (const char c : heading) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x80) continue;
        if (std::isalnum(u) || c == '-' || c == '_')
            anchor += static_cast<char>(std::tolower(u));
        else if (c == ' ')
            anchor += '-';
    }
    return anchor;
}

struct heading {
    int level;
    std::string text;
};

// ATX headings outside fenced code blocks.
std::vector<heading> markdown_headings(const std::string& text) {
    std::vector<heading> out;
    std::istringstream lines(text);
    std::string line;
    bool fenced = false;
    while (std::getline(lines, line)) {
        if (line.rfind("```", 0) == 0) fenced = !fenced;
        if (fenced || line.empty() || line[0] != '#') continue;
        const std::size_t level = line.find_first_not_of('#');
        if (level == std::string::npos || level > 6 || line[level] != ' ') continue;
        std::string title = line.substr(level + 1);
        while (!title.empty() &&
               (title.back() == ' ' || title.back() == '#' || title.back() == '\r'))
            title.pop_back();
        out.push_back({static_cast<int>(level), title});
    }
    return out;
}

std::set<std::string> anchors_of(const std::vector<heading>& headings) {
    std::set<std::string> anchors;
    std::map<std::string, int> seen;
    for (const auto& h : headings) {
        const std::string base = github_anchor(h.text);
        const int repeat = seen[base]++;
        anchors.insert(repeat == 0 ? base : base + "-" + std::to_string(repeat));
    }
    return anchors;
}

// The numbers N of the "## N. Title" sections of docs/model.md, in order.
std::vector<int> section_numbers(const std::vector<heading>& headings) {
    std::vector<int> numbers;
    for (const auto& h : headings) {
        if (h.level != 2) continue;
        std::size_t digits = 0;
        while (digits < h.text.size() && std::isdigit(static_cast<unsigned char>(h.text[digits])))
            ++digits;
        if (digits > 0 && digits < h.text.size() && h.text[digits] == '.')
            numbers.push_back(std::stoi(h.text.substr(0, digits)));
    }
    return numbers;
}

} // namespace

TEST_CASE("docs/model.md has the sections 1, 2, 3, ..., numbered in order, at least 15") {
    REQUIRE(fs::is_regular_file(model_path));
    const std::vector<int> numbers = section_numbers(markdown_headings(read_file(model_path)));
    // At least up to §15 (metastable clusters); a new section takes the next number.
    CHECK(numbers.size() >= 15);
    std::vector<int> expected(numbers.size());
    for (std::size_t i = 0; i < numbers.size(); ++i)
        expected[i] = static_cast<int>(i) + 1;
    CHECK(numbers == expected);
    // The anchor rule on a heading with punctuation, as GitHub renders it.
    CHECK(github_anchor("3. Closed forms of the symmetric start") ==
          "3-closed-forms-of-the-symmetric-start");
    CHECK(github_anchor("9. No-norm: the residual stream") == "9-no-norm-the-residual-stream");
}

TEST_CASE("no shipped file cites a specification users do not have") {
    const std::string upper_name = std::string("MODEL") + ".md";
    const std::vector<std::string> forbidden{upper_name, std::string("..") + "/shared",
                                             std::string("/work") + "/shared"};
    const auto files = shipped_text_files();
    REQUIRE(files.size() > 50); // the scan found the repository
    std::size_t citations = 0;
    for (const auto& file : files)
        for (const auto& word : forbidden)
            for (std::size_t at = file.text.find(word); at != std::string::npos;
                 at = file.text.find(word, at + 1)) {
                ++citations;
                FAIL_CHECK(repository_path(file.path) << ":" << line_of(file.text, at) << " cites '"
                                                      << word << "'; cite docs/model.md instead");
            }
    CHECK(citations == 0);
}

TEST_CASE("every section citation of docs/model.md names a section that exists") {
    const std::vector<int> numbers = section_numbers(markdown_headings(read_file(model_path)));
    const std::set<int> sections(numbers.begin(), numbers.end());
    // The citation, then a number; "§N" (the letter) is the generic form in prose.
    const std::string cite = std::string("docs/model.md ") + "§";
    std::size_t checked = 0;
    for (const auto& file : shipped_text_files())
        for (std::size_t at = file.text.find(cite); at != std::string::npos;
             at = file.text.find(cite, at + 1)) {
            std::size_t p = at + cite.size();
            // "§3", "§1-2", "§1–2": every number of the citation.
            if (file.text.compare(p, 1, "N") == 0) continue;
            for (;;) {
                std::size_t digits = 0;
                while (p + digits < file.text.size() &&
                       std::isdigit(static_cast<unsigned char>(file.text[p + digits])))
                    ++digits;
                if (digits == 0) {
                    FAIL_CHECK(repository_path(file.path) << ":" << line_of(file.text, at)
                                                          << ": '§' without a section number");
                    break;
                }
                const int section = std::stoi(file.text.substr(p, digits));
                ++checked;
                if (!sections.count(section))
                    FAIL_CHECK(repository_path(file.path)
                               << ":" << line_of(file.text, at) << " cites section " << section
                               << " of docs/model.md, which has no such section");
                p += digits;
                if (file.text.compare(p, 1, "-") == 0)
                    p += 1;
                else if (file.text.compare(p, 3, "–") == 0)
                    p += 3;
                else
                    break;
            }
        }
    CHECK(checked > 0);
}

TEST_CASE("every Markdown link to docs/model.md reaches the file and one of its headings") {
    const std::set<std::string> anchors = anchors_of(markdown_headings(read_file(model_path)));
    const fs::path model = model_path.lexically_normal();
    std::size_t links = 0;
    for (const auto& file : shipped_text_files()) {
        if (file.path.extension() != ".md") continue;
        const bool is_model = file.path.lexically_normal() == model;
        for (std::size_t at = file.text.find("]("); at != std::string::npos;
             at = file.text.find("](", at + 1)) {
            const std::size_t end = file.text.find_first_of(") \n", at + 2);
            if (end == std::string::npos) break;
            const std::string target = file.text.substr(at + 2, end - at - 2);
            const std::size_t hash = target.find('#');
            const std::string path = target.substr(0, hash);
            const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
            if (path.find("://") != std::string::npos || path.rfind("mailto:", 0) == 0) continue;
            const bool to_model = path.empty() ? is_model : fs::path(path).filename() == "model.md";
            if (!to_model) continue;
            ++links;
            const std::string where =
                repository_path(file.path) + ":" + std::to_string(line_of(file.text, at));
            if (!path.empty() && (file.path.parent_path() / path).lexically_normal() != model) {
                FAIL_CHECK(where << ": link '" << target
                                 << "' does not lead to docs/model.md from this folder");
                continue;
            }
            if (!anchor.empty() && !anchors.count(anchor))
                FAIL_CHECK(where << ": link '" << target << "' names no heading of docs/model.md");
        }
    }
    CHECK(links > 0);
}

TEST_CASE("every relative Markdown link of a shipped document reaches its file and heading") {
    std::size_t links = 0;
    std::map<fs::path, std::set<std::string>> anchors_by_file;
    for (const auto& file : shipped_text_files()) {
        if (file.path.extension() != ".md") continue;
        for (std::size_t at = file.text.find("]("); at != std::string::npos;
             at = file.text.find("](", at + 1)) {
            const std::size_t end = file.text.find_first_of(") \n", at + 2);
            if (end == std::string::npos) break;
            if (file.text[end] != ')') continue; // code such as a C++ lambda `[](const ...`
            const std::string target = file.text.substr(at + 2, end - at - 2);
            const std::size_t hash = target.find('#');
            const std::string path = target.substr(0, hash);
            const std::string anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
            if (path.find("://") != std::string::npos || path.rfind("mailto:", 0) == 0) continue;
            ++links;
            const std::string where =
                repository_path(file.path) + ":" + std::to_string(line_of(file.text, at));
            const fs::path resolved =
                path.empty() ? file.path : (file.path.parent_path() / path).lexically_normal();
            if (!fs::exists(resolved)) {
                FAIL_CHECK(where << ": link '" << target << "' leads to no file from this folder");
                continue;
            }
            if (anchor.empty() || resolved.extension() != ".md") continue;
            auto found = anchors_by_file.find(resolved);
            if (found == anchors_by_file.end())
                found = anchors_by_file
                            .emplace(resolved, anchors_of(markdown_headings(read_file(resolved))))
                            .first;
            if (!found->second.count(anchor))
                FAIL_CHECK(where << ": link '" << target << "' names no heading of "
                                 << repository_path(resolved));
        }
    }
    CHECK(links > 50); // the scan found the documents' links
}
