#!/bin/bash
# Ran from a folder holding bin/ridge and bin/ridge_gpu_tests (the device carry).
cd "${1:-$(dirname "$0")}"
echo "== tests (fused by default)"
timeout 45 ./bin/ridge_gpu_tests --gtest_filter='Gpt2*:*Gpt2Decode*' > tests.log 2>&1; echo "rc=$?"
grep -E "FAILED|PASSED|Failure|Expected|Which is|Value of|error|tests ran" tests.log | head -20
d() { timeout 20 ./bin/ridge decode --batch 1 --context 1024 --mode graph --bandwidth 4490 2>&1 | grep -E "^ +[0-9]"; }
echo "== default"; d
echo "== +1 empty barrier per phase"; RIDGE_GPT2_FUSED_EXTRA_BARRIERS=1 d
echo "== +4 empty barriers per phase"; RIDGE_GPT2_FUSED_EXTRA_BARRIERS=4 d
echo "== spin sleep 32 ns"; RIDGE_GPT2_FUSED_SPIN_NS=32 d
echo "== 66 blocks"; RIDGE_GPT2_FUSED_BLOCKS=66 d
echo "== 100 blocks"; RIDGE_GPT2_FUSED_BLOCKS=100 d
echo "== chain"; RIDGE_GPT2_FUSED=0 d
