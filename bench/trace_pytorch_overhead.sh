#!/usr/bin/env bash
# What `ridge trace` costs a host-bound PyTorch training loop, per recording setting: the median
# step time untraced, traced with each setting, and under torch.profiler, interleaved, plus the
# kernels per step each trace saw (ridge's own analysis; torch.profiler's via trace_pytorch.py count).
#
#   bench/trace_pytorch_overhead.sh [BUILD_DIR]     results: $OUT/trace_overhead or runs/trace_overhead
#
#   SIZES="small medium"  STEPS=30  WARMUP=10  REPEATS=2  TORCH=1 (0: skip torch.profiler)
#   CONFIGS="selected:--api=selected most:--api=most"   label:flags (flags comma-separated)
# Needs: python3 with torch on a CUDA GPU; bin/ridge and lib/libridge_inject.so under BUILD_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
RIDGE="$BUILD/bin/ridge"
PY=${PYTHON:-python3}
BENCH=${BENCH:-$ROOT/bench/trace_pytorch.py}
DIR="${OUT:-$ROOT/runs}/trace_overhead"
SIZES=${SIZES:-small medium}
STEPS=${STEPS:-30}
WARMUP=${WARMUP:-10}
REPEATS=${REPEATS:-2}
TORCH=${TORCH:-1}
CONFIGS=${CONFIGS:-selected:--api=selected most:--api=most}
mkdir -p "$DIR"
run() { "$PY" "$BENCH" run --steps "$STEPS" --warmup "$WARMUP" "$@" > /dev/null; }

for size in $SIZES; do
  for rep in $(seq 0 $((REPEATS - 1))); do
    echo "== $size rep $rep"
    run --size "$size" --mode plain --out "$DIR/plain_$size.$rep.steps.json"
    for config in $CONFIGS; do
      label=${config%%:*}
      flags=${config#*:}
      "$RIDGE" trace --profiler-range --step-range step -o "" --json "$DIR/$label.$size.$rep.summary.json" ${flags//,/ } \
          -- "$PY" "$BENCH" run --size "$size" --steps "$STEPS" --warmup "$WARMUP" --mode "$label" \
          --out "$DIR/$label.$size.$rep.steps.json" > /dev/null 2> "$DIR/$label.$size.$rep.stderr" ||
          { echo "ridge trace $label failed:"; tail -5 "$DIR/$label.$size.$rep.stderr"; }
    done
    if [[ $TORCH == 1 && $rep == 0 ]]; then
      run --size "$size" --mode torch --torch-trace "$DIR/torch_$size.trace.json" --out "$DIR/torch_$size.$rep.steps.json"
      "$PY" "$BENCH" count "$DIR/torch_$size.trace.json" --out "$DIR/torch_$size.count.json" > /dev/null
      rm -f "$DIR/torch_$size.trace.json"
    fi
  done
done

"$PY" - "$DIR" "$SIZES" "$CONFIGS" "$REPEATS" <<'PYEOF'
import glob, json, os, statistics, sys
d, sizes, configs, repeats = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
labels = [c.split(":", 1)[0] for c in configs]

def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None

def steps(prefix):
    out = []
    for rep in range(repeats):
        r = load(f"{prefix}.{rep}.steps.json")
        if r:
            out += r["step_ms"]
    return out

rows = ["| size | setting | flags | step ms (median) | vs untraced | kernels/step | kernels without launch call | API records | dropped |", "|---|---|---|---|---|---|---|---|---|"]
result = {}
for size in sizes:
    plain = steps(os.path.join(d, f"plain_{size}"))
    base = statistics.median(plain) if plain else None
    rows.append(f"| {size} | untraced | | {base:.3f} | 1.000x | | | | |" if base else f"| {size} | untraced | | - | | | | | |")
    for label, config in zip(labels + ["torch"], configs + ["torch:torch.profiler"]):
        s = steps(os.path.join(d, f"{label}.{size}") if label != "torch" else os.path.join(d, f"torch_{size}"))
        if not s:
            continue
        med = statistics.median(s)
        if label == "torch":
            c = load(os.path.join(d, f"torch_{size}.count.json")) or {}
            kernels, dropped, unlaunched, apis = c.get("kernels_per_step_median"), "", "", ""
        else:
            summ = load(os.path.join(d, f"{label}.{size}.0.summary.json")) or {}
            kernels, dropped = summ.get("kernels_per_step_median"), summ.get("dropped_records")
            unlaunched, apis = summ.get("kernels_without_launch_call"), summ.get("api_count")
        ratio = med / base if base else None
        result.setdefault(size, {})[label] = {"step_ms": med, "overhead": ratio, "kernels_per_step": kernels}
        rows.append(f"| {size} | {label} | {config.split(':', 1)[1].replace(',', ' ')} | {med:.3f} | "
                    f"{ratio:.3f}x | {kernels} | {unlaunched} | {apis} | {dropped} |" if ratio else f"| {size} | {label} | | {med:.3f} | - | {kernels} | | | |")
    result.setdefault(size, {})["untraced"] = {"step_ms": base}
json.dump(result, open(os.path.join(d, "overhead.json"), "w"), indent=1)
text = "\n".join(rows) + "\n"
open(os.path.join(d, "overhead.md"), "w").write(text)
print(text)
PYEOF
