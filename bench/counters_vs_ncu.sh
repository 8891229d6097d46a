#!/usr/bin/env bash
# Hardware counters per kernel (`ridge trace --counters roofline`) on the GPU machine, side by side:
#   known   ridge's stream kernels at 2^28 elements and a BF16 GEMM at 4096^3 against the bytes
#           and FLOPs they must do (within 1%);
#   gpt2    a Hugging Face GPT-2 small BF16 decode loop plus a Triton add (bench/counters_workload.py):
#           traced without counters, traced with counters on steps 10..12, and run untraced;
#   timing  kernel time per step after the window, with and without counters (within 1%);
#   ncu     (STAGE=ncu or all) Nsight Compute on the same steps and metrics (--clock-control none):
#           DRAM bytes and FLOPs of every kernel with >= 1 MB of DRAM traffic within 2%, and the
#           wall time of both.
# Usage: [STAGE=ridge|ncu|all] [OUT=dir] bench/counters_vs_ncu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
RIDGE=${RIDGE:-build/bin/ridge}
PY=${PYTHON:-python3}
OUT=${OUT:-runs/counters-$(date -u +%Y%m%dT%H%M%SZ)}
STAGE=${STAGE:-all}
mkdir -p "$OUT"
log() { echo "== $*" >&2; }
# seconds NAME CMD...: runs CMD and writes its wall time to $OUT/NAME.seconds.
seconds() {
  local name=$1; shift
  local start; start=$(date +%s%N)
  "$@"; local rc=$?
  awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }' > "$OUT/$name.seconds"
  return $rc
}

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv || true
  "$RIDGE" --version
  ncu --version | tail -1 || true
} > "$OUT/environment.txt" 2>&1

if [[ $STAGE == ridge || $STAGE == all ]]; then
  log "known counts: stream kernels at 2^28, BF16 GEMM at 4096^3"
  "$RIDGE" trace --counters roofline -o "$OUT/stream.json" -- "$RIDGE" bandwidth --ops add,copy,scale,triad,read \
    --variants vec4 --sizes 2^28 --method events --samples 3 --warmup 1 --ceilings none > "$OUT/stream.txt" 2>&1
  "$RIDGE" trace --counters roofline -o "$OUT/gemm.json" -- "$RIDGE" matmul --dtypes bf16 --sizes 4096 \
    --method events --samples 3 --warmup 1 --ceilings none > "$OUT/gemm.txt" 2>&1
  $PY bench/counters_check.py known "$OUT/stream.json" "$OUT/gemm.json" | tee "$OUT/known.txt"

  log "GPT-2 decode + Triton: untraced, traced, traced with counters on steps 10..12"
  seconds untraced $PY bench/counters_workload.py > "$OUT/gpt2_untraced.txt" 2>&1
  seconds plain "$RIDGE" trace --step-range step -o "$OUT/gpt2_plain.json" -- $PY bench/counters_workload.py \
    > "$OUT/gpt2_plain.txt" 2>&1
  seconds counters "$RIDGE" trace --counters roofline --counters-steps 10..12 --step-range step \
    -o "$OUT/gpt2_counters.json" -- $PY bench/counters_workload.py > "$OUT/gpt2_counters.txt" 2>&1
  $PY bench/counters_check.py timing "$OUT/gpt2_plain.json" "$OUT/gpt2_counters.json" | tee "$OUT/timing.txt"
fi

if [[ $STAGE == ncu || $STAGE == all ]]; then
  [[ -f $OUT/gpt2_counters.json ]] || { log "ncu needs the ridge stage's gpt2_counters.json in $OUT"; exit 1; }
  metrics=$($PY -c "import json,sys; print(','.join(json.load(open(sys.argv[1]))['ridge']['counters']['metrics']))" \
    "$OUT/gpt2_counters.json")
  log "Nsight Compute on the same steps and metrics: $metrics"
  seconds ncu ncu --clock-control none --nvtx --nvtx-include "profiled/" --metrics "$metrics" --csv --page raw \
    --print-units base --log-file "$OUT/ncu.csv" $PY bench/counters_workload.py > "$OUT/gpt2_ncu.txt" 2>&1
  $PY bench/counters_check.py ncu "$OUT/gpt2_counters.json" "$OUT/ncu.csv" | tee "$OUT/vs_ncu.txt"
fi

log "wall seconds"
for f in "$OUT"/*.seconds; do echo "$(basename "$f" .seconds): $(cat "$f") s"; done | tee "$OUT/wall.txt"
