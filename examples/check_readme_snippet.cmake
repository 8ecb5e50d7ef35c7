# Fails unless README.md holds SOURCE verbatim as the ```cpp block after the line
# "<!-- snippet: examples/library_run.cpp -->".
# Usage: cmake -DREADME=README.md -DSOURCE=examples/library_run.cpp -P check_readme_snippet.cmake
file(READ "${README}" readme)
file(READ "${SOURCE}" source)
set(marker "<!-- snippet: examples/library_run.cpp -->\n```cpp\n")
string(FIND "${readme}" "${marker}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${README} has no block starting with the marker\n${marker}")
endif()
string(LENGTH "${marker}" marker_length)
math(EXPR start "${start} + ${marker_length}")
string(SUBSTRING "${readme}" ${start} -1 rest)
string(FIND "${rest}" "\n```\n" end)
if(end EQUAL -1)
  message(FATAL_ERROR "the snippet block in ${README} is not closed by ```")
endif()
math(EXPR end "${end} + 1") # keep the final newline of the code
string(SUBSTRING "${rest}" 0 ${end} snippet)
if(NOT snippet STREQUAL source)
  message(FATAL_ERROR "the C++ snippet in ${README} differs from ${SOURCE}; "
                      "copy the file into the README block")
endif()
message(STATUS "README snippet matches ${SOURCE}")
