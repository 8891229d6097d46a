#!/usr/bin/env bash
# The grid hand-over on the H200: its floor (bench/handover_floor.cu, built here with nvcc), the
# decode step's GPU tests and `ridge decode` (bf16, batch 1, context 1024, graph) under each
# RIDGE_GPT2_FUSED_HANDOVER (0 counter, 1 red, 2 split8, 3 flags), interleaved, and the step at
# the larger GPT-2 presets.     bench/handover.sh OUTDIR     (from the repo root)
# RIDGE_GPT2_FUSED_HANDOVER exists on branch handover-variants only; on main every run below uses
# main's hand-over (the counter).
set -uo pipefail
DIR=${1:-runs/handover}
mkdir -p "$DIR"
RIDGE=build/bin/ridge
nvcc -O3 -std=c++17 -arch=sm_90 -o "$DIR/handover_floor" bench/handover_floor.cu || exit 1
echo "== floor"
timeout 120 "$DIR/handover_floor" 768 9 | tee "$DIR/floor.txt"
for h in 0 1 2 3; do
  RIDGE_GPT2_FUSED_HANDOVER=$h timeout 120 ctest --test-dir build -L gpu -R Gpt2 --output-on-failure \
    > "$DIR/gpu_tests.handover$h.txt" 2>&1
  echo "gpu tests handover=$h rc=$?: $(grep -E 'tests passed' "$DIR/gpu_tests.handover$h.txt")"
done
d() {  # label, then ridge decode arguments
  local label=$1; shift
  timeout 90 $RIDGE decode --mode graph --bandwidth 4490 "$@" > "$DIR/decode.$label.txt" 2>&1
  echo "$label (rc=$?): $(grep -E '^ +[0-9]' "$DIR/decode.$label.txt" | tr -s ' ' | tr '\n' '|')"
}
for round in 0 1 2; do
  for h in 0 1 2 3; do
    RIDGE_GPT2_FUSED_HANDOVER=$h d handover$h.$round --batch 1
  done
done
for h in 0 3; do RIDGE_GPT2_FUSED_HANDOVER=$h d handover$h.b4 --batch 4; done
for model in medium large xl; do d model.$model --model $model --batch 1; done
