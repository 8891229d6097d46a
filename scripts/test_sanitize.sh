#!/usr/bin/env bash
# Builds the unit tests and the ridge tool with AddressSanitizer and UndefinedBehaviorSanitizer
# (in build-sanitize/, warnings as errors) and runs the unit and CLI tests there (GPU tests are left
# out: the sanitizer build is for CPU code). Any finding fails its test: UBSan is fatal
# (-fno-sanitize-recover=all), and a sanitizer exits 86 (ASan, LeakSanitizer) or 87 (UBSan), an exit
# code no test expects. Extra CMake arguments: RIDGE_CMAKE_ARGS. See docs/hardening.md.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
build=${RIDGE_SANITIZE_BUILD:-build-sanitize}
read -r -a cmake_args <<<"${RIDGE_CMAKE_ARGS:-}"
# PTX only (90-virtual): no kernel runs in these tests, and skipping ptxas halves the CUDA build.
# -O1 -g1: the optimization ASan's docs advise and line tables for its stack traces. GCC compiles the
# instrumented code in half the time it takes at -O2 -g (test_compare.cpp: 34 s against 67 s here).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRIDGE_SANITIZE=address,undefined \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DRIDGE_WARNINGS_AS_ERRORS=ON -DCMAKE_CUDA_ARCHITECTURES=90-virtual "${cmake_args[@]}" >/dev/null
cmake --build "$build" --target ridge_unit_tests ridge_public_headers_test ridge_cli ridge_inject svg_overlaps -j "$(nproc)"

# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be (a GPU machine).
export ASAN_OPTIONS="${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:exitcode=86}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=87}"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -L 'unit|cli' -LE gpu
