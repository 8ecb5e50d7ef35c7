#pragma once
// What built this copy of nadyn: recorded in every output file so a result can be rerun.
namespace nadyn {
const char* version();        // the project version, e.g. "0.1.0"
const char* git_commit();     // `git describe --always --dirty` at build time
const char* compiler();       // compiler id and version
const char* compiler_flags(); // every flag the library was compiled with: CMAKE_CXX_FLAGS,
                              // those of the build type, the instruction set's, OpenMP's
const char* build_type();     // CMake build type
// The instruction set level compiled for: "portable", "avx2", "avx512" or "native"
// (what NADYN_SIMD=auto resolved to on the build machine). Bitwise reruns hold on the same
// level: the AVX-512 exp and FMA change the last bits.
const char* simd_level();
const char* simd_option();            // NADYN_SIMD as given: "auto", "portable", ...
const char* simd_required_features(); // CPU features checked at start, comma-separated
} // namespace nadyn
