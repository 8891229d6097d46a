#!/usr/bin/env bash
# The tracer's closing device run: 1,000,000 empty kernels untraced vs traced and written, then the
# overhead of `ridge trace` (its defaults) and torch.profiler on the small, medium and GPU-bound
# large PyTorch steps, interleaved (bench/trace_pytorch_env.sh). Usage: bash bench/trace_closing.sh OUT_DIR
set -u
cd "$(dirname "$0")/.."
out=${1:-runs/trace_closing}
mkdir -p "$out/many"
echo "== 1000000 empty kernels: untraced, then traced and written ($(date -u +%T))"
t0=$(date +%s.%N); timeout 30 build/bin/trace_target --many-kernels 1000000 > "$out/many/untraced.txt"; t1=$(date +%s.%N)
timeout 60 build/bin/ridge trace -o /tmp/many.trace.json --json "$out/many/summary.json" \
  -- build/bin/trace_target --many-kernels 1000000 > "$out/many/traced.txt" 2>&1
t2=$(date +%s.%N)
ls -l /tmp/many.trace.json >> "$out/many/traced.txt"; rm -f /tmp/many.trace.json
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "{\"kernels\": 1000000, \"untraced_s\": %.3f, \"traced_s\": %.3f}\n", b - a, c - b }' \
  | tee "$out/many/timing.json"
tail -n 6 "$out/many/traced.txt"
for size in small medium large; do
  steps=30; [ $size = large ] && steps=20
  echo "== $size: untraced / ridge trace / torch.profiler, interleaved ($(date -u +%T))"
  OUT=$out SIZES=$size REPEATS=2 STEPS=$steps WARMUP=5 CONFIGS="untraced cli torch" \
    timeout 80 taskset -c 2-7 bash bench/trace_pytorch_env.sh build 2>&1 | grep -v "Warning\|_warn_once"
done
