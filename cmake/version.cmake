# Bakes the git sha and CUDA version into the build so `ridge --version` and every result file
# can say which code produced them. The sha is taken again at every build (target ridge_version),
# not only when CMake configures, so an incremental build never reports an older commit.
set(RIDGE_VERSION_SOURCE ${CMAKE_CURRENT_BINARY_DIR}/generated/version.cpp)
set(RIDGE_VERSION_STAMP ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR} -DOUTPUT=${RIDGE_VERSION_SOURCE}
    -DPROJECT_VERSION=${PROJECT_VERSION} -DRIDGE_CUDA_COMPILER_VERSION=${CMAKE_CUDA_COMPILER_VERSION}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/version_stamp.cmake)
execute_process(COMMAND ${RIDGE_VERSION_STAMP})  # the file exists before the first build
add_custom_target(ridge_version ALL COMMAND ${RIDGE_VERSION_STAMP} BYPRODUCTS ${RIDGE_VERSION_SOURCE}
  COMMENT "Stamping the git sha into version.cpp")
