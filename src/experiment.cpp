#include "nadyn/experiment.hpp"

#include "nadyn/detail/hdf5.hpp"
#include "nadyn/error.hpp"
#include "nadyn/initial.hpp"
#include "nadyn/norm.hpp"
#include "nadyn/parameter_registry.hpp"
#include "nadyn/weights.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace nadyn {

namespace {

// "FILE:LINE: " for a node parsed from the file (an override has no line).
std::string where(const std::string& source, const toml::source_region& region) {
    if (region.begin.line == 0) return source + ": ";
    return source + ":" + std::to_string(region.begin.line) + ": ";
}

std::string number_text(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

// A scalar TOML value as the text the registry parses; input_error for arrays and tables.
std::string scalar_text(const toml::node& node, const std::string& at, const std::string& key) {
    if (const auto* s = node.as_string()) return s->get();
    if (const auto* i = node.as_integer()) return std::to_string(i->get());
    if (const auto* f = node.as_floating_point()) return number_text(f->get());
    if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
    throw input_error(at + "key '" + key + "': expected a string, number or boolean, got a " +
                      std::string(node.is_array() ? "list" : "table"));
}

double numeric(const toml::node& node, const std::string& at, const std::string& key) {
    if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
    if (const auto* f = node.as_floating_point()) return f->get();
    throw input_error(at + "key '" + key + "': expected a number");
}

std::int64_t whole(const toml::node& node, const std::string& at, const std::string& key) {
    if (const auto* i = node.as_integer()) return i->get();
    throw input_error(at + "key '" + key + "': expected a whole number");
}

// The values of one axis: a list, or a table with one of linspace, logspace, range.
std::vector<std::string> axis_values(const toml::node& node, const std::string& at,
                                     const std::string& key, const parameter_spec& spec) {
    std::vector<std::string> values;
    if (const auto* list = node.as_array()) {
        for (const toml::node& item : *list)
            values.push_back(scalar_text(item, at, key));
    } else if (const auto* table = node.as_table()) {
        if (table->size() != 1)
            throw input_error(at + "key '" + key +
                              "': an axis table has exactly one of linspace, logspace, range");
        const auto entry = *table->begin(); // a proxy pair holding references
        const toml::key& generator_key = entry.first;
        const toml::node& generator = entry.second;
        const std::string generator_name(generator_key.str());
        const auto* arguments = generator.as_array();
        const std::string full = key + "." + generator_name;
        if (!arguments)
            throw input_error(at + "key '" + full + "': expected a list like [first, last, count]");
        auto argument = [&](std::size_t i) -> const toml::node& { return *arguments->get(i); };
        if (generator_name == "linspace" || generator_name == "logspace") {
            if (arguments->size() != 3)
                throw input_error(at + "key '" + full + "': expected [first, last, count]");
            const double first = numeric(argument(0), at, full);
            const double last = numeric(argument(1), at, full);
            const std::int64_t count = whole(argument(2), at, full);
            if (count < 1 || count > 10000000)
                throw input_error(at + "key '" + full + "': count must be between 1 and 1e7");
            for (std::int64_t i = 0; i < count; ++i) {
                // first + i * step, with the last value exact.
                const double u = count == 1 ? 0.0 : double(i) / double(count - 1);
                double x = i + 1 == count ? last : first + u * (last - first);
                if (generator_name == "logspace") x = std::pow(10.0, x);
                values.push_back(spec.type == value_type::integer ? std::to_string(std::llround(x))
                                                                  : number_text(x));
            }
        } else if (generator_name == "range") {
            if (arguments->size() != 2 && arguments->size() != 3)
                throw input_error(at + "key '" + full +
                                  "': expected [first, last] or [first, "
                                  "last, step] (inclusive)");
            if (spec.type == value_type::integer) {
                const std::int64_t first = whole(argument(0), at, full);
                const std::int64_t last = whole(argument(1), at, full);
                const std::int64_t step = arguments->size() == 3 ? whole(argument(2), at, full) : 1;
                if (step <= 0 || last < first || (last - first) / step >= 10000000)
                    throw input_error(at + "key '" + full +
                                      "': needs first <= last, step > 0 and at most 1e7 values");
                for (std::int64_t x = first; x <= last; x += step)
                    values.push_back(std::to_string(x));
            } else {
                const double first = numeric(argument(0), at, full);
                const double last = numeric(argument(1), at, full);
                const double step = arguments->size() == 3 ? numeric(argument(2), at, full) : 1.0;
                if (!(step > 0) || !(last >= first) || (last - first) / step >= 1e7)
                    throw input_error(at + "key '" + full +
                                      "': needs first <= last, step > 0 and at most 1e7 values");
                const auto count =
                    static_cast<std::int64_t>(std::floor((last - first) / step * (1 + 1e-12))) + 1;
                for (std::int64_t i = 0; i < count; ++i)
                    values.push_back(number_text(first + double(i) * step));
            }
        } else {
            throw input_error(at + "key '" + full +
                              "': unknown axis generator; valid: linspace, logspace, range, or a "
                              "list of values");
        }
    } else {
        values.push_back(scalar_text(node, at, key));
    }
    if (values.empty()) throw input_error(at + "key '" + key + "': the axis is empty");
    return values;
}

// Registry names with '-' accepted for '_' (the flags' spelling): "t-switch" is t_switch.
std::string parameter_key(std::string_view key) {
    std::string name(key);
    for (char& c : name)
        if (c == '-') c = '_';
    return name;
}

void apply_override(toml::table& root, const std::string& assignment) {
    const auto equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0)
        throw input_error("--set '" + assignment + "': expected key=value (e.g. run.n=128)");
    const std::string path = assignment.substr(0, equals);
    const std::string value_text = assignment.substr(equals + 1);
    // The value in TOML syntax; a bare word (pre-ln, file:x.h5) is a string.
    toml::table parsed;
    try {
        parsed = toml::parse("value = " + value_text);
    } catch (const toml::parse_error&) {
        parsed = toml::table{{"value", value_text}};
    }
    std::vector<std::string> parts;
    std::stringstream stream(path);
    for (std::string part; std::getline(stream, part, '.');)
        parts.push_back(part);
    if (parts.size() < 2 || (parts[0] != "run" && parts[0] != "sweep"))
        throw input_error("--set '" + assignment +
                          "': the key must start with run. or sweep. (e.g. run.n=128, "
                          "sweep.seed.range=[1,8])");
    toml::table* table = &root;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        toml::node* child = table->get(parts[i]);
        if (!child || !child->is_table()) {
            table->insert_or_assign(parts[i], toml::table{});
            child = table->get(parts[i]);
        }
        table = child->as_table();
    }
    table->insert_or_assign(parts.back(), std::move(*parsed.get("value")));
}

} // namespace

std::string_view to_string(sweep_positions positions) {
    switch (positions) {
    case sweep_positions::none:
        return "none";
    case sweep_positions::final:
        return "final";
    case sweep_positions::all:
        return "all";
    }
    return "final";
}

experiment experiment::parse(const std::string& text, const std::string& source,
                             const std::vector<std::string>& overrides) {
    experiment e;
    e.source = source;
    e.text = text;
    e.overrides = overrides;
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& error) {
        throw input_error(where(source, error.source()) + std::string(error.description()));
    }
    for (const std::string& assignment : overrides)
        apply_override(root, assignment);

    for (const auto& [key, node] : root) {
        const std::string name(key.str());
        if (name != "run" && name != "sweep")
            throw input_error(where(source, key.source()) + "unknown table '" + name +
                              "'; valid tables: run, sweep");
        if (!node.is_table())
            throw input_error(where(source, key.source()) + "'" + name + "' must be a table ([" +
                              name + "])");
    }
    if (const toml::table* run = root["run"].as_table()) {
        for (const auto& [key, node] : *run) {
            const std::string at = where(source, key.source());
            const std::string name = parameter_key(key.str());
            if (name == "positions") {
                const std::string value = scalar_text(node, at, "run.positions");
                if (value == "none")
                    e.positions = sweep_positions::none;
                else if (value == "final")
                    e.positions = sweep_positions::final;
                else if (value == "all")
                    e.positions = sweep_positions::all;
                else
                    throw input_error(at + "key 'run.positions': unknown value '" + value +
                                      "'; valid values: none, final, all");
                continue;
            }
            const parameter_spec* spec = find_parameter(name);
            if (!spec)
                throw input_error(at + "unknown key 'run." + std::string(key.str()) +
                                  "'; valid keys: " + parameter_names());
            try {
                spec->assign(e.base, scalar_text(node, at, "run." + name));
            } catch (const input_error& error) {
                const std::string message = error.what();
                if (message.rfind(source, 0) == 0) throw;
                throw input_error(at + "key 'run." + name + "': " + message);
            }
        }
    }
    if (const toml::table* sweep = root["sweep"].as_table()) {
        // toml++ keeps a table's keys sorted; the axes follow the file's order (keys that only
        // --set added come last, in name order).
        std::vector<std::pair<const toml::key*, const toml::node*>> ordered;
        for (const auto& [key, node] : *sweep)
            ordered.emplace_back(&key, &node);
        auto line = [](const toml::key* key) {
            const auto l = key->source().begin.line;
            return l == 0 ? std::numeric_limits<std::uint32_t>::max() : l;
        };
        std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
            return line(a.first) < line(b.first);
        });
        for (const auto& [key_pointer, node_pointer] : ordered) {
            const toml::key& key = *key_pointer;
            const toml::node& node = *node_pointer;
            const std::string at = where(source, key.source());
            const std::string name = parameter_key(key.str());
            const parameter_spec* spec = find_parameter(name);
            if (!spec)
                throw input_error(at + "unknown sweep axis 'sweep." + std::string(key.str()) +
                                  "'; valid keys: " + parameter_names());
            if (!spec->sweepable)
                throw input_error(at + "key 'sweep." + name +
                                  "': this parameter cannot vary in a sweep (it does not change "
                                  "a run's outcome, or the sweep file fixes it); set it in [run]");
            for (const auto& axis : e.axes)
                if (axis.name == name)
                    throw input_error(at + "key 'sweep." + name + "': the axis is given twice");
            sweep_axis axis{name, axis_values(node, at, "sweep." + name, *spec)};
            for (const std::string& value : axis.values) {
                run_config probe = e.base;
                try {
                    spec->assign(probe, value);
                } catch (const input_error& error) {
                    throw input_error(at + "key 'sweep." + name + "': " + error.what());
                }
            }
            e.axes.push_back(std::move(axis));
        }
    }
    // Every run must be valid; checking the corners catches most, checking all is cheap.
    const std::size_t runs = e.size();
    if (runs > 100000000) throw input_error(source + ": the sweep has more than 1e8 runs");
    for (std::size_t i = 0; i < runs; ++i) {
        try {
            e.point(i).validate();
        } catch (const input_error& error) {
            throw input_error(source + ": run " + std::to_string(i) + " (" + e.label(i) +
                              "): " + error.what());
        }
    }
    return e;
}

experiment experiment::load(const std::string& path, const std::vector<std::string>& overrides) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
        throw input_error("cannot read the experiment file '" + path +
                          "' (missing or not readable)");
    std::ostringstream text;
    text << file.rdbuf();
    return parse(text.str(), path, overrides);
}

std::size_t experiment::size() const {
    std::size_t runs = 1;
    for (const auto& axis : axes)
        runs *= axis.values.size();
    return runs;
}

std::vector<std::size_t> experiment::coordinates(std::size_t index) const {
    std::vector<std::size_t> at(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
        at[a] = index % axes[a].values.size();
        index /= axes[a].values.size();
    }
    return at;
}

run_config experiment::point(std::size_t index) const {
    run_config c = base;
    const auto at = coordinates(index);
    for (std::size_t a = 0; a < axes.size(); ++a)
        assign_parameter(c, axes[a].name, axes[a].values[at[a]]);
    return c;
}

std::string experiment::label(std::size_t index) const {
    std::string out;
    const auto at = coordinates(index);
    for (std::size_t a = 0; a < axes.size(); ++a)
        out += (a ? " " : "") + axes[a].name + "=" + axes[a].values[at[a]];
    return out.empty() ? "the base run" : out;
}

void experiment::for_each_combination(
    const std::function<bool(std::string_view axis)>& selected,
    const std::function<void(const run_config& config, std::size_t index, std::size_t runs)>& visit)
    const {
    // Row-major strides of the runs' index over the axes; the last axis varies fastest.
    std::vector<std::size_t> stride(axes.size(), 1), chosen;
    for (std::size_t a = axes.size(); a-- > 1;)
        stride[a - 1] = stride[a] * axes[a].values.size();
    std::size_t combinations = 1;
    for (std::size_t a = 0; a < axes.size(); ++a)
        if (selected(axes[a].name)) {
            chosen.push_back(a);
            combinations *= axes[a].values.size();
        }
    const std::size_t runs = size() / combinations;
    std::vector<std::size_t> at(chosen.size(), 0);
    for (std::size_t k = 0; k < combinations; ++k) {
        std::size_t index = 0;
        for (std::size_t j = 0; j < chosen.size(); ++j)
            index += at[j] * stride[chosen[j]];
        visit(point(index), index, runs);
        for (std::size_t j = chosen.size(); j-- > 0;) { // the next combination, odometer-wise
            if (++at[j] < axes[chosen[j]].values.size()) break;
            at[j] = 0;
        }
    }
}

void experiment::check_input_files() const {
    // What the readers of the three files depend on; the seed only draws what is not read.
    static constexpr std::string_view inputs[] = {"init",    "n",     "d",     "r0",       "norm",
                                                  "weights", "heads", "value", "ln_params"};
    const auto is_input = [](std::string_view axis) {
        return std::find(std::begin(inputs), std::end(inputs), axis) != std::end(inputs);
    };
    for_each_combination(is_input, [&](const run_config& c, std::size_t index, std::size_t) {
        try {
            auto guard = detail::hdf5_lock();
            if (c.init.kind == initial_kind::file)
                (void)make_initial(c.init, c.n, c.d, c.seed, c.r0, c.norm);
            if (c.weights.family == weights_family::file)
                (void)make_weights(c.weights, c.d, c.seed, c.weights.per_layer ? 0 : -1);
            if (!c.ln_params.empty()) (void)read_layer_norm_affine(c.ln_params, c.d);
        } catch (const input_error& error) {
            throw input_error(source + ": run " + std::to_string(index) + " (" + label(index) +
                              "): " + error.what());
        }
    });
}

} // namespace nadyn
