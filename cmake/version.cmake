# Bakes the git sha and CUDA version into the build so `ridge --version` and every result file
# can say which code produced them.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
  OUTPUT_VARIABLE RIDGE_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
  OUTPUT_VARIABLE RIDGE_GIT_DIRTY OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT RIDGE_GIT_SHA)
  set(RIDGE_GIT_SHA "unknown")
elseif(RIDGE_GIT_DIRTY)
  set(RIDGE_GIT_SHA "${RIDGE_GIT_SHA}-dirty")
endif()
set(RIDGE_CUDA_COMPILER_VERSION "${CMAKE_CUDA_COMPILER_VERSION}")
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/version.cpp.in
  ${CMAKE_CURRENT_BINARY_DIR}/generated/version.cpp @ONLY)
set(RIDGE_VERSION_SOURCE ${CMAKE_CURRENT_BINARY_DIR}/generated/version.cpp)
