# Script mode (cmake -P), run at configure time and before every build of nadyn_model:
# writes OUTPUT from TEMPLATE with NADYN_GIT_COMMIT = `git describe --always --dirty` of
# SOURCE_DIR ("unknown" outside a git checkout). configure_file() leaves OUTPUT untouched
# when its text is unchanged, so a build at the same commit recompiles nothing.
execute_process(COMMAND git describe --always --dirty --abbrev=12
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE NADYN_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT NADYN_GIT_COMMIT)
  set(NADYN_GIT_COMMIT "unknown")
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
