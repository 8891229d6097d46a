# Warnings, sanitizers and fuzzing (docs/hardening.md). Included by the top-level CMakeLists before
# any target exists; ridge_apply_warnings() runs at its end, once every target is known.

option(RIDGE_WARNINGS_AS_ERRORS "Treat compiler warnings (host and nvcc) as errors; CI turns it on" OFF)
set(RIDGE_SANITIZE "" CACHE STRING
    "Sanitizers to build every target with, e.g. address,undefined (UBSan findings are fatal)")
option(RIDGE_FUZZ "Build the libFuzzer targets under fuzz/ (needs clang++ as the C++ compiler)" OFF)

if(RIDGE_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "RIDGE_FUZZ needs clang (libFuzzer), but the C++ compiler is ${CMAKE_CXX_COMPILER_ID} "
                      "(${CMAKE_CXX_COMPILER}). Configure a separate build with -DCMAKE_CXX_COMPILER=clang++, "
                      "or run scripts/fuzz.sh, which does.")
endif()

# The sanitizers: fuzzing brings its own (address,undefined), else RIDGE_SANITIZE's list.
set(ridge_sanitizers "${RIDGE_SANITIZE}")
if(RIDGE_FUZZ AND ridge_sanitizers STREQUAL "")
  set(ridge_sanitizers "address,undefined")
endif()
if(NOT ridge_sanitizers STREQUAL "")
  # One -fsanitize= per sanitizer: nvcc splits -Xcompiler values at commas, so "address,undefined"
  # must not reach it as one flag.
  string(REPLACE "," ";" ridge_sanitizer_list "${ridge_sanitizers}")
  set(ridge_sanitize_flags -fno-omit-frame-pointer -fno-sanitize-recover=all)
  foreach(sanitizer ${ridge_sanitizer_list})
    list(APPEND ridge_sanitize_flags -fsanitize=${sanitizer})
  endforeach()
  if(RIDGE_FUZZ)
    # Libraries get the fuzzer's coverage hooks; only the fuzz targets link libFuzzer's main.
    list(APPEND ridge_sanitize_flags -fsanitize=fuzzer-no-link)
  endif()
  string(REPLACE ";" "," ridge_sanitize_xcompiler "${ridge_sanitize_flags}")
  # CUDA host code is instrumented too (through nvcc's host compiler), so objects of both languages
  # agree on the sanitizers' container annotations.
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${ridge_sanitize_flags}>"
                      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${ridge_sanitize_xcompiler}>")
  add_link_options("$<$<LINK_LANGUAGE:CXX>:-fsanitize=${ridge_sanitizers}>")
endif()

# Every target of this project (not the third-party ones, e.g. nanobind's) gets the warnings.
# -Wno-missing-field-initializers: ridge fills option structs with designated initializers
# (`PlotSeries{.name = key}`), leaving the rest at their defaults on purpose; GCC before 13 warns there.
set(RIDGE_CXX_WARNINGS -Wall -Wextra -Wno-missing-field-initializers)
# GCC 13's -Wdangling-reference flags every reference bound to what a function taking a temporary
# returns (catalog_entry("h200-sxm") returns an entry of the static catalog): false alarms here.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 13)
  list(APPEND RIDGE_CXX_WARNINGS -Wno-dangling-reference)
endif()
# GCC's flow warnings are unreliable under the sanitizers' instrumentation (its manual says so for
# -fsanitize=address): in an instrumented build, libstdc++'s own <regex> trips -Wmaybe-uninitialized.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT ridge_sanitizers STREQUAL "")
  list(APPEND RIDGE_CXX_WARNINGS -Wno-maybe-uninitialized)
endif()
function(ridge_apply_warnings_in dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$"
       OR target MATCHES "^nanobind")
      continue()
    endif()
    string(REPLACE ";" "," xcompiler "${RIDGE_CXX_WARNINGS}")
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${RIDGE_CXX_WARNINGS}>"
                                             "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${xcompiler}>")
    if(RIDGE_WARNINGS_AS_ERRORS)
      # nvcc: all-warnings covers its own and the device compiler's; -Xcompiler the host compiler's.
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Werror>"
                                               "$<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings;-Xcompiler=-Werror>")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    ridge_apply_warnings_in(${subdir})
  endforeach()
endfunction()
function(ridge_apply_warnings)
  ridge_apply_warnings_in(${PROJECT_SOURCE_DIR})
endfunction()
