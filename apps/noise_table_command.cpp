// nadyn table noise: argmax flips under noise on the norms (docs/model.md §11).
#include "commands.hpp"

#include "nadyn/error.hpp"
#include "nadyn/noise_table.hpp"

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

} // namespace

int run_noise_table(const std::string& out_dir, const noise_table_settings& settings,
                    const std::string& python, bool figures, bool csv) {
    if (settings.seeds.empty()) throw input_error("noise: at least one seed");
    const std::filesystem::path dir = out_dir;
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error || !std::filesystem::is_directory(dir))
        throw input_error("cannot create output directory '" + out_dir + "'");
    const auto rows = noise_table(settings);
    const std::string markdown = noise_table_markdown(rows, settings);
    const std::string table_csv = noise_table_csv(rows);
    write_whole(dir / "noise.md", markdown);
    write_whole(dir / "noise.csv", table_csv);
    std::cout << (csv ? table_csv : markdown);
    if (figures) {
        const std::filesystem::path script =
            std::filesystem::path(NADYN_SOURCE_DIR) / "scripts" / "figure_noise.py";
        const std::string command = python + " " + script.string() + " " + dir.string();
        std::fprintf(stderr, "nadyn table: figure: %s\n", command.c_str());
        if (std::system(command.c_str()) != 0)
            throw io_error("the figure script failed: " + command);
    }
    return 0;
}

} // namespace nadyn::cli
