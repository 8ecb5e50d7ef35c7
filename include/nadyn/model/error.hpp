#pragma once
// The kinds of failure nadyn reports. The command line maps input_error to exit status 2
// (the user can fix the invocation), io_error, out_of_memory and numerical_fault to exit
// status 1.
#include <stdexcept>
#include <string>

namespace nadyn {

// Bad user input: an unknown name, a value out of range, a malformed input file.
struct input_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A failure of the file system or of the HDF5 library while reading or writing.
struct io_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Memory the system would not give (std::bad_alloc: a limit such as ulimit -v, or more than
// the machine has), with what the run needed. The Python module raises MemoryError.
struct out_of_memory : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A run left the model's domain: a NaN or Inf in the state, a magnitude r_k <= 0, or an
// adaptive step below its floor. The message names the time (and the token and its value);
// the integrator has written the last good state as a frame (integrate.hpp).
struct numerical_fault : std::runtime_error {
    using std::runtime_error::runtime_error;
};

} // namespace nadyn
