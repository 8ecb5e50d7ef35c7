# Reads a static library's symbols (nm -C) and checks which of the layers' third-party
# libraries it refers to: HDF5 (H5*), toml++ (toml::), GLPK (glp_*), MPI (MPI_*, ompi_*).
#   cmake -DNM=nm -DLIBRARY=libnadyn_model.a -DFORBIDDEN=ON -P layer_symbols.cmake
#     fails when any such symbol is there (a layer that must stand without them);
#   ... -DEXPECTED="H5" fails unless the symbols of that prefix are there (the check can see);
#   ... -DFORBIDDEN_PREFIX="H5" fails when a symbol of that prefix is there (a layer that must
#     stand without that one library).
execute_process(COMMAND ${NM} -C ${LIBRARY} OUTPUT_VARIABLE symbols ERROR_VARIABLE errors
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} ${LIBRARY} failed: ${errors}")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(pattern "(^|[^A-Za-z0-9_])(H5[A-Z][A-Za-z0-9_]*|glp_[a-z_]+|MPI_[A-Z][A-Za-z_]*|ompi_[a-z_]+|toml::[A-Za-z_:]+)")
set(found "")
foreach(line IN LISTS lines)
  if(line MATCHES "${pattern}")
    list(APPEND found "${CMAKE_MATCH_2}")
  endif()
endforeach()
list(REMOVE_DUPLICATES found)
list(LENGTH found count)
if(FORBIDDEN AND count GREATER 0)
  list(SUBLIST found 0 10 first)
  message(FATAL_ERROR "${LIBRARY} refers to ${count} symbols of HDF5, toml++, GLPK or MPI, "
                      "which its layer must not use: ${first}")
endif()
if(FORBIDDEN_PREFIX)
  set(forbidden ${found})
  list(FILTER forbidden INCLUDE REGEX "^${FORBIDDEN_PREFIX}")
  if(forbidden)
    list(LENGTH forbidden forbidden_count)
    list(SUBLIST forbidden 0 10 first)
    message(FATAL_ERROR "${LIBRARY} refers to ${forbidden_count} symbols ${FORBIDDEN_PREFIX}*, "
                        "which its layer must not use: ${first}")
  endif()
endif()
if(EXPECTED)
  list(FILTER found INCLUDE REGEX "^${EXPECTED}")
  if(NOT found)
    message(FATAL_ERROR "${LIBRARY} refers to no ${EXPECTED}* symbol; the check cannot see them")
  endif()
endif()
message(STATUS "${LIBRARY}: ${count} third-party symbols of the listed libraries")
