// nadyn rerun FILE --out NEW: the run recorded in FILE, again, from the file alone.
#include "commands.hpp"

#include "nadyn/error.hpp"
#include "nadyn/run.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace nadyn::cli {

namespace {

// This command's stop token: SIGINT/SIGTERM set it, the run polls it before every step,
// writes the current state as a last frame and marks the file `interrupted` (as simulate).
std::atomic<bool> rerun_stop_requested{false};

extern "C" void request_rerun_stop(int) {
    rerun_stop_requested.store(true);
}

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
        run.set_warning_sink([](const std::string& warning) { std::cerr << warning << '\n'; });
        std::signal(SIGINT, request_rerun_stop);
        std::signal(SIGTERM, request_rerun_stop);
        const run_summary summary = run.run_to_file(o->out, o->force, &rerun_stop_requested);
        const bool interrupted = summary.outcome == integration_outcome::interrupted;
        std::printf("%s %s: %zu frames, t = %g, mean_cos = %.12g, %.3f s\n%s %s\n",
                    interrupted ? "interrupted rerun of" : "reran", o->path.c_str(), summary.frames,
                    summary.last_time, summary.last.mean_cos, summary.wall_seconds,
                    interrupted ? "kept the frames in" : "wrote", o->out.c_str());
        return interrupted ? 130 : 0;
    };
}

} // namespace nadyn::cli
