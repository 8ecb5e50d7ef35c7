#pragma once
// Reading a file that may crash its reader, in a child process.
//
// libhdf5 1.10 crashes on some damaged metadata (a segmentation fault in the iteration of a
// damaged group's links, glibc's "free(): invalid pointer" abort) inside calls that no check
// of nadyn's can precede: the damage is in what HDF5 reads before it returns to its caller.
// read_in_child() runs the reads in a fork()ed child, so that such a crash ends the child and
// becomes an error message of the parent's, naming the file.
//
// Only for a single-threaded caller (the command line before its run: fork copies the calling
// thread alone, so a lock another thread holds would stay held in the child).
#include <functional>
#include <string>

namespace nadyn {

// What a read in a child process left: its result and everything it wrote to standard output.
struct child_read {
    int status = 0;
    std::string output;
};

// Runs `read` (reads of the file at `path`) in a child process and returns its result and
// standard output, which the caller prints. An input_error, io_error or numerical_fault the
// child throws is thrown again here, with its message; a child killed by a signal (a crash
// inside libhdf5) is io_error "'PATH': damaged HDF5 metadata (the reader crashed: SIGSEGV)".
// The child dies with its parent, and writes nothing of its own to the file but what `read`
// does.
child_read read_in_child(const std::string& path, const std::function<int()>& read);

} // namespace nadyn
