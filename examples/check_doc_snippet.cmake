# Fails unless DOC holds SOURCE verbatim as the ```cpp block after the line
# "<!-- snippet: examples/library_run.cpp -->".
# Usage: cmake -DDOC=docs/library.md -DSOURCE=examples/library_run.cpp -P check_doc_snippet.cmake
file(READ "${DOC}" doc)
file(READ "${SOURCE}" source)
set(marker "<!-- snippet: examples/library_run.cpp -->\n```cpp\n")
string(FIND "${doc}" "${marker}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC} has no block starting with the marker\n${marker}")
endif()
string(LENGTH "${marker}" marker_length)
math(EXPR start "${start} + ${marker_length}")
string(SUBSTRING "${doc}" ${start} -1 rest)
string(FIND "${rest}" "\n```\n" end)
if(end EQUAL -1)
  message(FATAL_ERROR "the snippet block in ${DOC} is not closed by ```")
endif()
math(EXPR end "${end} + 1") # keep the final newline of the code
string(SUBSTRING "${rest}" 0 ${end} snippet)
if(NOT snippet STREQUAL source)
  message(FATAL_ERROR "the C++ snippet in ${DOC} differs from ${SOURCE}; "
                      "copy the file into the block")
endif()
message(STATUS "${DOC}'s snippet matches ${SOURCE}")
