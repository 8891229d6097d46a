#!/usr/bin/env bash
# Installs what building ridge needs (Debian/Ubuntu packages; the CUDA toolkit must already be
# installed) and configures + builds into ./build. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for pkg in cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH
  else echo "setup: nvcc not found; install the CUDA toolkit 13 (https://developer.nvidia.com/cuda-downloads)" >&2; exit 1; fi
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${RIDGE_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
