#include "nadyn/experiment/experiment.hpp"

#include "nadyn/experiment/parameter_registry.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/experiment/run_inputs.hpp"
#include "nadyn/experiment/suggest.hpp"
#include "nadyn/files/input_files.hpp"
#include "nadyn/model/diagnostics.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/initial.hpp"
#include "nadyn/model/norm.hpp"
#include "nadyn/model/weights.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

namespace nadyn {

namespace {

// The most of an experiment file read: an experiment is a short text, and a device or a
// runaway file must not fill the memory.
constexpr std::size_t max_experiment_bytes = std::size_t{1} << 20;

// Text from the input quoted in a message: control characters escaped (a message is one
// line), and at most 60 bytes (a huge value must not make a huge message).
std::string shown(std::string_view text, std::size_t limit = 60) {
    std::string out;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (out.size() >= limit && (c & 0xC0) != 0x80) { // never inside a UTF-8 sequence
            out += "...";
            break;
        }
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (c < 0x20 || c == 0x7F) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
            out += escaped;
        } else
            out += ch;
    }
    return out;
}

// The first control character of `text` (a byte below 0x20, or DEL), as its position from 1
// and its name; nullopt when there is none. A key or value of an experiment is one line of
// text: a newline in --set would end the assignment there and drop what follows.
std::optional<std::pair<std::size_t, std::string>> first_control_character(std::string_view text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c != 0x7F) continue;
        char code[8];
        std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
        const std::string name = c == '\n'   ? "a newline"
                                 : c == '\t' ? "a tab"
                                 : c == '\r' ? "a carriage return"
                                             : "a control character";
        return std::pair{i + 1, name + " (" + code + ")"};
    }
    return std::nullopt;
}

// A message of the parsers about `value`, with the value shown as above wherever it repeats it.
std::string about(std::string message, std::string_view value) {
    if (value.empty()) return message;
    const std::string replacement = shown(value);
    for (std::size_t at = message.find(value); at != std::string::npos;
         at = message.find(value, at + replacement.size()))
        message.replace(at, value.size(), replacement);
    return message;
}

// Where a key was given: "FILE:LINE: ", or "--set 'ASSIGNMENT': " when an override set it.
class locator {
  public:
    locator(std::string source, const std::vector<std::string>& overrides)
        : m_source(std::move(source)) {
        for (const std::string& assignment : overrides) {
            const std::string path = assignment.substr(0, assignment.find('='));
            const std::size_t dot = path.find('.');
            const std::size_t second = dot == std::string::npos ? dot : path.find('.', dot + 1);
            m_overridden[path.substr(0, second)] = assignment;
        }
    }
    [[nodiscard]] std::string at(const std::string& table, std::string_view key,
                                 const toml::source_region& region) const {
        if (const auto o = m_overridden.find(table + "." + std::string(key));
            o != m_overridden.end())
            return "--set '" + shown(o->second) + "': ";
        if (region.begin.line == 0) return m_source + ": ";
        return m_source + ":" + std::to_string(region.begin.line) + ": ";
    }

  private:
    std::string m_source;
    std::map<std::string, std::string> m_overridden; // "run.n" -> "run.n=128"
};

// The shortest text that reads back as `value` (0.1, not 0.10000000000000001): how the axes'
// generated values are shown and recorded; parsed, it is `value` exactly.
std::string number_text(double value) {
    char buffer[32];
    const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, written.ptr);
}

// A scalar TOML value as the text the registry parses; input_error for arrays and tables.
std::string scalar_text(const toml::node& node, const std::string& at, const std::string& key) {
    if (const auto* s = node.as_string()) {
        if (const auto control = first_control_character(s->get()))
            throw input_error(at + "key '" + key + "': the string \"" + shown(s->get()) +
                              "\" holds " + control->second + " at position " +
                              std::to_string(control->first) + "; a value is one line of text");
        return s->get();
    }
    if (const auto* i = node.as_integer()) return std::to_string(i->get());
    if (const auto* f = node.as_floating_point()) return number_text(f->get());
    if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
    throw input_error(at + "key '" + key + "': expected a string, number or boolean, got a " +
                      std::string(node.is_array() ? "list" : "table"));
}

// A string where the parameter is a number or a switch is refused: TOML has the types, and
// beta = "4" or causal = "no" is a slip the file's reader should see.
void require_type(const toml::node& node, const parameter_spec& spec, const std::string& at,
                  const std::string& key) {
    const auto* text = node.as_string();
    if (!text) return;
    const char* expected = spec.type == value_type::integer   ? "a whole number"
                           : spec.type == value_type::number  ? "a number"
                           : spec.type == value_type::switch_ ? "a boolean (true or false)"
                                                              : nullptr;
    if (!expected) return;
    throw input_error(at + "key '" + key + "': the string \"" + shown(text->get()) + "\" is not " +
                      expected + "; write the value without quotes");
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
        for (const toml::node& item : *list) {
            require_type(item, spec, at, key);
            values.push_back(scalar_text(item, at, key));
        }
    } else if (const auto* table = node.as_table()) {
        if (table->size() != 1)
            throw input_error(at + "key '" + key +
                              "': an axis table has exactly one of linspace, logspace, range");
        const auto entry = *table->begin(); // a proxy pair holding references
        const toml::key& generator_key = entry.first;
        const toml::node& generator = entry.second;
        const std::string generator_name(generator_key.str());
        const auto* arguments = generator.as_array();
        const std::string full = key + "." + shown(generator_name);
        if (!arguments)
            throw input_error(at + "key '" + full + "': expected a list like [first, last, count]");
        auto argument = [&](std::size_t i) -> const toml::node& { return *arguments->get(i); };
        if (generator_name == "linspace" || generator_name == "logspace") {
            if (arguments->size() != 3)
                throw input_error(at + "key '" + full + "': expected [first, last, count]");
            const double first = numeric(argument(0), at, full);
            const double last = numeric(argument(1), at, full);
            const std::int64_t count = whole(argument(2), at, full);
            std::vector<double> points;
            try {
                points = spaced_values(generator_name, first, last, count);
            } catch (const input_error& e) {
                throw input_error(at + "key '" + full + "': " + e.what());
            }
            for (const double x : points)
                values.push_back(spec.type == value_type::integer ? std::to_string(std::llround(x))
                                                                  : number_text(x));
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
        require_type(node, spec, at, key);
        values.push_back(scalar_text(node, at, key));
    }
    if (values.empty()) throw input_error(at + "key '" + key + "': the axis is empty");
    return values;
}

// Registry names with '-' accepted for '_' (the flags' spelling): "t-switch" is t_switch.
// "; did you mean 'TABLE.NAME'? " for a misspelt key of a table, as the command line
// suggests a flag ("; " alone when no valid key is close).
std::string suggestion(std::string_view key, std::string_view table,
                       const std::vector<std::string>& valid) {
    const std::string best = closest_name(key, valid);
    if (best.empty()) return "; ";
    return "; did you mean '" + (table.empty() ? best : std::string(table) + "." + best) + "'? ";
}

std::vector<std::string> registry_names() {
    std::vector<std::string> names;
    for (const auto& spec : parameter_registry())
        names.emplace_back(spec.name);
    return names;
}

std::string parameter_key(std::string_view key) {
    std::string name(key);
    for (char& c : name)
        if (c == '-') c = '_';
    return name;
}

// toml++ keeps a table's keys sorted; a sweep's axes follow the file's order (keys that only
// --set added come last, in name order).
std::vector<std::pair<const toml::key*, const toml::node*>>
in_file_order(const toml::table& table) {
    std::vector<std::pair<const toml::key*, const toml::node*>> ordered;
    for (const auto& [key, node] : table)
        ordered.emplace_back(&key, &node);
    auto line = [](const toml::key* key) {
        const auto l = key->source().begin.line;
        return l == 0 ? std::numeric_limits<std::uint32_t>::max() : l;
    };
    std::stable_sort(ordered.begin(), ordered.end(),
                     [&](const auto& a, const auto& b) { return line(a.first) < line(b.first); });
    return ordered;
}

void apply_override(toml::table& root, const std::string& assignment) {
    if (const auto control = first_control_character(assignment))
        throw input_error("--set '" + shown(assignment) + "': " + control->second +
                          " at position " + std::to_string(control->first) +
                          "; give one key=value per --set, on one line");
    const auto equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0)
        throw input_error("--set '" + shown(assignment) + "': expected key=value (e.g. run.n=128)");
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
        throw input_error("--set '" + shown(assignment) +
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

toml::table parse_with_overrides(const std::string& text, const std::string& source,
                                 const std::vector<std::string>& overrides) {
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& error) {
        const auto line = error.source().begin.line;
        throw input_error(source + (line ? ":" + std::to_string(line) : std::string()) + ": " +
                          std::string(error.description()));
    }
    for (const std::string& assignment : overrides)
        apply_override(root, assignment);
    return root;
}

} // namespace

sweep_file_axis file_axis(const sweep_axis& axis, value_type type, std::string description) {
    sweep_file_axis out;
    out.name = axis.name;
    out.description = std::move(description);
    out.labels = axis.values;
    if (type == value_type::integer) {
        std::vector<std::int64_t> values;
        for (const auto& v : axis.values)
            values.push_back(parse_integer(v, axis.name));
        out.values = std::move(values);
    } else if (type == value_type::number) {
        std::vector<double> values;
        for (const auto& v : axis.values)
            values.push_back(parse_number(v, axis.name));
        out.values = std::move(values);
    } else {
        out.values = axis.values;
    }
    return out;
}

std::vector<double> spaced_values(std::string_view generator, double first, double last,
                                  std::int64_t count) {
    if (count < 1 || count > 10000000) throw input_error("count must be between 1 and 1e7");
    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
        // first + i * step, with the last value exact.
        const double u = count == 1 ? 0.0 : double(i) / double(count - 1);
        double x = i + 1 == count ? last : first + u * (last - first);
        if (generator == "logspace") x = std::pow(10.0, x);
        values.push_back(x);
    }
    return values;
}

namespace {

experiment parse_experiment(const std::string& text, const std::string& source,
                            const std::vector<std::string>& overrides) {
    experiment e;
    e.source = source;
    e.text = text;
    e.overrides = overrides;
    const toml::table root = parse_with_overrides(text, source, overrides);
    const locator where(source, overrides);

    for (const auto& [key, node] : root) {
        const std::string name(key.str());
        if (name != "run" && name != "sweep")
            throw input_error(where.at("", "", key.source()) + "unknown table '" + shown(name) +
                              "'" + suggestion(name, "", {"run", "sweep"}) +
                              "valid tables: run, sweep");
        if (!node.is_table())
            throw input_error(where.at("", "", key.source()) + "'" + name + "' must be a table ([" +
                              name + "])");
    }
    if (!root.contains("run") && !root.contains("sweep"))
        throw input_error(source + ": the experiment has neither a [run] nor a [sweep] table; "
                                   "give at least one (see examples/beta_sweep.toml)");
    if (const toml::table* run = root["run"].as_table()) {
        std::map<std::string, std::string> spelled; // parameter -> the key that gave it
        for (const auto& [key, node] : *run) {
            const std::string at = where.at("run", key.str(), key.source());
            const std::string name = parameter_key(key.str());
            if (const auto first = spelled.find(name); first != spelled.end())
                throw input_error(at + "key 'run." + name + "' is given twice (as '" +
                                  first->second + "' and '" + shown(key.str()) + "'); keep one");
            spelled[name] = shown(key.str());
            if (name == "model") {
                const std::string value = scalar_text(node, at, "run.model");
                if (value != "particles")
                    throw input_error(at + "key 'run.model': '" + shown(value) +
                                      "' is not the particles' model; valid: particles, "
                                      "meanfield (nadyn sweep runs a meanfield experiment itself)");
                continue;
            }
            if (name == "positions") {
                const std::string value = scalar_text(node, at, "run.positions");
                if (value == "none")
                    e.positions = sweep_positions::none;
                else if (value == "final")
                    e.positions = sweep_positions::final;
                else if (value == "all")
                    e.positions = sweep_positions::all;
                else
                    throw input_error(at + "key 'run.positions': unknown value '" + shown(value) +
                                      "'; valid values: none, final, all");
                continue;
            }
            const parameter_spec* spec = find_parameter(name);
            if (!spec)
                throw input_error(at + "unknown key 'run." + shown(key.str()) + "'" +
                                  suggestion(key.str(), "run", registry_names()) +
                                  "valid keys: " + parameter_names());
            require_type(node, *spec, at, "run." + name);
            std::string value;
            if (const auto* times = node.as_array(); times && name == "frame_times") {
                // frame_times = [0.5, 1, 2.5]: the flag's comma-separated list.
                for (const toml::node& item : *times) {
                    if (!value.empty()) value.push_back(','); // piecewise: GCC 12's -Wrestrict
                    value.append(number_text(numeric(item, at, "run.frame_times")));
                }
            } else {
                value = scalar_text(node, at, "run." + name);
            }
            try {
                spec->assign(e.base, value);
            } catch (const input_error& error) {
                throw input_error(at + "key 'run." + name + "': " + about(error.what(), value));
            }
        }
    }
    if (const toml::table* sweep = root["sweep"].as_table()) {
        for (const auto& [key_pointer, node_pointer] : in_file_order(*sweep)) {
            const toml::key& key = *key_pointer;
            const toml::node& node = *node_pointer;
            const std::string at = where.at("sweep", key.str(), key.source());
            const std::string name = parameter_key(key.str());
            const parameter_spec* spec = find_parameter(name);
            if (!spec)
                throw input_error(at + "unknown sweep axis 'sweep." + shown(key.str()) + "'" +
                                  suggestion(key.str(), "sweep", registry_names()) +
                                  "valid keys: " + parameter_names());
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
                    // A seed's check reads the seed alone, so each value is checked here
                    // and the runs' validation below need not visit every seed.
                    if (is_seed_parameter(name) && spec->check) spec->check(probe);
                } catch (const input_error& error) {
                    throw input_error(at + "key 'sweep." + name +
                                      "': " + about(error.what(), value));
                }
            }
            e.axes.push_back(std::move(axis));
        }
    }
    // Every run must be valid. A run's validity does not depend on its seeds beyond their
    // own checks (above), so each combination of the other axes is checked once: a sweep
    // over 10^7 seeds is validated at once.
    std::size_t runs = 1;
    for (const auto& axis : e.axes) {
        if (axis.values.size() > std::size_t{100000000} / runs)
            throw input_error(source + ": the sweep has more than 1e8 runs");
        runs *= axis.values.size();
    }
    const auto not_seed = [](std::string_view axis) { return !is_seed_parameter(axis); };
    const double available = available_memory_bytes();
    e.for_each_combination(not_seed, [&](const run_config& c, std::size_t index, std::size_t) {
        try {
            c.validate(available);
        } catch (const input_error& error) {
            throw input_error(source + ": run " + std::to_string(index) + " (" + e.label(index) +
                              "): " + error.what());
        }
    });
    return e;
}

} // namespace

experiment experiment::parse(const std::string& text, const std::string& source,
                             const std::vector<std::string>& overrides) {
    try {
        return parse_experiment(text, source, overrides);
    } catch (const input_error& error) {
        // One line of bounded length, whatever a parser quoted.
        throw input_error(shown(error.what(), 2000));
    }
}

std::string read_experiment_text(const std::string& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status))
        throw input_error("cannot read the experiment file '" + shown(path) +
                          "' (missing or not readable)");
    if (!std::filesystem::is_regular_file(status))
        throw input_error("the experiment file '" + shown(path) +
                          "' is not a regular file (a directory, a device or a pipe); give a "
                          "TOML file such as examples/beta_sweep.toml");
    std::ifstream file(path, std::ios::binary);
    if (!file)
        throw input_error("cannot read the experiment file '" + shown(path) +
                          "' (missing or not readable)");
    std::string text(max_experiment_bytes + 1, '\0');
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(file.gcount()));
    if (text.size() > max_experiment_bytes)
        throw input_error("the experiment file '" + shown(path) +
                          "' is larger than 1 MiB; an experiment is a short TOML file");
    return text;
}

experiment experiment::load(const std::string& path, const std::vector<std::string>& overrides) {
    return parse(read_experiment_text(path), path, overrides);
}

std::string experiment_model(const std::string& text, const std::string& source,
                             const std::vector<std::string>& overrides) {
    try {
        const toml::table root = parse_with_overrides(text, source, overrides);
        const toml::node* model = root.at_path("run.model").node();
        if (!model) return "particles";
        const std::string value = scalar_text(*model, source + ": ", "run.model");
        if (value != "particles" && value != "meanfield")
            throw input_error(source + ": key 'run.model': unknown model '" + shown(value) +
                              "'; valid: particles, meanfield");
        return value;
    } catch (const input_error& error) {
        throw input_error(shown(error.what(), 2000));
    }
}

experiment_tables
parse_experiment_tables(const std::string& text, const std::string& source,
                        const std::vector<std::string>& overrides,
                        const std::function<std::optional<value_type>(std::string_view)>& key_type,
                        const std::string& valid_keys) {
    try {
        const toml::table root = parse_with_overrides(text, source, overrides);
        const locator where(source, overrides);
        experiment_tables tables;
        for (const auto& [key, node] : root) {
            const std::string name(key.str());
            if (name != "run" && name != "sweep")
                throw input_error(where.at("", "", key.source()) + "unknown table '" + shown(name) +
                                  "'" + suggestion(name, "", {"run", "sweep"}) +
                                  "valid tables: run, sweep");
        }
        auto typed = [&](const std::string& at, const std::string& table,
                         std::string_view key) -> parameter_spec {
            const std::string name = parameter_key(key);
            const std::optional<value_type> type = key_type(name);
            if (!type) {
                std::vector<std::string> names;
                std::stringstream list(valid_keys);
                for (std::string item; std::getline(list, item, ',');)
                    names.push_back(item.substr(item.find_first_not_of(' ')));
                throw input_error(at + "unknown key '" + table + "." + shown(key) + "'" +
                                  suggestion(key, table, names) + "valid keys: " + valid_keys);
            }
            parameter_spec spec{};
            spec.type = *type;
            return spec;
        };
        if (const toml::table* run = root["run"].as_table())
            for (const auto& [key, node] : *run) {
                const std::string at = where.at("run", key.str(), key.source());
                const std::string name = parameter_key(key.str());
                if (name == "model") continue;
                const parameter_spec spec = typed(at, "run", key.str());
                require_type(node, spec, at, "run." + name);
                for (const auto& given : tables.run)
                    if (given.first == name)
                        throw input_error(at + "key 'run." + name + "' is given twice; keep one");
                tables.run.emplace_back(name, scalar_text(node, at, "run." + name));
            }
        if (const toml::table* sweep = root["sweep"].as_table()) {
            for (const auto& [key, node] : in_file_order(*sweep)) {
                const std::string at = where.at("sweep", key->str(), key->source());
                const std::string name = parameter_key(key->str());
                const parameter_spec spec = typed(at, "sweep", key->str());
                for (const auto& axis : tables.axes)
                    if (axis.name == name)
                        throw input_error(at + "key 'sweep." + name + "': the axis is given twice");
                tables.axes.push_back({name, axis_values(*node, at, "sweep." + name, spec)});
            }
        }
        return tables;
    } catch (const input_error& error) {
        throw input_error(shown(error.what(), 2000));
    }
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

std::size_t experiment::find_point(std::string_view point) const {
    auto choices = [&] {
        std::string text;
        for (const auto& axis : axes) {
            text += (text.empty() ? "" : "; ") + axis.name + " in {";
            for (std::size_t v = 0; v < axis.values.size(); ++v)
                text += (v ? ", " : "") + axis.values[v];
            text += "}";
        }
        return (text.empty() ? std::string("no axes") : text) + "; or a run's index, 0 to " +
               std::to_string(size() - 1);
    };
    const std::string text(point);
    if (text.empty()) {
        if (size() == 1) return 0;
        throw input_error("the sweep has " + std::to_string(size()) +
                          " runs: pass --point axis=value,... to pick one; " + choices());
    }
    if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        errno = 0;
        const unsigned long long index = std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE || index >= size())
            throw input_error("--point " + text + ": the sweep has " + std::to_string(size()) +
                              " runs; " + choices());
        return static_cast<std::size_t>(index);
    }
    std::vector<std::size_t> chosen(axes.size(), SIZE_MAX);
    std::stringstream items(text);
    std::string item;
    while (std::getline(items, item, ',')) {
        if (item.empty()) continue;
        const auto equals = item.find('=');
        const std::string name = item.substr(0, equals);
        const auto axis = std::find_if(axes.begin(), axes.end(),
                                       [&](const sweep_axis& a) { return a.name == name; });
        if (equals == std::string::npos || axis == axes.end())
            throw input_error("--point: '" + item + "' is not axis=value; the axes: " + choices());
        const std::string value = item.substr(equals + 1);
        std::size_t found = SIZE_MAX;
        for (std::size_t v = 0; v < axis->values.size() && found == SIZE_MAX; ++v) {
            if (axis->values[v] == value) found = v;
            char* end = nullptr;
            const double a = std::strtod(value.c_str(), &end);
            const bool number = !value.empty() && *end == '\0';
            const double b = std::strtod(axis->values[v].c_str(), &end);
            if (number && *end == '\0' && a == b) found = v;
        }
        if (found == SIZE_MAX)
            throw input_error("--point: " + name + " = " + value + " is not a value of the axis; " +
                              choices());
        chosen[std::size_t(axis - axes.begin())] = found;
    }
    for (std::size_t a = 0; a < axes.size(); ++a) {
        if (chosen[a] != SIZE_MAX) continue;
        if (axes[a].values.size() != 1)
            throw input_error("--point names no value of the axis " + axes[a].name + "; " +
                              choices());
        chosen[a] = 0;
    }
    std::size_t index = 0;
    for (std::size_t a = 0; a < axes.size(); ++a)
        index = index * axes[a].values.size() + chosen[a];
    return index;
}

std::vector<std::string> experiment::warnings() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < size(); ++i) {
        const run_config c = point(i);
        const integration_settings settings = c.resolved_integration();
        for (std::string& warning :
             configuration_warnings(c.scheme_id, settings.T, settings.dt,
                                    c.scheme_settings().t_switch, settings.kind, c.beta))
            if (std::find(out.begin(), out.end(), warning) == out.end())
                out.push_back(std::move(warning));
    }
    return out;
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
    // What the readers of the three files depend on (the seed only draws what is not read),
    // and the scheme, which may not run with what the files hold (check_attention_output).
    static constexpr std::string_view inputs[] = {
        "init", "n", "d", "r0", "norm", "weights", "heads", "value", "ln_params", "scheme"};
    const auto is_input = [](std::string_view axis) {
        return std::find(std::begin(inputs), std::end(inputs), axis) != std::end(inputs);
    };
    for_each_combination(
        is_input, [&](const run_config& combination, std::size_t index, std::size_t) {
            try {
                run_config c = combination;
                read_input_files(c);
                if (c.init.kind == initial_kind::file)
                    (void)make_initial(c.init, c.n, c.d, c.seed_for_init(), c.r0, c.norm);
                attention_weights weights;
                if (c.weights.family == weights_family::file)
                    weights = make_weights(c.weights, c.d, c.seed_for_weights(),
                                           c.weights.per_layer ? 0 : -1);
                layer_norm_affine affine;
                if (!c.ln_params.empty()) affine = read_layer_norm_affine(c.ln_params, c.d);
                // V = 0 or a zero gain come from these files; drawn weights are left to the
                // run (the identity's are the default attention_weights).
                const bool known_weights = c.weights.family == weights_family::file ||
                                           (c.weights.family == weights_family::identity &&
                                            c.weights.value == value_family::same);
                if (known_weights &&
                    (c.weights.family == weights_family::file || !affine.identity()))
                    check_attention_output(c, weights, affine);
            } catch (const input_error& error) {
                throw input_error(source + ": run " + std::to_string(index) + " (" + label(index) +
                                  "): " + error.what());
            }
        });
}

std::vector<std::pair<std::string, std::string>> experiment::input_file_hashes() const {
    static constexpr std::string_view inputs[] = {"init", "weights", "ln_params"};
    const auto is_input = [](std::string_view axis) {
        return std::find(std::begin(inputs), std::end(inputs), axis) != std::end(inputs);
    };
    std::map<std::string, std::string> hashes;
    for_each_combination(is_input, [&](const run_config& c, std::size_t, std::size_t) {
        for (const input_file& file : input_files(c))
            if (!hashes.contains(file.path)) hashes[file.path] = input_file_sha256(file.path);
    });
    return {hashes.begin(), hashes.end()};
}

std::string experiment::digest() const {
    std::uint64_t hash = 14695981039346656037ULL;
    const auto add = [&](std::string_view part) {
        for (const char c : part) {
            hash ^= static_cast<unsigned char>(c);
            hash *= 1099511628211ULL;
        }
        hash ^= 0xFF; // a separator no text holds as a byte of its own after the hash step
        hash *= 1099511628211ULL;
    };
    add(text);
    for (const std::string& assignment : overrides)
        add(assignment);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    return hex;
}

} // namespace nadyn
