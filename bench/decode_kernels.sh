#!/usr/bin/env bash
# The decode step's kernel choices side by side in one session: the GPU test suite, then
# `ridge decode` (graph, batch 1) for --kernel auto, barrier and chain, fp32, and `ridge profile
# --kernel chain` (the launch gaps).   bench/decode_kernels.sh OUTDIR   (from the repo root)
set -uo pipefail
DIR=${1:-runs/decode_kernels}
mkdir -p "$DIR"
RIDGE=build/bin/ridge
echo "== GPU tests"
timeout 300 ctest --test-dir build -L gpu --output-on-failure > "$DIR/gpu_tests.txt" 2>&1
echo "rc=$?"; grep -E "tests passed|Failed|\*\*\*" "$DIR/gpu_tests.txt" | head -20
d() {  # label, then ridge decode arguments
  local label=$1; shift
  timeout 120 $RIDGE decode --mode graph --bandwidth 4490 "$@" > "$DIR/decode.$label.txt" 2>&1
  echo "$label (rc=$?): $(grep -E '^ +[0-9]' "$DIR/decode.$label.txt" | tr -s ' ' | tr '\n' '|')"
}
for round in 0 1; do
  d auto.$round --kernel auto
  d barrier.$round --kernel barrier
  d chain.$round --kernel chain
done
d fp32 --dtype fp32
timeout 120 $RIDGE profile --kernel chain --context 128 -o "$DIR/trace_chain.json" > "$DIR/profile.chain.txt" 2>&1
echo "profile chain rc=$?"; head -20 "$DIR/profile.chain.txt"
gzip -f "$DIR"/trace_chain*.json 2>/dev/null
