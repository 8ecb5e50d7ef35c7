// nadyn table WHICH: a study (studies/<name>/) or `all` (the studies the manifest
// studies/paper.toml lists, the figure data, the figures and results/README.md), all run in
// Python (python/nadyn/study.py, python/nadyn/paper.py). This command only checks its flags
// and execs `PYTHON -m nadyn.study table ...`: no process of nadyn remains to outlive or to
// forward signals to, and it knows no study and no source path.
#include "commands.hpp"

#include "nadyn/model/error.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace nadyn::cli {

namespace {

struct table_options {
    std::string which;
    std::string format = "md";
    std::string out_dir = "results";
    std::string python = "/usr/bin/python3";
    bool no_figures = false;
    bool quick = false;
    bool verbose = false;
    bool force = false;
    std::vector<std::string> sets;
    std::string studies; // empty: the Python package's default (studies/ beside python/)
};

// python/ of the nearest ancestor of this program's directory that holds the package
// (python/nadyn/study.py): a build tree inside the source tree (build/bin/nadyn, or
// build-*/bin/nadyn) finds the source tree's package. Failing that, python/ of the source
// tree this program was configured from (NADYN_SOURCE_TREE, set by CMakeLists.txt) when it
// still holds the package: a build tree outside the source tree (cmake -B /elsewhere), or a
// copy of the program. Empty when neither does (an installed nadyn whose source tree is gone:
// the package is then where Python looks, PYTHONPATH or site-packages).
std::string package_beside(const std::filesystem::path& program) {
    std::error_code error;
    auto holds_package = [&error](const std::filesystem::path& python) {
        return std::filesystem::is_regular_file(python / "nadyn" / "study.py", error);
    };
    for (auto dir = program.parent_path(); !dir.empty(); dir = dir.parent_path()) {
        if (holds_package(dir / "python")) return (dir / "python").string();
        if (dir == dir.root_path()) break;
    }
#if defined(NADYN_SOURCE_TREE)
    if (const std::filesystem::path python = std::filesystem::path(NADYN_SOURCE_TREE) / "python";
        holds_package(python))
        return python.string();
#endif
    return {};
}

// Replaces this process by the study runner; returns only by throwing.
[[noreturn]] void exec_study_runner(const table_options& o) {
    std::error_code error;
    const std::filesystem::path self = std::filesystem::canonical("/proc/self/exe", error);
    // `--key=value`: a value that starts with '-' stays a value.
    std::vector<std::string> args{o.python,
                                  "-m",
                                  "nadyn.study",
                                  "table",
                                  o.which,
                                  "--format=" + o.format,
                                  "--out-dir=" + o.out_dir,
                                  "--python=" + o.python,
                                  "--invocation=" + invocation};
    if (!error) args.push_back("--nadyn=" + self.string());
    if (!o.studies.empty()) args.push_back("--studies=" + o.studies);
    for (const auto& setting : o.sets)
        args.push_back("--set=" + setting);
    if (o.no_figures) args.emplace_back("--no-figures");
    if (o.quick) args.emplace_back("--quick");
    if (o.verbose) args.emplace_back("--verbose");
    if (o.force) args.emplace_back("--force");

    // This tree's package first, before an inherited PYTHONPATH (which may name another
    // checkout's): the studies run with the Python half of this very program.
    if (const std::string package = error ? std::string() : package_beside(self);
        !package.empty()) {
        const char* inherited = std::getenv("PYTHONPATH");
        const std::string path = inherited && *inherited ? package + ":" + inherited : package;
        ::setenv("PYTHONPATH", path.c_str(), 1);
    }
    std::vector<char*> argv;
    for (auto& arg : args)
        argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    ::execvp(argv[0], argv.data());
    throw io_error("cannot run '" + o.python + "' (nadyn table runs its studies in Python; " +
                   "--python names another): " + std::strerror(errno));
}

} // namespace

command add_table(CLI::App& app) {
    auto o = std::make_shared<table_options>();
    app.add_option("which", o->which,
                   "all (the studies of the folder's paper.toml, and results/README.md), or a "
                   "study: a folder of --studies, or the name the manifest gives it")
        ->required();
    app.add_option("--format", o->format, "md | csv (a study's table)")->capture_default_str();
    app.add_option("--out-dir", o->out_dir, "Where the tables, data and figures go")
        ->capture_default_str();
    app.add_flag("--no-figures", o->no_figures, "Skip the figures (the studies' and `all`'s)");
    app.add_flag("--force", o->force,
                 "Overwrite the files an earlier run left in --out-dir (without it, a table, "
                 "sweep file or figure that exists is refused before anything runs)");
    app.add_option("--python", o->python,
                   "The Python that runs the studies (python3 -m nadyn.study; numpy, pandas, "
                   "xarray, h5py, matplotlib)")
        ->capture_default_str();

    app.footer("Examples:\n"
               "  nadyn table initial                  # gamma'(0): closed form, ODE, particles\n"
               "  nadyn table terminal --format csv > terminal.csv\n"
               "  nadyn table random --set sweep.seed=[1]   # the random-weights study, one seed\n"
               "  nadyn table unselectable --set seeds=[1,2,3]   # a study without a sweep\n"
               "  nadyn table all --out-dir results --force   # every table and figure, replaced\n"
               "  nadyn table clustering_time --set sweep.seed.range=[1,2]   # a study");

    app.add_option("--set", o->sets,
                   "A study: override a key of its experiment, as for nadyn sweep "
                   "(sweep.seed.range=[1,2]; repeatable)");
    app.add_flag("--quick", o->quick,
                 "A study: its quick form (the QUICK settings of its reduce.py, before --set)");
    app.add_option("--studies", o->studies,
                   "The folder of studies and its paper.toml (default: studies/ beside the "
                   "Python package nadyn)");
    app.add_flag("--verbose", o->verbose, "The Python traceback under an error in a study's code");

    return [o]() -> int { exec_study_runner(*o); };
}

} // namespace nadyn::cli
