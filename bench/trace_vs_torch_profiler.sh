#!/usr/bin/env bash
# ridge trace against PyTorch's profiler (torch.profiler) on the GPU machine, and the tracer's
# throughput limit.
#
#   bench/trace_vs_torch_profiler.sh [BUILD_DIR]   (default: build)
#   results: $OUT/trace_pytorch or runs/trace_pytorch
#
# (a) PyTorch's profiler on an unmodified training loop: kernels per step and GPU busy per step;
# (b) `ridge trace` on the same program: the same numbers from ridge's trace (same counting rule);
# (c) overhead: median step time untraced vs ridge-traced vs torch.profiler, side by side, twice each;
# (d) 1,000,000 empty kernels traced: dropped records and the time tracing + writing adds (KERNELS=0: skipped).
# Needs: python3 with torch on a CUDA GPU; the ridge build (bin/ridge, bin/trace_target, lib/libridge_inject.so).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
RIDGE="$BUILD/bin/ridge"
TARGET="$BUILD/bin/trace_target"
PY=${PYTHON:-python3}
BENCH="$ROOT/bench/trace_vs_torch_profiler.py"
DIR="${OUT:-$ROOT/runs}/trace_pytorch"
STEPS=${STEPS:-30}
WARMUP=${WARMUP:-10}
REPEATS=2
KERNELS=${KERNELS:-1000000}
mkdir -p "$DIR"
for f in "$RIDGE" "$TARGET" "$BUILD/lib/libridge_inject.so"; do
  [[ -e "$f" ]] || { echo "missing $f: build ridge first" >&2; exit 2; }
done
"$PY" -c "import torch; assert torch.cuda.is_available(); print('torch', torch.__version__, torch.cuda.get_device_name(0))"
{ echo "# bench/trace_vs_torch_profiler.sh $(date -u +%FT%TZ)"; "$RIDGE" --version; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader || true; } > "$DIR/environment.txt"

for size in small medium; do
  echo "== $size: kernels per step, ridge trace vs torch.profiler"
  "$PY" "$BENCH" run --size "$size" --steps "$STEPS" --warmup "$WARMUP" --mode torch \
      --torch-trace "$DIR/torch_$size.trace.json" --out "$DIR/torch_$size.0.steps.json"
  "$RIDGE" trace --profiler-range --step-range step -o "$DIR/ridge_$size.trace.json" --json "$DIR/ridge_$size.summary.json" \
      -- "$PY" "$BENCH" run --size "$size" --steps "$STEPS" --warmup "$WARMUP" --mode ridge --out "$DIR/ridge_$size.0.steps.json" \
      > "$DIR/ridge_$size.txt"
  "$PY" "$BENCH" count "$DIR/torch_$size.trace.json" --out "$DIR/torch_$size.count.json"
  "$PY" "$BENCH" count "$DIR/ridge_$size.trace.json" --out "$DIR/ridge_$size.count.json"
  # ridge's own analysis of PyTorch's trace: one analysis for both traces.
  "$RIDGE" trace --analyze "$DIR/torch_$size.trace.json" --step-range step --json "$DIR/torch_$size.ridge_analysis.json" \
      > "$DIR/torch_$size.ridge_analysis.txt"

  echo "== $size: overhead (untraced, ridge trace, torch.profiler; twice each, interleaved)"
  for rep in $(seq 0 $((REPEATS - 1))); do
    "$PY" "$BENCH" run --size "$size" --steps "$STEPS" --warmup "$WARMUP" --mode plain --out "$DIR/plain_$size.$rep.steps.json"
    if [[ $rep -gt 0 ]]; then
      "$RIDGE" trace --profiler-range --step-range step -o "" --json "$DIR/ridge_$size.$rep.summary.json" \
          -- "$PY" "$BENCH" run --size "$size" --steps "$STEPS" --warmup "$WARMUP" --mode ridge --out "$DIR/ridge_$size.$rep.steps.json" \
          > /dev/null
      "$PY" "$BENCH" run --size "$size" --steps "$STEPS" --warmup "$WARMUP" --mode torch \
          --torch-trace "$DIR/torch_$size.$rep.trace.json" --out "$DIR/torch_$size.$rep.steps.json"
      rm -f "$DIR/torch_$size.$rep.trace.json"
    fi
  done
done

if [[ $KERNELS -gt 0 ]]; then
  echo "== $KERNELS empty kernels: untraced, then traced and written"
  t0=$(date +%s.%N); "$TARGET" --many-kernels "$KERNELS" | tee "$DIR/many.untraced.txt"; t1=$(date +%s.%N)
  BIG=$(mktemp -d)
  t2=$(date +%s.%N)
  "$RIDGE" trace -o "$BIG/many.trace.json" --json "$DIR/many.summary.json" -- "$TARGET" --many-kernels "$KERNELS" > "$DIR/many.traced.txt"
  t3=$(date +%s.%N)
  ls -l "$BIG/many.trace.json" | tee -a "$DIR/many.traced.txt"
  rm -rf "$BIG"
  "$PY" - "$DIR/many.timing.json" "$KERNELS" "$t0" "$t1" "$t2" "$t3" <<'PYEOF'
import json, sys
path, n, t0, t1, t2, t3 = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:])
json.dump({"kernels": n, "untraced_s": t1 - t0, "traced_s": t3 - t2}, open(path, "w"), indent=1)
PYEOF
  tail -n 25 "$DIR/many.traced.txt"

fi

echo "== summary ($DIR)"
"$PY" "$BENCH" report "$DIR" --repeats "$REPEATS"
