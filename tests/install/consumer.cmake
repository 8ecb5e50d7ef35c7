# The test install/find_package: installs this build under a scratch prefix, builds
# examples/library_run.cpp in a separate project that finds nadyn there (tests/install/), runs
# it, and compares what it prints with the build tree's own copy of the example.
#   cmake -DBUILD_DIR=... -DCONSUMER=tests/install -DEXAMPLE=examples/library_run.cpp
#         -DWORK=scratch -DREFERENCE=path/to/nadyn_example_library_run -P consumer.cmake
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix)
foreach(installed include/nadyn/model/scheme.hpp include/nadyn/experiment/run.hpp
                  lib/cmake/nadyn/nadynConfig.cmake lib/cmake/nadyn/nadynConfigVersion.cmake)
  if(NOT EXISTS ${WORK}/prefix/${installed})
    message(FATAL_ERROR "cmake --install did not install ${installed}")
  endif()
endforeach()
run(${CMAKE_COMMAND} -S ${CONSUMER} -B ${WORK}/build -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${WORK}/prefix -DNADYN_EXAMPLE=${EXAMPLE})
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/library_run)
set(consumer_output "${output}")
run(${REFERENCE})
if(NOT consumer_output STREQUAL output)
  message(FATAL_ERROR "the installed library's example printed\n${consumer_output}\n"
                      "the build tree's printed\n${output}")
endif()
message(STATUS "find_package(nadyn) from ${WORK}/prefix: the example printed the same")
