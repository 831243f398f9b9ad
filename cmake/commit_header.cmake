# Writes OUTPUT, a header defining KITE_GIT_COMMIT as SOURCE_DIR's git commit ("unknown"
# outside a git checkout). Run at every build; the file is rewritten only when the commit
# changed, so that only what includes it recompiles then.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE result ERROR_QUIET)
if(NOT result EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "#define KITE_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()
