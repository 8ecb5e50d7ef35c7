#pragma once
// What built this copy of nadyn: recorded in every output file so a result can be rerun.
namespace nadyn {
const char* version();        // the project version, e.g. "0.1.0"
const char* git_commit();     // `git describe --always --dirty` at configure time
const char* compiler();       // compiler id and version
const char* compiler_flags(); // CMAKE_CXX_FLAGS plus those of the build type
const char* build_type();     // CMake build type
} // namespace nadyn
