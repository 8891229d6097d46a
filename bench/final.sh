#!/usr/bin/env bash
# The closing device run: GPU tests, report + compare (twice, and once deliberately slowed), and
# the decode headline. Usage (GPU machine, build carried): OUT=<folder> bash bench/final.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-runs}
mkdir -p "$out"
export RIDGE_CACHE_DIR=${RIDGE_CACHE_DIR:-$out/cache}
ctest --test-dir build -L gpu --output-on-failure -j1 > "$out/ctest_gpu.txt" 2>&1; echo "ctest rc=$?" >> "$out/ctest_gpu.txt"
grep -E "tests passed|\(Failed\)|rc=" "$out/ctest_gpu.txt"
OUT="$out" bash bench/report_compare.sh > "$out/report_compare.log" 2>&1; tail -9 "$out/report_compare.log"
build/bin/ridge decode --batch 1 --context 1024 --mode eager,graph --json "$out/decode_b1.json" > "$out/decode_b1.txt" 2>&1
tail -12 "$out/decode_b1.txt"
build/bin/ridge profile --context 1024 -o "$out/profile/trace.json" > "$out/profile.txt" 2>&1; head -14 "$out/profile.txt"
