// Regression: `sweep --resume` after an input file changed (init = "file:init64.h5" rewritten
// between the interruption and the resume) exited 0 and "complete", its later runs made from
// the new file. The files now record each input file's SHA-256 (/parameters/init_sha256 of a
// run, input_files and input_sha256 of a sweep) and a resume whose inputs differ is refused
// (status 2, one line naming the file, nothing written). Files from before the hashes (none
// recorded) resume as they did.
#include "cli_support.hpp"

#include "files/sha256.hpp"
#include "nadyn/files/h5md.hpp"

#include <doctest/doctest.h>
#include <hdf5.h>

#include <string>
#include <vector>

namespace {

using namespace nadyn_test;

// n = 6 directions in d = 3, shifted by `shift` so that two files differ.
void write_init(const std::string& path, double shift) {
    std::vector<double> theta(18);
    for (std::size_t i = 0; i < theta.size(); ++i)
        theta[i] = 0.1 * static_cast<double>(i + 1) + shift;
    write_h5(path, {{"theta0", {6, 3}, theta}});
}

void delete_attribute(const std::string& path, const std::string& object, const std::string& name) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(file >= 0);
    REQUIRE(H5Adelete_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT) >= 0);
    H5Fclose(file);
}

void check_refused(const run_result& r, const std::string& file) {
    INFO("stderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(line_count(r.err) == 1);
    CHECK(contains(r.err, "'" + file + "' changed since"));
}

} // namespace

TEST_CASE("our SHA-256 gives FIPS 180-4's digests") {
    auto digest = [](const std::string& text) {
        nadyn::detail::sha256 hash;
        hash.update(text);
        return hash.hex();
    };
    CHECK(digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    nadyn::detail::sha256 million; // a million 'a', fed in uneven pieces
    const std::string piece(997, 'a');
    std::size_t fed = 0;
    for (; fed + piece.size() <= 1000000; fed += piece.size())
        million.update(piece);
    million.update(std::string(1000000 - fed, 'a'));
    CHECK(million.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("simulate records init_sha256 and refuses a resume after the init file changed") {
    const std::string dir = scratch_dir("input_file_changed/simulate");
    write_init(dir + "/init.h5", 0.0);
    const std::vector<std::string> run{"simulate",     "--n",   "6",       "--d",    "3",
                                       "--T",          "0.5",   "--every", "5",      "--init",
                                       "file:init.h5", "--out", "x.h5",    "--quiet"};
    REQUIRE(run_nadyn(run, in_dir(dir)).status == 0);
    {
        const nadyn::trajectory_reader file(dir + "/x.h5");
        CHECK(file.parameters().text("init_sha256") ==
              nadyn::detail::file_sha256(dir + "/init.h5"));
    }
    const std::vector<std::string> resume{"simulate", "--resume", "x.h5", "--T", "1", "--quiet"};
    fs::copy_file(dir + "/init.h5", dir + "/kept.h5");
    write_init(dir + "/init.h5", 0.5);
    const file_snapshot before = snapshot(dir + "/x.h5");
    check_refused(run_nadyn(resume, in_dir(dir)), "init.h5");
    CHECK(snapshot(dir + "/x.h5") == before);
    // The same bytes again (HDF5 stamps times, so a rewrite of the same numbers differs):
    // the resume goes on.
    fs::copy_file(dir + "/kept.h5", dir + "/init.h5", fs::copy_options::overwrite_existing);
    const run_result resumed = run_nadyn(resume, in_dir(dir));
    INFO("stderr: " << resumed.err);
    CHECK(resumed.status == 0);
}

TEST_CASE("a run file without init_sha256 (written before it) still resumes") {
    const std::string dir = scratch_dir("input_file_changed/old_run");
    write_init(dir + "/init.h5", 0.0);
    REQUIRE(run_nadyn({"simulate", "--n", "6", "--d", "3", "--T", "0.5", "--every", "5", "--init",
                       "file:init.h5", "--out", "x.h5", "--quiet"},
                      in_dir(dir))
                .status == 0);
    delete_attribute(dir + "/x.h5", "parameters", "init_sha256");
    write_init(dir + "/init.h5", 0.5);
    const run_result r =
        run_nadyn({"simulate", "--resume", "x.h5", "--T", "1", "--quiet"}, in_dir(dir));
    INFO("stderr: " << r.err);
    CHECK(r.status == 0);
}

TEST_CASE("sweep --resume refuses an input file that changed since the sweep started") {
    const std::string dir = scratch_dir("input_file_changed/sweep");
    write_init(dir + "/init64.h5", 0.0);
    write_text(dir + "/e.toml", "[run]\nn = 6\nd = 3\nT = 0.2\ninit = \"file:init64.h5\"\n"
                                "[sweep]\nbeta = [1, 2, 3]\n");
    REQUIRE(run_nadyn({"sweep", "e.toml", "--out", "s.h5", "--quiet"}, in_dir(dir)).status == 0);
    const std::vector<std::string> resume{"sweep", "--resume", "s.h5", "--quiet"};
    fs::copy_file(dir + "/init64.h5", dir + "/kept.h5");
    write_init(dir + "/init64.h5", 0.5);
    const file_snapshot before = snapshot(dir + "/s.h5");
    check_refused(run_nadyn(resume, in_dir(dir)), "init64.h5");
    CHECK(snapshot(dir + "/s.h5") == before);
    fs::copy_file(dir + "/kept.h5", dir + "/init64.h5", fs::copy_options::overwrite_existing);
    const run_result same = run_nadyn(resume, in_dir(dir));
    INFO("stderr: " << same.err);
    CHECK(same.status == 0);
    // A sweep file from before the hashes resumes whatever the file holds.
    delete_attribute(dir + "/s.h5", ".", "input_files");
    delete_attribute(dir + "/s.h5", ".", "input_sha256");
    write_init(dir + "/init64.h5", 0.5);
    const run_result old = run_nadyn(resume, in_dir(dir));
    INFO("stderr: " << old.err);
    CHECK(old.status == 0);
}
