#!/usr/bin/env bash
# tracer2 device call 2: settings without whole-domain hooks, C++ probe and PyTorch small
cd "$(dirname "$0")"
R=/tmp/tracer2_r2; rm -rf $R; mkdir -p $R
OUT=$R ROUNDS=2 CONFIGS="untraced kernel_memcpy kernel_memcpy_nvtx nosync nosync_nonvtx driver_nosync driver_nosync_nonvtx default" \
  timeout 62 taskset -c 2-5 bash bench/trace_overhead_cpp.sh . > $R/probe_log.txt 2>&1
tail -12 $R/probe_log.txt
OUT=$R SIZES=small REPEATS=2 STEPS=40 CONFIGS="untraced default nosync driver_nosync kernel_memcpy_nvtx" timeout 118 taskset -c 2-5 bash bench/trace_pytorch_env.sh . > $R/pytorch_log.txt 2>&1
grep -v "Warn\|warn" $R/pytorch_log.txt | tail -22
tar czf $OUT/r2.tgz -C /tmp tracer2_r2
