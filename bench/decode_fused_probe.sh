#!/bin/bash
# Probe of the fused decode step on the GPU machine: its GPU tests, then `ridge decode` (GPT-2
# small, graph replay, batch 1, context 1024 unless said) under the fused step's switches.
# Usage: bash bench/decode_fused_probe.sh [BUILD_DIR]   (bin/ridge and tests/ridge_gpu_tests under it)
build=${1:-build}
echo "== tests (fused by default)"
timeout 60 "$build/tests/ridge_gpu_tests" --gtest_filter='Gpt2*:*Gpt2Decode*' > "${OUT:-.}/tests.log" 2>&1; echo "rc=$?"
grep -E "FAILED|PASSED|Failure|Expected|Which is|Value of|error|tests ran" "${OUT:-.}/tests.log" | head -20
export build
d() { timeout 30 "$build/bin/ridge" decode --batch "${BATCH:-1}" --context "${CTX:-1024}" --dtype "${DTYPE:-bf16}" \
        --mode graph --bandwidth 4490 2>&1 | grep -E "^ +[0-9]|rror"; }
v() { echo "== $*"; env "$@" bash -c "$(declare -f d); d"; }
export -f d 2>/dev/null
v RIDGE_GPT2_FUSED_SMEM_TILES=1
v RIDGE_GPT2_FUSED_SMEM_TILES=0
v RIDGE_GPT2_FUSED_SMEM_TILES=1 RIDGE_GPT2_FUSED_SPIN_NS=200
v RIDGE_GPT2_FUSED_SMEM_TILES=1 RIDGE_GPT2_FUSED_SPIN_NS=50
v RIDGE_GPT2_FUSED_SMEM_TILES=1 RIDGE_GPT2_FUSED_GATHER_THREADS=256
v RIDGE_GPT2_FUSED_SMEM_TILES=1 RIDGE_GPT2_FUSED_PREFETCH=2
v RIDGE_GPT2_FUSED_SMEM_TILES=1 CTX=128
v RIDGE_GPT2_FUSED_SMEM_TILES=1 DTYPE=fp32
v RIDGE_GPT2_FUSED_SMEM_TILES=0 DTYPE=fp32
v RIDGE_GPT2_FUSED_SMEM_TILES=1 BATCH=2
v RIDGE_GPT2_FUSED_SMEM_TILES=1 BATCH=8
v RIDGE_GPT2_FUSED_SMEM_TILES=1 BATCH=8 RIDGE_GPT2_FUSED=0
v RIDGE_GPT2_FUSED=0
echo "== tests with weight tiles in registers only"
RIDGE_GPT2_FUSED_SMEM_TILES=0 timeout 60 "$build/tests/ridge_gpu_tests" \
  --gtest_filter='Gpt2*:*Gpt2Decode*' 2>&1 | grep -E "FAILED|PASSED|Failure" | head
