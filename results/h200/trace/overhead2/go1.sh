#!/usr/bin/env bash
# tracer2 device call 1: CUPTI setting sweep on the C++ probe, PyTorch small per setting, sync count
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; nproc
R=/tmp/tracer2_r1; rm -rf $R; mkdir -p $R
OUT=$R ROUNDS=2 timeout 80 taskset -c 2-5 bash bench/trace_overhead_cpp.sh . > $R/probe_log.txt 2>&1
tail -18 $R/probe_log.txt
OUT=$R SIZES=small REPEATS=2 STEPS=40 CONFIGS="untraced default kernel_nosub api_none" timeout 72 taskset -c 2-5 bash bench/trace_pytorch_env.sh . > $R/pytorch_log.txt 2>&1
grep -v "Warn\|warn" $R/pytorch_log.txt | tail -10
timeout 28 taskset -c 2-5 python3 bench/trace_pytorch.py run --size medium --steps 10 --warmup 3 --sync-debug --out $R/sync_medium.json > $R/sync_log.txt 2>&1
grep "trace_pytorch" $R/sync_log.txt
tar czf $OUT/r1.tgz -C /tmp tracer2_r1
