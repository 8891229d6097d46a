#!/usr/bin/env bash
# Copies what running ridge and its tests needs out of build/ (binaries, shared libraries,
# CTest files) into .device_carry/build, leaving object files behind: small enough for the
# device tool's 64 MiB limit. On the GPU machine: `ln -sfn .device_carry/build build`.
# --xz: also packs it into .device_carry/build.tar.xz (carry that when the directory is too big;
# unpack it there with `tar xJf .device_carry/build.tar.xz -C .device_carry`).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .device_carry/build && mkdir -p .device_carry
(cd build && find . \( -name '*.cmake' -not -path '*/CMakeFiles/*' \) -o -path './bin/*' -o -path './lib/*' \
   -o -path './tests/ridge_*_tests' -o -path './Testing/*' | while read -r f; do
     [ -f "$f" ] && mkdir -p "../.device_carry/build/$(dirname "$f")" && cp -p "$f" "../.device_carry/build/$f"
   done)
strip --strip-debug .device_carry/build/bin/* .device_carry/build/tests/ridge_*_tests 2>/dev/null || true
du -sh .device_carry/build
rm -f .device_carry/build.tar.xz
if [ "${1:-}" = --xz ]; then
  tar cJf .device_carry/build.tar.xz -C .device_carry build
  du -sh .device_carry/build.tar.xz
fi
