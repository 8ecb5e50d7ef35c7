// Every bad input to the nadyn command line is refused the same way: exit status 2, one
// line on stderr naming the problem, nothing on stdout, and no output file created (an
// existing one left byte for byte and in its modification time as it was).
#include "cli_support.hpp"

#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

namespace {

using namespace nadyn_test;

// One invocation that must be refused.
struct bad_case {
    std::vector<std::string> args;     // after `simulate --out RUN/x.h5 --quiet`
    std::vector<std::string> expected; // substrings of the one stderr line
    bool base_horizon = true;          // add `--T 0.1` (not when the case sets T itself)
};

// A per-case layout: DIR/inputs holds files the case prepared, DIR/run is the working
// directory and the home of the (never to be created) output, so "nothing created" is
// "DIR/run is empty".
struct case_dirs {
    std::string root, inputs, run;
};

case_dirs make_dirs(const std::string& name) {
    case_dirs dirs;
    dirs.root = scratch_dir("bad_input/" + name);
    dirs.inputs = dirs.root + "/inputs";
    dirs.run = dirs.root + "/run";
    fs::create_directories(dirs.inputs);
    fs::create_directories(dirs.run);
    return dirs;
}

// The checks shared by every refusal.
void check_refused(const run_result& r, const std::vector<std::string>& expected) {
    CHECK(r.status == 2);
    CHECK(r.signal == 0);
    CHECK(r.out.empty());
    // Exactly one line, ending in a newline, prefixed with the program name.
    CHECK(line_count(r.err) == 1);
    CHECK(!r.err.empty());
    if (!r.err.empty()) CHECK(r.err.back() == '\n');
    CHECK(r.err.rfind("nadyn: ", 0) == 0);
    for (const auto& part : expected) {
        INFO("expected in stderr: " << part);
        CHECK(contains(r.err, part));
    }
}

void check_simulate_refused(const std::string& name, const bad_case& c) {
    const case_dirs dirs = make_dirs(name);
    std::vector<std::string> args{"simulate", "--out", dirs.run + "/x.h5", "--quiet"};
    if (c.base_horizon) args.insert(args.end(), {"--T", "0.1"});
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string shown;
    for (const auto& a : args)
        shown += " " + a;
    INFO("nadyn" << shown);
    const run_result r = run_nadyn(args, in_dir(dirs.run));
    INFO("stderr: " << r.err);
    INFO("stdout: " << r.out);
    check_refused(r, c.expected);
    CHECK(list_files(dirs.run).empty());
}

void check_all(const std::string& group, const std::vector<bad_case>& cases) {
    for (std::size_t i = 0; i < cases.size(); ++i)
        check_simulate_refused(group + "_" + std::to_string(i), cases[i]);
}

// The valid names, as each message lists them.
const std::string scheme_list = "post-ln, pre-ln, mix-ln, peri-ln, ngpt, sqrt-scaling";
const std::string integrator_list = "rk4, dopri5, euler, layers";
const std::string init_list = "uniform, orthogonal, cap:EPS, caps:K,EPS[,DELTA], "
                              "perturbed:K,EPS, vonmises:Q,KAPPA, noise:EPS[,KMAX], file:PATH";
const std::string weights_list = "identity, gaussian, orthogonal, gpt2, symmetric, "
                                 "interaction-product, interaction-symmetric, interaction-gpt2 "
                                 "(each also NAME-per-layer), random, random-per-layer, file:PATH";

// Row-major values 0.1, 0.2, ... so no row is zero.
std::vector<double> ramp(std::size_t count) {
    std::vector<double> values(count);
    for (std::size_t i = 0; i < count; ++i)
        values[i] = 0.1 * static_cast<double>(i + 1);
    return values;
}

} // namespace

TEST_CASE("unknown names are refused with the valid choices") {
    check_all("names",
              {
                  {{"--scheme", "layer-norm"}, {"'layer-norm'", scheme_list}},
                  {{"--scheme", "PERI-LN"}, {"'PERI-LN'", scheme_list}},
                  {{"--integrator", "rk45"}, {"'rk45'", integrator_list}},
                  {{"--init", "sphere"}, {"unknown init 'sphere'", init_list}},
                  {{"--init", "file:"}, {"'file:'", init_list}},
                  {{"--weights", "xavier"}, {"unknown weights 'xavier'", weights_list}},
                  {{"--value", "tied"}, {"unknown value 'tied'", "same, identity, minus-identity"}},
                  {{"--head-combine", "max"}, {"unknown head-combine 'max'", "mean, sum"}},
                  {{"--weights", "file:"}, {"'file:'", weights_list}},
                  {{"--positions", "bogus"}, {"'bogus'", "all, none"}},
                  {{"--precision", "half"}, {"unknown precision 'half'", "double, float"}},
              });
}

TEST_CASE("sizes out of range are refused") {
    check_all("sizes", {
                           {{"--n", "0"}, {"n must be at least 1", "got 0"}},
                           {{"--n", "-3"}, {"n must be at least 1", "got -3"}},
                           {{"--d", "1"}, {"d must be at least 2", "got 1"}},
                           {{"--d", "0"}, {"d must be at least 2", "got 0"}},
                           {{"--heads", "0"}, {"heads must be a whole number from 1", "got 0"}},
                       });
}

TEST_CASE("numbers that are not finite or out of range are refused") {
    check_all(
        "numbers",
        {
            {{"--beta", "nan"}, {"beta must be a finite number", "nan"}},
            {{"--beta", "inf"}, {"beta must be a finite number", "inf"}},
            {{"--beta", "-inf"}, {"beta must be a finite number", "-inf"}},
            {{"--T", "nan"}, {"T must be a finite number >= 0", "nan"}, false},
            {{"--T", "inf"}, {"T must be a finite number >= 0", "inf"}, false},
            {{"--T", "-1"}, {"T must be a finite number >= 0", "got -1"}, false},
            {{"--dt", "nan"}, {"dt must be a finite number > 0", "nan"}},
            {{"--dt", "inf"}, {"dt must be a finite number > 0", "inf"}},
            {{"--dt", "0"}, {"dt must be a finite number > 0", "got 0"}},
            {{"--dt", "-0.5"}, {"dt must be a finite number > 0", "got -0.5"}},
            {{"--r0", "0"}, {"r0 must be a finite number > 0", "got 0"}},
            {{"--r0", "-1"}, {"r0 must be a finite number > 0", "got -1"}},
            {{"--r0", "inf"}, {"r0 must be a finite number > 0", "inf"}},
            {{"--alpha", "0"}, {"alpha must be a finite number > 0", "got 0"}},
            {{"--alpha", "-2"}, {"alpha must be a finite number > 0", "got -2"}},
            {{"--init", "cap:0"}, {"'cap:0'", "0 < EPS <= pi"}},
            {{"--init", "cap:abc"}, {"'cap:abc'", "0 < EPS <= pi"}},
            {{"--init", "cap:-0.1"}, {"'cap:-0.1'", "0 < EPS <= pi"}},
            {{"--init", "cap:4"}, {"'cap:4'", "0 < EPS <= pi"}},
            {{"--init", "cap:0.1x"}, {"'cap:0.1x'", "0 < EPS <= pi"}},
            {{"--init", "perturbed:0,0.5"}, {"'perturbed:0,0.5'", "perturbed:K,EPS", "K >= 1"}},
            {{"--init", "perturbed:3,2"}, {"'perturbed:3,2'", "-1 <= EPS <= 1"}},
            {{"--init", "vonmises:0,1"}, {"'vonmises:0,1'", "vonmises:Q,KAPPA", "Q >= 1"}},
            {{"--init", "vonmises:2,-1"}, {"'vonmises:2,-1'", "KAPPA >= 0"}},
            {{"--init", "vonmises:2,20", "--norm", "layernorm"}, {"'vonmises:2,20'", "layernorm"}},
            {{"--rtol", "0"}, {"rtol must be a finite number > 0", "got 0"}},
            {{"--atol", "-1"}, {"atol must be a finite number >= 0", "got -1"}},
            {{"--cluster-eps", "0"}, {"cluster-eps must be in (0, 2]", "got 0"}},
            {{"--cluster-eps", "3"}, {"cluster-eps must be in (0, 2]", "got 3"}},
            {{"--threads", "-1"}, {"threads must be >= 0", "got -1"}},
            {{"--every", "-1"}, {"every must be at least 1", "got -1"}},
            {{"--every", "0"}, {"every must be at least 1", "got 0"}},
            // -1 was once the "not given" sentinel of --t-switch and slipped through.
            {{"--t-switch", "-1"}, {"t-switch must be a finite number >= 0", "got -1"}},
            {{"--t-switch", "-2"}, {"t-switch must be a finite number >= 0", "got -2"}},
            {{"--t-switch", "nan"}, {"t-switch must be a finite number >= 0", "nan"}},
            // A negative seed used to wrap silently to 2^64 - 1.
            {{"--seed", "-1"}, {"--seed", "'-1'", "whole number >= 0"}},
            {{"--seed", "18446744073709551616"}, {"--seed", "out of range"}},
        });
}

TEST_CASE("combinations that cannot work are refused") {
    check_all("combinations",
              {
                  {{"--init", "orthogonal", "--n", "5", "--d", "3"},
                   {"init 'orthogonal' needs n <= d", "n = 5, d = 3"}},
                  {{"--layer-time", "0"}, {"layer-time must be a finite number > 0", "got 0"}},
                  {{"--layer-time", "-1", "--weights", "gaussian-per-layer"},
                   {"layer-time must be a finite number > 0", "got -1"}},
              });
}

TEST_CASE("bad frame times are refused (--T 0.1)") {
    check_all("frame_times",
              {
                  {{"--frame-times", "0.05,x"}, {"--frame-times", "must be a number, got 'x'"}},
                  {{"--frame-times", "linspace:0,1"}, {"linspace takes first,last,count"}},
                  {{"--frame-times", "logspace:0,1,0"}, {"count must be between 1 and 1e7"}},
                  {{"--frame-times", "0.05,0.2"}, {"frame-times must lie in [0, T]", "got 0.2"}},
                  {{"--frame-times", "-0.01"}, {"frame-times must lie in [0, T]", "got -0.01"}},
                  {{"--frame-times", "0.05", "--every", "2"},
                   {"frame-times and every cannot be combined"}},
                  {{"--frame-times", "0.055", "--integrator", "layers"},
                   {"is not a whole number of layers", "nearest valid times are 0.05"}},
              });
}

TEST_CASE("bad init files are refused before any output exists") {
    const case_dirs dirs = make_dirs("init_files");
    const std::string in = dirs.inputs;
    write_text(in + "/text.h5", "theta0 = [[1, 0, 0]]\n");
    write_h5(in + "/no_theta0.h5", {{"theta", {6, 3}, ramp(18)}});
    write_h5(in + "/wrong_shape.h5", {{"theta0", {6, 4}, ramp(24)}});
    write_h5(in + "/wrong_rows.h5", {{"theta0", {5, 3}, ramp(15)}});
    write_h5(in + "/one_dim.h5", {{"theta0", {18}, ramp(18)}});
    auto zero_row = ramp(18);
    for (std::size_t a = 0; a < 3; ++a)
        zero_row[2 * 3 + a] = 0.0;
    write_h5(in + "/zero_row.h5", {{"theta0", {6, 3}, zero_row}});
    write_h5(in + "/bad_r0.h5", {{"theta0", {6, 3}, ramp(18)}, {"r0", {5}, ramp(5)}});
    auto negative_r0 = ramp(6);
    negative_r0[4] = -1.0;
    write_h5(in + "/negative_r0.h5", {{"theta0", {6, 3}, ramp(18)}, {"r0", {6}, negative_r0}});

    auto infinite = ramp(18);
    infinite[1 * 3 + 0] = std::numeric_limits<double>::infinity();
    write_h5(in + "/inf_theta0.h5", {{"theta0", {6, 3}, infinite}});
    auto nan_r0 = ramp(6);
    nan_r0[3] = std::numeric_limits<double>::quiet_NaN();
    write_h5(in + "/nan_r0.h5", {{"theta0", {6, 3}, ramp(18)}, {"r0", {6}, nan_r0}});
    {
        // theta0 a group, not a dataset.
        const hid_t file =
            H5Fcreate((in + "/group.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        REQUIRE(file >= 0);
        H5Gclose(H5Gcreate2(file, "theta0", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        H5Fclose(file);
    }

    const std::vector<std::string> size{"--n", "6", "--d", "3"};
    auto with_size = [&](std::vector<std::string> args) {
        args.insert(args.end(), size.begin(), size.end());
        return args;
    };
    check_all(
        "init_files",
        {
            {with_size({"--init", "file:" + in + "/missing.h5"}),
             {"init = file:" + in + "/missing.h5 (--init): ", in + "/missing.h5", "no such file"}},
            {with_size({"--init", "file:" + in + "/text.h5"}),
             {in + "/text.h5", "not an HDF5 file"}},
            {with_size({"--init", "file:" + in + "/no_theta0.h5"}),
             {in + "/no_theta0.h5", "no dataset 'theta0'"}},
            {with_size({"--init", "file:" + in + "/wrong_shape.h5"}),
             {"'theta0'", "must be 6 x 3", "found 6 x 4"}},
            {with_size({"--init", "file:" + in + "/wrong_rows.h5"}),
             {"'theta0'", "must be 6 x 3", "found 5 x 3"}},
            {with_size({"--init", "file:" + in + "/one_dim.h5"}), {"'theta0'"}},
            {with_size({"--init", "file:" + in + "/zero_row.h5"}),
             {"row 2 of 'theta0'", "is zero"}},
            {with_size({"--init", "file:" + in + "/bad_r0.h5"}), {"'r0'", "n = 6 entries"}},
            {with_size({"--init", "file:" + in + "/negative_r0.h5"}),
             {"'r0'", "must be positive", "entry 4"}},
            {with_size({"--init", "file:" + in + "/inf_theta0.h5"}),
             {"'theta0'", "non-finite", "row 1, column 0"}},
            {with_size({"--init", "file:" + in + "/nan_r0.h5"}), {"'r0'", "non-finite", "row 3"}},
            {with_size({"--init", "file:" + in + "/group.h5"}), {"'theta0'", "found a group"}},
        });
}

TEST_CASE("bad weights files are refused before any output exists") {
    const case_dirs dirs = make_dirs("weights_files");
    const std::string in = dirs.inputs;
    write_text(in + "/text.h5", "Q = I\n");
    write_h5(in + "/wrong_q.h5", {{"Q", {3, 4}, ramp(12)}, {"K", {3, 3}, ramp(9)}});
    write_h5(in + "/wrong_v.h5", {{"V", {2, 2}, ramp(4)}});
    write_h5(in + "/none.h5", {{"W", {3, 3}, ramp(9)}});
    auto nan_k = ramp(9);
    nan_k[5] = std::numeric_limits<double>::quiet_NaN();
    write_h5(in + "/nan_k.h5", {{"K", {3, 3}, nan_k}});
    check_all("weights_files",
              {
                  {{"--weights", "file:" + in + "/missing.h5"},
                   {"weights = file:" + in + "/missing.h5 (--weights): ", in + "/missing.h5",
                    "no such file"}},
                  {{"--weights", "file:" + in + "/text.h5"}, {in + "/text.h5", "not an HDF5 file"}},
                  {{"--weights", "file:" + in + "/wrong_q.h5"},
                   {"dataset 'Q'", "must be 3 x 3", "found 3 x 4"}},
                  {{"--weights", "file:" + in + "/wrong_v.h5"},
                   {"dataset 'V'", "must be 3 x 3", "found 2 x 2"}},
                  {{"--weights", "file:" + in + "/none.h5"}, {"none of the datasets Q, K, V"}},
                  {{"--weights", "file:" + in + "/nan_k.h5"},
                   {"dataset 'K'", "non-finite", "row 1, column 2"}},
              });
}

TEST_CASE("an unwritable output path is refused") {
    REQUIRE(!fs::exists("/nonexistent_dir"));
    const case_dirs dirs = make_dirs("unwritable");
    const run_result r = run_nadyn(
        {"simulate", "--out", "/nonexistent_dir/x.h5", "--T", "0.1", "--quiet"}, in_dir(dirs.run));
    INFO("stderr: " << r.err);
    check_refused(r, {"/nonexistent_dir/x.h5", "does not exist"});
    CHECK(!fs::exists("/nonexistent_dir"));
    CHECK(list_files(dirs.run).empty());

    // A directory where the file should go is not a file to write either.
    fs::create_directories(dirs.root + "/a_directory");
    const run_result onto_dir = run_nadyn(
        {"simulate", "--out", dirs.root + "/a_directory", "--T", "0.1", "--quiet", "--force"},
        in_dir(dirs.run));
    INFO("stderr: " << onto_dir.err);
    check_refused(onto_dir, {dirs.root + "/a_directory"});
    CHECK(fs::is_directory(dirs.root + "/a_directory"));
    CHECK(list_files(dirs.root + "/a_directory").empty());
}

TEST_CASE("an existing output file is kept unless --force") {
    const case_dirs dirs = make_dirs("existing");
    const std::string out = dirs.run + "/x.h5";
    write_text(out, "precious results\n");
    // An old modification time, so even a rewrite with the same bytes would show.
    const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(48);
    fs::last_write_time(out, old_time);
    const file_snapshot before = snapshot(out);

    const run_result refused = run_nadyn({"simulate", "--out", out, "--T", "0.1", "--quiet"});
    INFO("stderr: " << refused.err);
    check_refused(refused, {out, "already exists", "--force"});
    CHECK(snapshot(out) == before);

    // Bad input with --force must not truncate the file either: validation comes first.
    const run_result bad_with_force =
        run_nadyn({"simulate", "--out", out, "--T", "0.1", "--quiet", "--force", "--n", "0"});
    check_refused(bad_with_force, {"n must be at least 1"});
    CHECK(snapshot(out) == before);
    const run_result missing_init_with_force =
        run_nadyn({"simulate", "--out", out, "--T", "0.1", "--quiet", "--force", "--init",
                   "file:" + dirs.inputs + "/missing.h5"});
    check_refused(missing_init_with_force, {"missing.h5"});
    CHECK(snapshot(out) == before);
    CHECK(list_files(dirs.run) == std::vector<std::string>{"x.h5"});

    const run_result forced =
        run_nadyn({"simulate", "--out", out, "--T", "0.1", "--quiet", "--force"});
    INFO("stderr: " << forced.err);
    CHECK(forced.status == 0);
    CHECK(forced.err.empty());
    CHECK(snapshot(out) != before);
    nadyn::trajectory_reader file(out);
    CHECK(file.status() == "complete");
    CHECK(file.frame_count() == 11); // T / dt = 10 steps, every 1 step (about 100 frames)
    CHECK(list_files(dirs.run) == std::vector<std::string>{"x.h5"});
}

TEST_CASE("command-line parse errors are one line and status 2") {
    check_all("parse", {
                           {{"--bogus"}, {"--bogus"}},
                           {{"--n", "abc"}, {"--n", "abc"}},
                           {{"--dt", "0.1.2"}, {"--dt", "0.1.2"}},
                           {{"--n", "2.5"}, {"--n", "2.5"}},
                           // CLI11 alone saturated this to INT64_MAX (then failed allocating).
                           {{"--n", "99999999999999999999999"}, {"--n", "out of range"}},
                           // and read these as hexadecimal.
                           {{"--n", "0x10"}, {"--n", "'0x10'", "not a whole number"}},
                           {{"--every", "0x3"}, {"--every", "'0x3'"}},
                           {{"--threads", "99999999999"}, {"--threads", "out of range"}},
                           {{"--n"}, {"--n"}}, // missing value at the end of the line
                           {{"--n", "3", "--n", "4"}, {"--n"}},
                           {{"stray"}, {"stray"}},
                       });
}

TEST_CASE("inspect refuses what is not a trajectory") {
    const case_dirs dirs = make_dirs("inspect");
    write_text(dirs.inputs + "/text.h5", "not a trajectory\n");
    write_h5(dirs.inputs + "/init.h5", {{"theta0", {6, 3}, ramp(18)}});

    const run_result missing = run_nadyn({"inspect", dirs.inputs + "/missing.h5"});
    INFO("stderr: " << missing.err);
    check_refused(missing, {dirs.inputs + "/missing.h5", "no such file"});

    const run_result text = run_nadyn({"inspect", dirs.inputs + "/text.h5"});
    INFO("stderr: " << text.err);
    check_refused(text, {dirs.inputs + "/text.h5", "not an HDF5 file"});

    // HDF5, but not written by nadyn simulate.
    const run_result other = run_nadyn({"inspect", dirs.inputs + "/init.h5"});
    INFO("stderr: " << other.err);
    check_refused(other, {dirs.inputs + "/init.h5"});

    const run_result no_file = run_nadyn({"inspect"});
    check_refused(no_file, {"file is required"});
    CHECK(list_files(dirs.run).empty());
}

TEST_CASE("no or unknown subcommand is status 2; help is status 0") {
    const case_dirs dirs = make_dirs("help");
    const run_result none = run_nadyn({}, in_dir(dirs.run));
    check_refused(none, {"subcommand"});
    const run_result unknown = run_nadyn({"frobnicate"}, in_dir(dirs.run));
    check_refused(unknown, {"unknown command 'frobnicate'", "simulate, inspect"});

    const run_result top = run_nadyn({"--help"}, in_dir(dirs.run));
    CHECK(top.status == 0);
    CHECK(top.err.empty());
    CHECK(contains(top.out, "simulate"));
    CHECK(contains(top.out, "inspect"));
    CHECK(contains(top.out, "--version"));

    const run_result version = run_nadyn({"--version"}, in_dir(dirs.run));
    CHECK(version.status == 0);
    CHECK(contains(version.out, "nadyn "));

    // Every simulate flag appears, with its default where it has a fixed one.
    const run_result simulate = run_nadyn({"simulate", "--help"}, in_dir(dirs.run));
    CHECK(simulate.status == 0);
    CHECK(simulate.err.empty());
    const std::vector<std::pair<std::string, std::string>> flags{
        {"--scheme", "=peri-ln"},
        {"--n", "=64"},
        {"--d", "=3"},
        {"--beta", "=4"},
        {"--T", "=20"},
        {"--dt", "=0.01"},
        {"--integrator", "=rk4"},
        {"--rtol", "=1e-08"},
        {"--atol", "=1e-10"},
        {"--init", "=uniform"},
        {"--weights", "=identity"},
        {"--seed", "=1"},
        {"--r0", "=1"},
        {"--alpha", "=1"},
        {"--t-switch", "0.25 T"},
        {"--causal", ""},
        {"--precision", "=double"},
        {"--every", "about 100 frames"},
        {"--positions", "=all"},
        {"--threads", "=0"},
        {"--cluster-eps", "=0.001"},
        {"--compress", ""},
        {"--out", "descriptive name"},
        {"--force", ""},
        {"--quiet", ""},
    };
    const auto lines = split_lines(simulate.out);
    for (const auto& [flag, default_text] : flags) {
        INFO("flag " << flag << " default " << default_text);
        bool found = false;
        for (const auto& line : lines) {
            // The flag's own line: "  --n INT=64   Number of tokens".
            if (line.rfind("  " + flag + " ", 0) != 0) continue;
            found = true;
            CHECK(contains(line, default_text));
        }
        CHECK(found);
    }
    CHECK(contains(simulate.out, scheme_list));
    CHECK(list_files(dirs.run).empty());

    const run_result inspect = run_nadyn({"inspect", "--help"}, in_dir(dirs.run));
    CHECK(inspect.status == 0);
    CHECK(contains(inspect.out, "--csv"));
    CHECK(contains(inspect.out, "--rows UINT=20"));
}

TEST_CASE("every subcommand's --help ends with two or more examples of that subcommand") {
    const case_dirs dirs = make_dirs("help_examples");
    for (const char* command : {"simulate", "inspect", "rerun", "reduced", "table", "sweep"}) {
        INFO("nadyn " << command << " --help");
        const run_result help = run_nadyn({command, "--help"}, in_dir(dirs.run));
        CHECK(help.status == 0);
        const auto lines = split_lines(help.out);
        std::size_t at = lines.size();
        for (std::size_t i = 0; i < lines.size(); ++i)
            if (lines[i] == "Examples:") at = i;
        REQUIRE(at < lines.size());
        std::size_t examples = 0;
        for (std::size_t i = at + 1; i < lines.size(); ++i) {
            if (lines[i].empty()) continue;
            // Each line is a command line of this subcommand (possibly under mpirun).
            CHECK_MESSAGE(contains(lines[i], std::string("nadyn ") + command), lines[i]);
            ++examples;
        }
        CHECK(examples >= 2);
    }
}

TEST_CASE("a misspelled flag gets the closest valid flag and the command's --help") {
    const std::string dir = scratch_dir("bad_input/misspelled");
    const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
        {{"simulate", "--sheme", "post-ln"},
         {"--sheme: unknown flag of 'nadyn simulate'; did you mean --scheme?",
          "'nadyn simulate --help'"}},
        {{"simulate", "--bta=3"}, {"--bta", "did you mean --beta?"}},
        {{"simulate", "--frobnicate", "1"}, {"--frobnicate: unknown flag"}},
        {{"simulate", "post-ln"}, {"unexpected argument 'post-ln'", "--scheme post-ln"}},
        {{"sweep", "x.toml", "--jbos", "2"}, {"did you mean --jobs?", "'nadyn sweep --help'"}},
    };
    for (const auto& [args, expected] : cases) {
        const run_result r = run_nadyn(args, in_dir(dir));
        CHECK(r.status == 2);
        CHECK(line_count(r.err) == 1);
        for (const auto& part : expected)
            CHECK_MESSAGE(contains(r.err, part), part << " in " << r.err);
    }
    CHECK(list_files(dir).empty());
}

TEST_CASE("nadyn simulate warns on stderr when mix-ln's switch lies beyond T") {
    const std::string dir = scratch_dir("bad_input/warnings");
    const run_result r = run_nadyn({"simulate", "--scheme", "mix-ln", "--T", "0.5", "--t-switch",
                                    "2", "--n", "8", "--out", "w.h5", "--quiet"},
                                   in_dir(dir));
    CHECK(r.status == 0);
    CHECK(contains(r.err, "nadyn: warning: mix-ln switches at t_switch = 2"));
    const run_result quiet = run_nadyn(
        {"simulate", "--scheme", "mix-ln", "--T", "0.5", "--n", "8", "--out", "q.h5", "--quiet"},
        in_dir(dir));
    CHECK(quiet.status == 0);
    CHECK(!contains(quiet.err, "warning"));
}
