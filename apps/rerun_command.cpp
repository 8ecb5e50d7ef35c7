// nadyn rerun FILE --out NEW: the run recorded in FILE, again, from the file alone.
#include "commands.hpp"

#include "nadyn/error.hpp"
#include "nadyn/run.hpp"

#include <cstdio>
#include <filesystem>

namespace nadyn::cli {

namespace {

struct rerun_options {
    std::string path, out;
    bool force = false;
};

} // namespace

command add_rerun(CLI::App& app) {
    auto o = std::make_shared<rerun_options>();
    app.add_option("file", o->path, "Trajectory file written by nadyn simulate")->required();
    app.add_option("--out", o->out, "The new trajectory file")->required();
    app.add_flag("--force", o->force, "Overwrite an existing output file");
    return [o]() {
        if (std::filesystem::exists(o->out) && std::filesystem::exists(o->path) &&
            std::filesystem::equivalent(o->out, o->path))
            throw input_error("--out must differ from the file being rerun");
        simulation run = simulation::from_file(o->path);
        if (!o->force && std::filesystem::exists(o->out))
            throw input_error("output file '" + o->out +
                              "' already exists; pass --force to overwrite it");
        const run_summary summary = run.run_to_file(o->out, o->force);
        std::printf("reran %s: %zu frames, t = %g, mean_cos = %.12g, %.3f s\nwrote %s\n",
                    o->path.c_str(), summary.frames, summary.last_time, summary.last.mean_cos,
                    summary.wall_seconds, o->out.c_str());
        return 0;
    };
}

} // namespace nadyn::cli
