// nadyn rerun FILE --out NEW: the run recorded in FILE, again, from the file alone.
#include "commands.hpp"
#include "stop_signal.hpp"

#include "nadyn/experiment/run.hpp"
#include "nadyn/experiment/sweep.hpp"
#include "nadyn/files/child_reader.hpp"
#include "nadyn/model/error.hpp"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace nadyn::cli {

namespace {

struct rerun_options {
    std::string path, out;
    bool force = false;
    std::string point;
};

} // namespace

command add_rerun(CLI::App& app) {
    auto o = std::make_shared<rerun_options>();
    app.add_option("file", o->path, "Trajectory file written by nadyn simulate")->required();
    app.add_option("--out", o->out, "The new trajectory file")->required();
    app.add_flag("--force", o->force, "Overwrite an existing output file");
    app.add_option("--point", o->point,
                   "For a sweep file: the run to redo as a single-run file, as axis=value,... "
                   "(every axis with more than one value) or its index in the sweep's row-major "
                   "order; not needed when the sweep has one run");
    app.footer(
        "Examples:\n"
        "  nadyn rerun run.h5 --out again.h5          # bitwise the same trajectory\n"
        "  nadyn rerun beta.h5 --point beta=4,seed=1 --out p.h5  # one run of a sweep, alone\n"
        "  nadyn rerun beta.h5 --point 5 --out p5.h5  # the same by its index");
    return [o]() {
        // libhdf5 crashes on some damaged metadata: the same reads, and a walk of every
        // object, first in a child process, whose crash is then one line (child_reader.hpp).
        read_in_child(o->path, [o] {
            if (is_sweep_file(o->path))
                (void)sweep_experiment(o->path);
            else
                (void)simulation::from_file(o->path);
            verify_readable(o->path);
            return 0;
        });
        if (is_sweep_file(o->path)) {
            const experiment e = sweep_experiment(o->path);
            const std::size_t index = e.find_point(o->point);
            run_config c = e.point(index);
            c.command_line = invocation;
            check_output_path(o->out, o->force);
            simulation run(c);
            const run_summary summary = run.run_to_file(o->out, true);
            std::printf("reran %s (%s): %zu frames, t = %g, mean_cos = %.12g, %.3f s\nwrote %s\n",
                        o->path.c_str(), e.label(index).c_str(), summary.frames, summary.last_time,
                        summary.last.mean_cos, summary.wall_seconds, o->out.c_str());
            return 0;
        }
        if (!o->point.empty())
            throw input_error("--point selects a run of a sweep file; '" + o->path +
                              "' is a single run");
        if (std::filesystem::exists(o->out) && std::filesystem::exists(o->path) &&
            std::filesystem::equivalent(o->out, o->path))
            throw input_error("--out must differ from the file being rerun");
        simulation run = simulation::from_file(o->path);
        if (!o->force && std::filesystem::exists(o->out))
            throw input_error("output file '" + o->out +
                              "' already exists; pass --force to overwrite it");
        run.set_warning_sink(
            [](const std::string& warning) { std::cerr << "nadyn: " << warning << '\n'; });
        const run_summary summary = run.run_to_file(o->out, o->force, install_stop_signals());
        const bool interrupted = summary.outcome == integration_outcome::interrupted;
        std::printf("%s %s: %zu frames, t = %g, mean_cos = %.12g, %.3f s\n%s %s\n",
                    interrupted ? "interrupted rerun of" : "reran", o->path.c_str(), summary.frames,
                    summary.last_time, summary.last.mean_cos, summary.wall_seconds,
                    interrupted ? "kept the frames in" : "wrote", o->out.c_str());
        return interrupted ? stopped_status() : 0;
    };
}

} // namespace nadyn::cli
