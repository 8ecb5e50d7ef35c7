"""scripts/lib/fuzz_crash_owner.py: whose bug a sanitizer report shows.

The reports are cut from real replays of fuzz_whole_files inputs (paths shortened); the
last ones are the same reports with the blame moved to nadyn, which must not pass as HDF5's.
"""
import pathlib
import subprocess

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "lib" / "fuzz_crash_owner.py"
FUZZ = "(/w/build-fuzz/fuzz/fuzz_whole_files+0x2bf1b4) (BuildId: a2ba532781846bacd4acff17ac258331cac5d9b3)"
HDF5 = "(/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1843cd) (BuildId: e923ff058f7cfc1a31cc68764211396ffb3aeb91)"


def owner(report):
    result = subprocess.run(["/usr/bin/python3", str(SCRIPT)], input=report, text=True,
                            capture_output=True, check=True)
    return result.stdout.strip()


SEGV_IN_HDF5 = f"""\
INFO: Running with entropic power schedule (0xFF, 100).
==18914==ERROR: AddressSanitizer: SEGV on unknown address (pc 0x559f365ef1b4 bp 0x000000000000 sp 0x7fff395bb0d0 T0)
    #0 0x559f365ef1b4 in __asan::Allocator::Deallocate(void*, unsigned long, unsigned long, __sanitizer::BufferedStackTrace*, __asan::AllocType) {FUZZ}
    #1 0x559f3666fb55 in free {FUZZ}
    #2 0x7f264cf843cd in H5MM_xfree {HDF5}
    #3 0x7f264cfb353d  {HDF5}
    #4 0x7f264cf759a4 in H5Literate {HDF5}
    #5 0x559f36825999 in nadyn::detail::hdf5_group::children[abi:cxx11]() const::$_2::operator()(H5_index_t, std::vector<std::string>*) const /w/src/hdf5.cpp:552:20
    #6 0x559f366d01e9 in nadyn::(anonymous namespace)::series_paths[abi:cxx11](nadyn::detail::hdf5_file const&) /w/src/h5md.cpp:512:64
    #7 0x559f365ed012 in main {FUZZ}
"""

OVERLAP_IN_HDF5 = f"""\
==18934==ERROR: AddressSanitizer: memcpy-param-overlap: memory ranges [0x621000002908,0x621000012907) and [0x62100000f178, 0x62100001f177) overlap
    #0 0x564f1f3d2015 in __interceptor_memcpy {FUZZ}
    #1 0x7f20c7f67b8d in H5HG_read {HDF5}
    #2 0x7f20c7e58cf5 in H5Aread {HDF5}
    #3 0x564f1f5e62af in nadyn::detail::(anonymous namespace)::read_string_attribute(long, long, std::string const&) /w/src/hdf5.cpp:257:15
0x621000002908 is located 8 bytes inside of 65536-byte region [0x621000002900,0x621000012900)
allocated by thread T0 here:
    #0 0x564f1f43ad9e in malloc {FUZZ}
    #1 0x7f20c7f233e4  {HDF5}
    #2 0x7f20c7f23af1 in H5FL_blk_malloc {HDF5}
"""


def test_crashes_inside_hdf5_on_its_own_memory_are_hdf5s():
    assert owner(SEGV_IN_HDF5) == "hdf5"
    assert owner(OVERLAP_IN_HDF5) == "hdf5"


def test_hdf5_writing_past_a_buffer_nadyn_allocated_is_nadyns():
    report = OVERLAP_IN_HDF5.replace(
        f"    #1 0x7f20c7f233e4  {HDF5}\n    #2 0x7f20c7f23af1 in H5FL_blk_malloc {HDF5}\n",
        "    #1 0x564f1f5e6000 in nadyn::detail::hdf5_dataset::read_all(long, void*) const"
        " /w/src/hdf5.cpp:438:9\n")
    assert report != OVERLAP_IN_HDF5
    assert owner(report) == "nadyn"


def test_a_fault_in_nadyns_own_frame_is_nadyns():
    report = SEGV_IN_HDF5.replace(
        f"    #1 0x559f3666fb55 in free {FUZZ}\n",
        "    #1 0x559f366d0100 in nadyn::trajectory_reader::positions(unsigned long) const"
        " /w/src/h5md.cpp:668:5\n")
    assert owner(report) == "nadyn"


def test_undefined_behaviour_in_nadyn_is_nadyns():
    report = ("/w/src/h5md.cpp:660:12: runtime error: signed integer overflow\n"
              "    #0 0x55 in nadyn::check_frame(unsigned long) /w/src/h5md.cpp:660:12\n")
    assert owner(report) == "nadyn"


def test_no_report_means_the_input_did_not_crash():
    assert owner("INFO: Running with entropic power schedule\nExecuted input in 3 ms\n") == "none"
