# Instruction set selection (NADYN_SIMD), at compile time for the whole library; see
# ARCHITECTURE.md ("Instruction sets") for why not run-time dispatch.
#
#   auto      the best of avx512, avx2, portable that the build machine supports (default)
#   portable  the compiler's x86-64 baseline (SSE2; no FMA)
#   avx2      -march=x86-64-v3 (AVX2, FMA, BMI2)
#   avx512    -march=x86-64-v4 (AVX-512 F/DQ/BW/VL/CD on top of avx2)
#   native    -march=native (everything the build machine has; the binary may not run elsewhere)
#
# Sets NADYN_SIMD_LEVEL (the level used), NADYN_SIMD_FLAGS (a list) and
# NADYN_SIMD_REQUIRED (the CPU features, as __builtin_cpu_supports names, that the flags let
# the compiler use: checked when a program starts, src/model/cpu_check.cpp).

set(NADYN_SIMD "auto" CACHE STRING "Instruction set: auto, portable, avx2, avx512 or native")
set_property(CACHE NADYN_SIMD PROPERTY STRINGS auto portable avx2 avx512 native)
if(DEFINED NADYN_NATIVE)
  message(DEPRECATION "NADYN_NATIVE is replaced by NADYN_SIMD (auto, portable, avx2, avx512, native)")
  if(NADYN_NATIVE)
    set(NADYN_SIMD "native" CACHE STRING "" FORCE)
  endif()
  unset(NADYN_NATIVE CACHE)
endif()
set(_nadyn_simd_choices auto portable avx2 avx512 native)
if(NOT NADYN_SIMD IN_LIST _nadyn_simd_choices)
  string(REPLACE ";" ", " _choices_text "${_nadyn_simd_choices}")
  message(FATAL_ERROR "NADYN_SIMD='${NADYN_SIMD}' is not one of: ${_choices_text}")
endif()

set(_nadyn_x86 OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(_nadyn_x86 ON)
endif()

# The macros a compiler predefines with the given flags (one per line, "#define NAME VALUE").
function(_nadyn_predefined out)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} ${ARGN} -dM -E -x c++ /dev/null
    OUTPUT_VARIABLE text ERROR_QUIET RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    set(text "")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

set(NADYN_SIMD_LEVEL "${NADYN_SIMD}")
if(NADYN_SIMD STREQUAL "auto")
  set(NADYN_SIMD_LEVEL "portable")
  if(_nadyn_x86 AND NOT CMAKE_CROSSCOMPILING)
    _nadyn_predefined(_native -march=native)
    if(_native MATCHES "__AVX512F__" AND _native MATCHES "__AVX512DQ__" AND
       _native MATCHES "__AVX512BW__" AND _native MATCHES "__AVX512VL__" AND
       _native MATCHES "__AVX512CD__" AND _native MATCHES "__BMI2__")
      set(NADYN_SIMD_LEVEL "avx512")
    elseif(_native MATCHES "__AVX2__" AND _native MATCHES "__FMA__" AND _native MATCHES "__BMI2__")
      set(NADYN_SIMD_LEVEL "avx2")
    endif()
  endif()
endif()
if(NOT _nadyn_x86 AND NOT NADYN_SIMD_LEVEL STREQUAL "portable")
  message(FATAL_ERROR "NADYN_SIMD=${NADYN_SIMD}: x86-64 levels need an x86-64 target and GCC or Clang; use portable")
endif()

if(NADYN_SIMD_LEVEL STREQUAL "avx2")
  set(NADYN_SIMD_FLAGS -march=x86-64-v3)
elseif(NADYN_SIMD_LEVEL STREQUAL "avx512")
  set(NADYN_SIMD_FLAGS -march=x86-64-v4)
elseif(NADYN_SIMD_LEVEL STREQUAL "native")
  set(NADYN_SIMD_FLAGS -march=native)
else()
  set(NADYN_SIMD_FLAGS "")
endif()

# Macro the compiler defines -> feature name of __builtin_cpu_supports (names both GCC 12 and
# Clang 14 accept), in the order a missing one is reported (the level's defining one first).
set(_nadyn_features
  __AVX512F__ avx512f __AVX2__ avx2 __AVX__ avx __FMA__ fma __BMI__ bmi __BMI2__ bmi2
  __SSE3__ sse3 __SSSE3__ ssse3 __SSE4_1__ sse4.1 __SSE4_2__ sse4.2 __POPCNT__ popcnt
  __AVX512DQ__ avx512dq __AVX512BW__ avx512bw __AVX512VL__ avx512vl __AVX512CD__ avx512cd
  __AVX512VNNI__ avx512vnni __AVX512VBMI__ avx512vbmi __AVX512IFMA__ avx512ifma
  __AVX512VBMI2__ avx512vbmi2 __AVX512BITALG__ avx512bitalg __AVX512VPOPCNTDQ__ avx512vpopcntdq
  __AVX512BF16__ avx512bf16 __AVX512VP2INTERSECT__ avx512vp2intersect
  __GFNI__ gfni __VPCLMULQDQ__ vpclmulqdq __AES__ aes __PCLMUL__ pclmul __SSE4A__ sse4a)
set(NADYN_SIMD_REQUIRED "")
if(_nadyn_x86 AND NADYN_SIMD_FLAGS)
  _nadyn_predefined(_baseline)
  _nadyn_predefined(_selected ${NADYN_SIMD_FLAGS})
  list(LENGTH _nadyn_features _count)
  math(EXPR _last "${_count} - 1")
  foreach(i RANGE 0 ${_last} 2)
    math(EXPR j "${i} + 1")
    list(GET _nadyn_features ${i} macro)
    list(GET _nadyn_features ${j} feature)
    if(_selected MATCHES "#define ${macro} " AND NOT _baseline MATCHES "#define ${macro} ")
      list(APPEND NADYN_SIMD_REQUIRED ${feature})
    endif()
  endforeach()
endif()

string(REPLACE ";" " " _flags_text "${NADYN_SIMD_FLAGS}")
string(REPLACE ";" ", " _required_text "${NADYN_SIMD_REQUIRED}")
message(STATUS "nadyn instruction set: ${NADYN_SIMD_LEVEL} (NADYN_SIMD=${NADYN_SIMD}; flags: '${_flags_text}'; checked at start: ${_required_text})")
