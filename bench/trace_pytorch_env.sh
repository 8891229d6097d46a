#!/usr/bin/env bash
# The PyTorch training step of bench/trace_pytorch.py untraced, under libridge_inject.so with the
# settings of bench/trace_overhead_settings.sh, and under torch.profiler (label "torch"),
# interleaved; prints median step time, host enqueue time per step and kernels per step.
#
#   bench/trace_pytorch_env.sh [FOLDER]    FOLDER holds lib/libridge_inject.so (and bin/ridge for
#                                          label "cli": `ridge trace` with its defaults)
#   SIZES="small"  CONFIGS="untraced default torch"  REPEATS=2  STEPS=40  WARMUP=10
#   results: $OUT/pytorch or runs/pytorch
set -uo pipefail
FOLDER=$(cd "${1:-.}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
LIB="$FOLDER/lib/libridge_inject.so"
BENCH="$HERE/trace_pytorch.py"
DIR="${OUT:-runs}/pytorch"
SIZES=${SIZES:-small}
CONFIGS=${CONFIGS:-untraced default torch}
REPEATS=${REPEATS:-2}
STEPS=${STEPS:-40}
WARMUP=${WARMUP:-10}
mkdir -p "$DIR"
source "$HERE/trace_overhead_settings.sh"
export RIDGE_TRACE_PROFILER_RANGE=1 RIDGE_TRACE_STEP_RANGE=step

for size in $SIZES; do
  for rep in $(seq 0 $((REPEATS - 1))); do
    for label in $CONFIGS; do
      base="$DIR/$label.$size.$rep"
      args=(run --size "$size" --steps "$STEPS" --warmup "$WARMUP" --mode "$label" --out "$base.steps.json")
      if [[ $label == cli ]]; then  # the real command line, its defaults
        "$FOLDER/bin/ridge" trace --profiler-range --step-range step -o "" --json "$base.summary.json" \
            -- python3 "$BENCH" "${args[@]}" > "$base.txt" 2> "$base.stderr"
      elif [[ $label == torch ]]; then
        python3 "$BENCH" "${args[@]}" --torch-trace "$base.trace.json" > "$base.txt" 2> "$base.stderr"
        [[ $rep == 0 ]] && python3 "$BENCH" count "$base.trace.json" --out "$base.count.json" > /dev/null
        rm -f "$base.trace.json"
      else
        traced_run "$label" "$LIB" "$base.summary.json" python3 "$BENCH" "${args[@]}" > "$base.txt" 2> "$base.stderr"
      fi
      echo "$size $rep $label: $(grep trace_pytorch: "$base.txt" | tail -1)"
    done
  done
done

python3 - "$DIR" "$SIZES" "$CONFIGS" "$REPEATS" <<'PYEOF'
import json, statistics, sys
d, sizes, labels, repeats = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
rows = ["| size | setting | step ms | vs untraced | host enqueue ms | kernels/step | dropped |", "|---|---|---|---|---|---|---|"]
out = {}
for size in sizes:
    base = None
    for label in labels:
        steps, enq = [], []
        for r in range(repeats):
            s = load(f"{d}/{label}.{size}.{r}.steps.json")
            if s:
                steps += s["step_ms"]
                enq += s.get("enqueue_ms", [])
        if not steps:
            continue
        med, emed = statistics.median(steps), statistics.median(enq) if enq else None
        if label == "untraced":
            base = med
        summ = load(f"{d}/{label}.{size}.0.summary.json") or load(f"{d}/{label}.{size}.0.count.json") or {}
        kps, dropped = summ.get("kernels_per_step_median"), summ.get("dropped_records", "")
        out.setdefault(size, {})[label] = {"step_ms": med, "enqueue_ms": emed, "kernels_per_step": kps}
        ratio = f"{med / base:.3f}x" if base else "-"
        rows.append(f"| {size} | {label} | {med:.3f} | {ratio} | {emed:.3f} | {kps} | {dropped} |" if emed is not None
                    else f"| {size} | {label} | {med:.3f} | {ratio} | - | {kps} | {dropped} |")
text = "\n".join(rows) + "\n"
open(f"{d}/pytorch.md", "w").write(text)
json.dump(out, open(f"{d}/pytorch.json", "w"), indent=1)
print(text)
PYEOF
