# What `cmake --install build --prefix P` puts under P:
#   include/nadyn/<layer>/...          the public headers of every layer
#   lib/libnadyn_{model,files,experiment,meanfield}.a
#   bin/nadyn                          the program
#   lib/cmake/nadyn/nadynConfig.cmake  the targets nadyn::model, nadyn::files,
#                                      nadyn::experiment, nadyn::meanfield and nadyn::nadyn,
#                                      with their dependencies found by find_dependency,
#                                      and nadynConfigVersion.cmake.
# The MPI layer (nadyn_parallel) is the program's and is not installed as a library.
include(CMakePackageConfigHelpers)
set(NADYN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nadyn)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/nadyn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT development FILES_MATCHING PATTERN "*.hpp")
set_target_properties(nadyn PROPERTIES EXPORT_NAME nadyn)
install(TARGETS nadyn_model nadyn_files nadyn_experiment nadyn_meanfield nadyn
        EXPORT nadynTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS nadyn_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT program)
install(EXPORT nadynTargets NAMESPACE nadyn:: DESTINATION ${NADYN_INSTALL_CMAKEDIR}
        COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nadynConfig.cmake.in
  ${PROJECT_BINARY_DIR}/nadynConfig.cmake INSTALL_DESTINATION ${NADYN_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nadynConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nadynConfig.cmake ${PROJECT_BINARY_DIR}/nadynConfigVersion.cmake
        DESTINATION ${NADYN_INSTALL_CMAKEDIR} COMPONENT development)
