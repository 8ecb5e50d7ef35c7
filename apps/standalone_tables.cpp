// The table of another paper on its own: `nadyn table unselectable` (docs/model.md §12).
// It writes <stem>.md and <stem>.csv into --out-dir, prints one of them, and draws its
// figure with scripts/figure_<stem>.py. (`nadyn table noise` is a study: studies/noise/.)
#include "commands.hpp"

#include "nadyn/error.hpp"
#include "nadyn/unselectable_table.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace nadyn::cli {

namespace {

// Writes a file whole, or nothing: a temporary beside it, renamed into place.
void write_whole(const std::filesystem::path& path, const std::string& text) {
    const std::filesystem::path temporary = path.string() + ".partial";
    {
        std::ofstream out(temporary);
        out << text;
        if (!out) throw io_error("cannot write '" + temporary.string() + "'");
    }
    std::filesystem::rename(temporary, path);
}

std::filesystem::path output_dir(const std::string& out_dir) {
    const std::filesystem::path dir = out_dir;
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error || !std::filesystem::is_directory(dir))
        throw input_error("cannot create output directory '" + out_dir + "'");
    return dir;
}

// The files, the printed table and the figure of one table.
int publish(const std::filesystem::path& dir, const std::string& stem, const std::string& markdown,
            const std::string& table_csv, const std::string& python, bool figures, bool csv) {
    write_whole(dir / (stem + ".md"), markdown);
    write_whole(dir / (stem + ".csv"), table_csv);
    std::cout << (csv ? table_csv : markdown);
    if (figures) {
        const std::filesystem::path script =
            std::filesystem::path(NADYN_SOURCE_DIR) / "scripts" / ("figure_" + stem + ".py");
        const std::string command = python + " " + script.string() + " " + dir.string();
        std::fprintf(stderr, "nadyn table: figure: %s\n", command.c_str());
        if (std::system(command.c_str()) != 0)
            throw io_error("the figure script failed: " + command);
    }
    return 0;
}

} // namespace

int run_unselectable_table(const std::string& out_dir, const std::vector<std::uint64_t>& seeds,
                           const std::string& python, bool figures, bool csv) {
    if (seeds.empty()) throw input_error("unselectable: at least one seed");
    const std::filesystem::path dir = output_dir(out_dir);
    unselectable_table_settings settings;
    settings.seeds = seeds;
    const auto rows = unselectable_table(settings);
    return publish(dir, "unselectable", unselectable_table_markdown(rows, settings),
                   unselectable_table_csv(rows), python, figures, csv);
}

} // namespace nadyn::cli
