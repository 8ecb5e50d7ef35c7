#pragma once
// The observables' tables of docs/file-format.md (Markdown), from the library's table of
// observables: name, unit, values per frame, pass and definition; one table for the standard
// rows, one for the optional ones. Built here rather than in the library: only the docs'
// generator (observable_reference.cpp) and the tests that check a row read it.
#include "generated_block.hpp"
#include "nadyn/experiment/observable_table.hpp"

#include <string>

namespace nadyn::tools {

inline const char* pass_name(observable_pass pass) {
    switch (pass) {
    case observable_pass::moments:
        return "moments, O(n d)";
    case observable_pass::gram:
        return "Gram, O(n^2 d)";
    case observable_pass::attention:
        return "attention, O(H n^2 d)";
    case observable_pass::motion:
        return "motion";
    case observable_pass::own:
        return "own";
    }
    return "own";
}

inline std::string observable_reference(bool optional) {
    std::string text = "| name | unit | per frame | pass | definition |\n"
                       "|------|------|-----------|------|------------|\n";
    for (const observable* row : observable_table()) {
        if (row->optional != optional) continue;
        std::string per_frame = row->width == observable_width::modes ? "K (`mode_count`)" : "1";
        if (row->integer) per_frame += ", int64";
        text += "| `" + std::string(row->name) + "` | " + markdown_cell(row->unit) + " | " +
                per_frame + " | " + pass_name(row->pass) + " | " + markdown_cell(row->description) +
                " |\n";
    }
    return text;
}

} // namespace nadyn::tools
