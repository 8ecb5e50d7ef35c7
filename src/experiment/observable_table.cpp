#include "nadyn/experiment/observable_table.hpp"

#include "nadyn/experiment/unselectable.hpp"

#include <deque>
#include <mutex>
#include <stdexcept>

namespace nadyn {

namespace {

// This layer's rows: observables that need more than the model has (GLPK's linear programs).
constexpr observable experiment_rows[] = {
    {.name = "unselectable",
     .description = "fraction of the keys attention uses, K_h y_j (y_j = theta_j, or r_j theta_j "
                    "for no-norm), that lie in the convex hull of the other keys, so that no "
                    "query can select them; mean over the heads (docs/model.md section 12)",
     .unit = "1",
     .cost = "n linear programs per frame",
     .optional = true,
     .pass = observable_pass::own,
     .value =
         [](const frame_context& frame, std::vector<double>& keys, double* out) {
             *out = unselectable_fraction(frame.input, frame.n, frame.d, *frame.weights, keys);
         }},
};

// The rows a program added (add_observable): a deque, so that a row's address never moves.
struct added_rows {
    std::mutex lock;
    std::deque<observable> rows;
};

added_rows& added() {
    static added_rows rows;
    return rows;
}

} // namespace

std::vector<const observable*> observable_table() {
    std::vector<const observable*> rows;
    // The standard rows are the model's; the optional ones follow in the order of the files
    // written so far (unselectable first).
    for (const observable& row : model_observables())
        if (!row.optional) rows.push_back(&row);
    for (const observable& row : experiment_rows)
        rows.push_back(&row);
    for (const observable& row : model_observables())
        if (row.optional) rows.push_back(&row);
    added_rows& extra = added();
    const std::lock_guard<std::mutex> hold(extra.lock);
    for (const observable& row : extra.rows)
        rows.push_back(&row);
    return rows;
}

const observable* find_observable(std::string_view name) {
    for (const observable* row : observable_table())
        if (row->name == name) return row;
    for (const observable* row : observable_table())
        if (!row->legacy_name.empty() && row->legacy_name == name) return row;
    return nullptr;
}

std::vector<std::string_view> observable_names(bool optional) {
    std::vector<std::string_view> names;
    for (const observable* row : observable_table())
        if (row->optional == optional) names.push_back(row->name);
    return names;
}

void add_observable(const observable& row) {
    if (!row.optional)
        throw std::invalid_argument("observable '" + std::string(row.name) +
                                    "': only optional observables can be added");
    if (!row.value)
        throw std::invalid_argument("observable '" + std::string(row.name) +
                                    "' has no computation");
    if (row.name.empty() || row.name.find_first_of("/,") != std::string_view::npos ||
        find_observable(row.name) || row.name == "none" || row.name == "all")
        throw std::invalid_argument("observable name '" + std::string(row.name) +
                                    "' is taken or cannot name an observable");
    added_rows& extra = added();
    const std::lock_guard<std::mutex> hold(extra.lock);
    extra.rows.push_back(row);
}

std::string observe_help() {
    std::string text = "Optional observables, comma-separated: ";
    bool first = true;
    for (const observable* row : observable_table()) {
        if (!row->optional) continue;
        text += (first ? "" : ", ") + std::string(row->name);
        if (!row->cost.empty()) text += " (" + std::string(row->cost) + ")";
        first = false;
    }
    return text + " | none";
}

} // namespace nadyn
