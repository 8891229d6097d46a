# Script mode (cmake -P): writes version.cpp from the git state of SOURCE_DIR. configure_file only
# rewrites the file when its text changes, so an unchanged sha recompiles nothing.
#   -DSOURCE_DIR=... -DOUTPUT=... -DPROJECT_VERSION=... -DRIDGE_CUDA_COMPILER_VERSION=...
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE RIDGE_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE RIDGE_GIT_DIRTY OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT RIDGE_GIT_SHA)
  set(RIDGE_GIT_SHA "unknown")
elseif(RIDGE_GIT_DIRTY)
  set(RIDGE_GIT_SHA "${RIDGE_GIT_SHA}-dirty")
endif()
configure_file(${SOURCE_DIR}/cmake/version.cpp.in ${OUTPUT} @ONLY)
