#!/usr/bin/env bash
# device run 2: tracer GPU tests (graph launches, every --api level), then overhead of the default
# (--api selected) vs the old set (--api most) vs torch.profiler, interleaved, pinned to cores 2-5.
# Ran from a folder holding bin/ridge, lib/libridge_inject.so and tests/ridge_gpu_tests (the device carry).
cd "${1:-$(dirname "$0")}"
timeout 45 ./tests/ridge_gpu_tests --gtest_filter='TraceGpu.*' 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|kernel without" | head -30
export STEPS=60
SIZES=small REPEATS=3 CONFIGS="selected:--api=selected most:--api=most" timeout 120 taskset -c 2-5 bash bench/trace_pytorch_overhead.sh . 2>&1 | grep -v "Warning\|_warn_once"
OUT=$OUT/m SIZES=medium REPEATS=2 CONFIGS="selected:--api=selected" timeout 62 taskset -c 2-5 bash bench/trace_pytorch_overhead.sh . 2>&1 | grep -v "Warning\|_warn_once"
