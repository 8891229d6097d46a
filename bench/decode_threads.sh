#!/usr/bin/env bash
# The barrier kernel with 512 threads per block (build/bin/ridge, 128 registers: it spills) against
# 256 threads per block with twice the weight rows per warp (build/bin/ridge_t256, built with
# RIDGE_FUSED_THREADS 256: 255 registers, no spill). GPT-2 decode tests of both builds, then
# `ridge decode` (graph, context 1024) interleaved.   bench/decode_threads.sh OUTDIR
set -uo pipefail
DIR=${1:-runs/decode_threads}
mkdir -p "$DIR"
timeout 200 ctest --test-dir build -L gpu --output-on-failure > "$DIR/gpu_tests.t512.txt" 2>&1
echo "gpu tests (512, whole suite) rc=$?: $(grep -E 'tests passed' "$DIR/gpu_tests.t512.txt")"
timeout 200 build/bin/gpu_tests_t256 --gtest_filter='Gpt2*' > "$DIR/gpu_tests.t256.txt" 2>&1
echo "gpu tests (256, Gpt2*) rc=$?: $(grep -E 'PASSED|FAILED' "$DIR/gpu_tests.t256.txt" | head -5 | tr '\n' ' ')"
d() {  # binary, label, then ridge decode arguments
  local bin=$1 label=$2; shift 2
  timeout 120 build/bin/$bin decode --mode graph --bandwidth 4490 --context 1024 --samples 10 "$@" \
    --json "$DIR/decode.$label.json" > "$DIR/decode.$label.txt" 2>&1
  echo "$label (rc=$?): $(grep -E '^ +[0-9]' "$DIR/decode.$label.txt" | tr -s ' ' | tr '\n' '|')"
}
for round in 0 1 2; do
  d ridge t512.b1.$round --batch 1
  d ridge_t256 t256.b1.$round --batch 1
done
for b in 4 8; do d ridge t512.b$b --batch $b; d ridge_t256 t256.b$b --batch $b; done
d ridge t512.fp32 --batch 1 --dtype fp32; d ridge_t256 t256.fp32 --batch 1 --dtype fp32
for model in medium xl; do d ridge t512.$model --model $model; d ridge_t256 t256.$model --model $model; done
