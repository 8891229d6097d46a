# cmake -DBUILD_DIR=... -DEXAMPLE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DCUDA_COMPILER=...
#       -DCUDA_ARCHITECTURES=90-real|90-virtual -DHAS_INJECT=0|1 -P consume_installed.cmake
# Installs the ridge build into WORK_DIR/prefix, checks what a user finds there, then builds the
# example against that prefix only (no source tree, no build tree, no package registry) and runs it.
cmake_minimum_required(VERSION 3.25)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "ok: ${what}")
endfunction()

set(prefix ${WORK_DIR}/prefix)
string(REPLACE "|" ";" CUDA_ARCHITECTURES "${CUDA_ARCHITECTURES}")
file(REMOVE_RECURSE ${WORK_DIR})

# 1. Install.
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# 2. The layout a user relies on.
foreach(want bin/ridge */cmake/ridge/ridgeConfig.cmake */cmake/ridge/ridgeConfigVersion.cmake
             */cmake/ridge/ridgeTargets.cmake */libridge_core.a */libridge_gpu.a)
  file(GLOB found ${prefix}/${want})
  if(NOT found)
    message(FATAL_ERROR "the installed package lacks ${want} (prefix ${prefix})")
  endif()
endforeach()
if(NOT EXISTS ${prefix}/include/ridge/measure.hpp OR NOT EXISTS ${prefix}/include/ridge/roofline.hpp
   OR NOT EXISTS ${prefix}/include/ridge/trace/events.hpp)
  message(FATAL_ERROR "the public headers are not installed under ${prefix}/include/ridge")
endif()
run("installed ridge --version" ${prefix}/bin/ridge --version)
if(HAS_INJECT)
  if(NOT EXISTS ${prefix}/lib/libridge_inject.so)
    message(FATAL_ERROR "libridge_inject.so is not installed in ${prefix}/lib, where bin/ridge looks for it")
  endif()
  # `ridge trace` of a program without CUDA: it finds the injection library beside itself (../lib),
  # runs the program and says that nothing was traced (exit 1); a missing library reads differently.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=RIDGE_INJECT_LIBRARY CUDA_VISIBLE_DEVICES=
                          ${prefix}/bin/ridge trace -- true
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT out MATCHES "no trace was written" OR out MATCHES "cannot find libridge_inject")
    message(FATAL_ERROR "the installed ridge trace does not find its injection library (${rc}):\n${out}")
  endif()
  message(STATUS "ok: installed ridge trace finds ${prefix}/lib/libridge_inject.so")
endif()

# 3. A consumer project against the prefix alone, for ridge's GPUs. The list goes in through an
# initial cache file: run() passes its arguments on as a list, which would split it.
file(WRITE ${WORK_DIR}/cuda_architectures.cmake
     "set(CMAKE_CUDA_ARCHITECTURES \"${CUDA_ARCHITECTURES}\" CACHE STRING \"\")\n")
run("configure examples/roofline_kernel against the installed package"
    ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${WORK_DIR}/example -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
      -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER} -C ${WORK_DIR}/cuda_architectures.cmake)
file(READ ${WORK_DIR}/example/CMakeCache.txt cache)
if(NOT cache MATCHES "ridge_DIR:PATH=${prefix}/")
  string(REGEX MATCH "ridge_DIR:PATH=[^\n]*" found "${cache}")
  message(FATAL_ERROR "the example found ridge elsewhere than the installed prefix: ${found}")
endif()
run("build examples/roofline_kernel" ${CMAKE_COMMAND} --build ${WORK_DIR}/example)

# 4. Run it. Without a GPU (every GPU hidden here) it must say so and exit 4, ridge's "no usable GPU".
execute_process(COMMAND ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES= ${WORK_DIR}/example/roofline_kernel 1024
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 4 OR NOT out MATCHES "needs a CUDA GPU")
  message(FATAL_ERROR "roofline_kernel without a GPU: expected exit 4 and 'needs a CUDA GPU', got ${rc}:\n${out}")
endif()
message(STATUS "ok: roofline_kernel without a GPU exits 4: ${out}")
