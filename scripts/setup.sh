#!/usr/bin/env bash
# Makes sure the tools and libraries building ridge needs are there, installs only what is missing
# (through apt-get, on Debian/Ubuntu), then configures and builds into ./build. Safe to run again.
#
# Needs: CMake >= 3.25, Ninja, a C++20 compiler, the CUDA 13 toolkit (nvcc; never installed here),
# and the CMake packages CLI11, nlohmann_json (>= 3.10), fmt, ZLIB and GTest (tests only). Each is looked
# for by what it provides (a command on PATH, a package CMake finds), wherever it came from: pip,
# conda, a source install or apt. Extra CMake arguments: RIDGE_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=..."
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/apt.sh  # say, want, install_missing
read -r -a cmake_args <<<"${RIDGE_CMAKE_ARGS:-}"

cmake_ok() {
  command -v cmake >/dev/null 2>&1 || return 1
  local v; v=$(cmake --version | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p')
  [ -n "$v" ] && [ "$(printf '%s\n' 3.25 "$v" | sort -V | head -n1)" = 3.25 ]
}
ninja_ok() { command -v ninja >/dev/null 2>&1; }
cxx_ok() {
  if [ -n "${CXX:-}" ]; then command -v "${CXX%% *}" >/dev/null 2>&1; return; fi
  command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || command -v clang++ >/dev/null 2>&1
}

# The CMake packages the build asks for, looked up by CMake itself (any prefix it searches, plus
# CMAKE_PREFIX_PATH from the environment or RIDGE_CMAKE_ARGS). Prints the missing ones' names.
cmake_packages_missing() {
  local probe; probe=$(mktemp -d)
  local tests=ON
  [[ " ${RIDGE_CMAKE_ARGS:-} " == *"-DRIDGE_BUILD_TESTS=OFF"* ]] && tests=OFF
  cat >"$probe/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(ridge_setup_probe LANGUAGES C CXX)  # CXX: CMake then knows the multiarch lib dirs; C: for MPI
set(missing "")
find_package(CLI11 QUIET)
if(NOT CLI11_FOUND)
  list(APPEND missing CLI11)
endif()
find_package(nlohmann_json 3.10 QUIET)
if(NOT nlohmann_json_FOUND)
  list(APPEND missing nlohmann_json)
endif()
find_package(fmt QUIET)
if(NOT fmt_FOUND)
  list(APPEND missing fmt)
endif()
find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  list(APPEND missing ZLIB)
endif()
find_package(MPI COMPONENTS C QUIET)
if(NOT MPI_C_FOUND)
  list(APPEND missing MPI)
endif()
find_package(SQLite3 QUIET)
if(NOT SQLite3_FOUND)
  list(APPEND missing SQLite3)
endif()
if(PROBE_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    list(APPEND missing GTest)
  endif()
endif()
file(WRITE ${CMAKE_BINARY_DIR}/missing.txt "${missing}")
EOF
  if cmake -S "$probe" -B "$probe/build" -DPROBE_TESTS=$tests "${cmake_args[@]}" >"$probe/log" 2>&1; then
    tr ';' ' ' <"$probe/build/missing.txt"
  else
    say "could not run CMake to look for packages:"; cat "$probe/log" >&2; rm -rf "$probe"; exit 1
  fi
  rm -rf "$probe"
}

apt_name() {
  case $1 in
    CLI11) echo libcli11-dev ;;
    nlohmann_json) echo nlohmann-json3-dev ;;
    fmt) echo libfmt-dev ;;
    ZLIB) echo zlib1g-dev ;;
    GTest) echo libgtest-dev ;;
    MPI) echo libopenmpi-dev ;;
    SQLite3) echo libsqlite3-dev ;;
  esac
}

check_tools() {
  cmake_ok || want cmake "CMake >= 3.25 (cmake on PATH: $(command -v cmake >/dev/null 2>&1 && cmake --version | head -n1 || echo none))"
  ninja_ok || want ninja-build "Ninja (ninja on PATH)"
  cxx_ok || want g++ "a C++ compiler (\$CXX, c++, g++ or clang++ on PATH)"
}

check_tools
install_missing
# apt's CMake can still be older than 3.25 (Ubuntu 22.04 ships 3.22): say so rather than fail later.
check_tools
if [ ${#missing[@]} -gt 0 ]; then
  say "still missing after apt-get: $(listed "${missing[@]}") (pip install cmake ninja gives current versions)"; exit 1
fi

for pkg in $(cmake_packages_missing); do
  [ "$pkg" = MPI ] || [ "$pkg" = SQLite3 ] || want "$(apt_name "$pkg")" "CMake package $pkg"
done
install_missing
left=$(cmake_packages_missing | tr ' ' '\n' | { grep -vxE 'MPI|SQLite3' || true; } | tr '\n' ' ' | sed 's/ *$//')
if [ -n "$left" ]; then say "CMake still does not find: $left (set CMAKE_PREFIX_PATH to where they are)"; exit 1; fi
# MPI is optional: it builds libridge_mpi.so, the plugin `mpirun -np N ridge collectives` loads.
if cmake_packages_missing | grep -qw MPI; then
  want libopenmpi-dev "MPI headers (optional: the plugin for mpirun launches)"
  ( install_missing ) || say "continuing without MPI: libridge_mpi.so is not built (threads launch still works)"
  apt_need=(); missing=()
fi
# SQLite is wanted (the run history, `ridge history`) but optional: where apt-get cannot install
# it (no root, no network: the GPU machine) the build goes on without the history.
if cmake_packages_missing | grep -qw SQLite3; then
  want libsqlite3-dev "SQLite headers (for the run history, ridge history)"
  ( install_missing ) || say "continuing without SQLite: ridge history is not built (install libsqlite3-dev and rebuild)"
  apt_need=(); missing=()
fi
# Chromium runs the history page's test in a headless browser (ctest cli.history_page_browser);
# optional like SQLite: without it that test is skipped.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 && [ -z "${RIDGE_CHROMIUM:-}" ]; then
  want chromium "Chromium (optional: the history page's headless browser test)"
  ( install_missing ) || say "continuing without Chromium: the history page's browser test will be skipped (apt-get install chromium)"
  apt_need=(); missing=()
fi

if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH
  else say "nvcc not found; install the CUDA toolkit 13 (https://developer.nvidia.com/cuda-downloads)"; exit 1; fi
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >/dev/null
cmake --build build -j "$(nproc)"
