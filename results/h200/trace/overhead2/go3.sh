#!/usr/bin/env bash
# tracer2 device call 3: TraceGpu tests with the new defaults, then medium and large PyTorch steps
# untraced / `ridge trace` (new defaults) / torch.profiler, interleaved, pinned to cores 2-5
cd "$(dirname "$0")"
R=/tmp/tracer2_r3; rm -rf $R; mkdir -p $R
timeout 35 ./tests/ridge_gpu_tests --gtest_filter='TraceGpu.*' > $R/gpu_tests.txt 2>&1
grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is" $R/gpu_tests.txt | head -20
OUT=$R SIZES=medium REPEATS=2 STEPS=30 WARMUP=8 CONFIGS="untraced cli torch" timeout 72 taskset -c 2-5 bash bench/trace_pytorch_env.sh . > $R/medium_log.txt 2>&1
grep -v "Warn\|warn" $R/medium_log.txt | tail -12
OUT=$R SIZES=large REPEATS=2 STEPS=20 WARMUP=5 CONFIGS="untraced cli torch" timeout 75 taskset -c 2-5 bash bench/trace_pytorch_env.sh . > $R/large_log.txt 2>&1
grep -v "Warn\|warn" $R/large_log.txt | tail -12
tar czf $OUT/r3.tgz -C /tmp tracer2_r3
