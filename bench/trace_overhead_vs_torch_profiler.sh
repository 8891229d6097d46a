#!/usr/bin/env bash
# ridge trace's overhead against torch.profiler's on PyTorch training steps, measured inside one
# process (bench/trace_overhead_vs_torch_profiler.py: traced and untraced steps interleaved), per size:
#   null   the .py with --mode cuda-profiler under no tracer: the profiler calls do nothing, so the
#          ratio must be ~1.00 (the method's own bias and noise)
#   ridge  the same under `ridge trace --profiler-range`: CUPTI on only inside the traced steps;
#          the trace must hold exactly (traced steps) x (kernels per step) kernels
#   torch  the .py with --mode torch-profiler: traced steps inside torch.profiler.profile
# and, since an A/B inside one process cannot see a cost that outside-window steps pay as much as
# traced ones, the C++ probe (bench/trace_overhead_probe.cu, built with nvcc if missing) untraced
# and under `ridge trace --profiler-range` without any window, interleaved: per-call costs must match.
#
#   bench/trace_overhead_vs_torch_profiler.sh   from the repository root; results in ${OUT:-runs}/trace_ab
#   SIZES="small medium large"  STEPS=200  WARMUP=20  BLOCK=1  CPUS=2-5 (taskset; "" = no pinning)
#   RIDGE=build/bin/ridge  PYTHON=python3  RESIDUAL=1 (0: skip the probe)  PROBE_ROUNDS=2
# Needs python3 with torch on a CUDA GPU, and ridge built (bin/ridge, lib/libridge_inject.so).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RIDGE=${RIDGE:-$ROOT/build/bin/ridge}
PY=${PYTHON:-python3}
AB="$ROOT/bench/trace_overhead_vs_torch_profiler.py"
DIR="${OUT:-$ROOT/runs}/trace_ab"
SIZES=${SIZES:-small medium large}
STEPS=${STEPS:-200}
WARMUP=${WARMUP:-20}
BLOCK=${BLOCK:-1}
CPUS=${CPUS-2-5}
PIN=()
if [[ -n $CPUS ]] && command -v taskset > /dev/null; then PIN=(taskset -c "$CPUS"); fi
mkdir -p "$DIR"
[[ -x $RIDGE ]] || { echo "trace_overhead_vs_torch_profiler.sh: $RIDGE not found: build ridge first" >&2; exit 1; }
common=(--steps "$STEPS" --warmup "$WARMUP" --block "$BLOCK")
failed=0

for size in $SIZES; do
  echo "== $size"
  "${PIN[@]}" "$PY" "$AB" --size "$size" --mode cuda-profiler --label null "${common[@]}" \
      --out "$DIR/null_$size.json" > "$DIR/null_$size.txt" 2>&1 || { failed=1; tail -5 "$DIR/null_$size.txt"; }
  tail -1 "$DIR/null_$size.txt"
  "${PIN[@]}" "$RIDGE" trace --profiler-range --step-range step -o "$DIR/ridge_$size.trace.json" \
      --json "$DIR/ridge_$size.summary.json" -- "$PY" "$AB" --size "$size" --mode cuda-profiler --label ridge \
      "${common[@]}" --out "$DIR/ridge_$size.json" > "$DIR/ridge_$size.txt" 2>&1 || { failed=1; tail -5 "$DIR/ridge_$size.txt"; }
  grep "^trace_ab:" "$DIR/ridge_$size.txt" || true
  "${PIN[@]}" "$PY" "$AB" --size "$size" --mode torch-profiler --label torch "${common[@]}" \
      --out "$DIR/torch_$size.json" > "$DIR/torch_$size.txt" 2>&1 || { failed=1; tail -5 "$DIR/torch_$size.txt"; }
  tail -1 "$DIR/torch_$size.txt"
done

# Outside any window: the probe never calls cudaProfilerStart, so gated it must run untraced.
if [[ ${RESIDUAL:-1} == 1 ]]; then
  PROBE=${PROBE:-$DIR/trace_overhead_probe}
  if [[ ! -x $PROBE ]] && command -v nvcc > /dev/null; then
    nvcc -O2 -arch=sm_90 -o "$PROBE" "$ROOT/bench/trace_overhead_probe.cu" || echo "trace_overhead_vs_torch_profiler.sh: probe build failed"
  fi
  if [[ -x $PROBE ]]; then
    echo "== residual cost outside the windows (C++ probe)"
    for round in $(seq 0 $((${PROBE_ROUNDS:-2} - 1))); do
      "${PIN[@]}" "$PROBE" 10000 3 50 > "$DIR/probe_untraced.$round.txt" 2>&1 || failed=1
      "${PIN[@]}" "$RIDGE" trace --profiler-range -o "" --json "$DIR/probe_gated.$round.summary.json" --           "$PROBE" 10000 3 50 > "$DIR/probe_gated.$round.txt" 2>&1 || failed=1
    done
  else
    echo "trace_overhead_vs_torch_profiler.sh: no probe (no nvcc?): residual cost not measured"
  fi
fi

"$PY" - "$DIR" "$SIZES" <<'PYEOF' || failed=1
import json, os, sys
d, sizes = sys.argv[1], sys.argv[2].split()

def load(name):
    try:
        with open(os.path.join(d, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def cell(r):
    if not r:
        return "-"
    lo, hi = r["ratio_ci95"]
    return f"{r['ratio']:.3f}x [{lo:.3f}, {hi:.3f}]"

rows = ["| size | untraced step ms | null A/B | ridge trace --profiler-range | torch.profiler | kernels/step ridge | "
        "kernels/step torch | kernels in trace | check |",
        "|---|---:|---|---|---|---:|---:|---:|---|"]
summary, problems = {}, []
for size in sizes:
    null, ridge, torch = load(f"null_{size}.json"), load(f"ridge_{size}.json"), load(f"torch_{size}.json")
    trace = load(f"ridge_{size}.summary.json") or {}
    stats = trace.get("collector_stats", {})
    kps = trace.get("kernels_per_step_median")
    kernels = trace.get("kernel_count")
    torch_kps = torch.get("torch_kernels_per_step") if torch else None
    checks = []
    if null:
        lo, hi = null["ratio_ci95"]
        checks.append("null ok" if lo <= 1.0 <= hi or abs(null["ratio"] - 1) < 0.01 else "NULL BIASED")
    if ridge and trace:
        want_steps = ridge["traced_steps_total"]
        steps = len(trace.get("steps", []))
        steady = trace.get("kernels_per_step_min") == trace.get("kernels_per_step_max") == kps
        exact = kps is not None and kernels == want_steps * kps and steps == want_steps and steady
        checks.append("count ok" if exact else f"COUNT: {kernels} kernels, {steps} steps (want {want_steps}), "
                      f"{trace.get('kernels_per_step_min')}-{trace.get('kernels_per_step_max')}/step")
        if stats.get("profiler_windows") != ridge["traced_blocks_total"]:
            checks.append(f"WINDOWS: {stats.get('profiler_windows')} (want {ridge['traced_blocks_total']})")
        if stats.get("cupti_errors"):
            checks.append(f"CUPTI ERRORS: {stats.get('last_cupti_error')}")
        if trace.get("kernels_without_launch_call"):  # the traced steps must cost what a full trace costs
            checks.append(f"UNJOINED: {trace.get('kernels_without_launch_call')} kernels without their launch call")
        if trace.get("dropped_records"):
            checks.append(f"DROPPED {trace.get('dropped_records')}")
        checks.append("<=1.05x" if ridge["ratio"] <= 1.05 else "OVER 1.05x")
        if torch:
            checks.append("below torch" if ridge["ratio"] < torch["ratio"] else "NOT BELOW TORCH")
    if torch_kps is not None and kps is not None and torch_kps != kps:
        checks.append(f"KERNELS/STEP DIFFER ({kps} vs torch {torch_kps})")
    problems += [f"{size}: {c}" for c in checks if c.split()[0].isupper()]  # failed checks are in capitals
    base = (ridge or null or {}).get("median_untraced_ms")
    rows.append(f"| {size} | {base:.3f} | " if base else f"| {size} | - | ")
    rows[-1] += (f"{cell(null)} | {cell(ridge)} | {cell(torch)} | {kps if kps is not None else '-'} | "
                 f"{torch_kps if torch_kps is not None else '-'} | {kernels if kernels is not None else '-'} | "
                 f"{', '.join(checks)} |")
    summary[size] = {
        "null": {k: null[k] for k in ("ratio", "ratio_ci95", "median_pair_ratio", "median_pair_ratio_ci95",
                                     "median_traced_ms", "median_untraced_ms")} if null else None,
        "ridge": {k: ridge[k] for k in ("ratio", "ratio_ci95", "median_pair_ratio", "median_pair_ratio_ci95",
                                       "median_traced_ms", "median_untraced_ms", "traced_steps_total",
                                       "traced_blocks_total")} if ridge else None,
        "torch": {k: torch[k] for k in ("ratio", "ratio_ci95", "median_pair_ratio", "median_pair_ratio_ci95",
                                       "median_traced_ms", "median_untraced_ms", "torch_kernels_per_step")} if torch else None,
        "trace": {"kernel_count": kernels, "kernels_per_step": kps, "steps": len(trace.get("steps", [])),
                  "kernels_without_launch_call": trace.get("kernels_without_launch_call"),
                  "api_count": trace.get("api_count"), "launch_latency_median_ns": trace.get("launch_latency_median_ns"),
                  "dropped_records": trace.get("dropped_records"), "collector_stats": stats} if trace else None,
        "checks": checks,
    }
note = ("Ratio = median traced step / median untraced step of one process, steps interleaved in random "
        "order; [95% bootstrap interval, pairs resampled]. null = the same run under no tracer.")
text = "\n".join(rows) + "\n\n" + note + "\n"

# The probe: median over rounds of each test's value, untraced vs gated without a window.
import glob, statistics
probe, residual = {}, {}
for setting in ("untraced", "gated"):
    for path in sorted(glob.glob(os.path.join(d, f"probe_{setting}.*.txt"))):
        for line in open(path):
            p = line.split()
            if len(p) == 4 and p[0] == "probe":
                probe.setdefault(p[1], {}).setdefault(setting, []).append(float(p[2]))
if probe:
    lines = ["| probe test (ns) | untraced | --profiler-range, no window | ratio |", "|---|---:|---:|---:|"]
    for test, v in probe.items():
        u, g = statistics.median(v.get("untraced", [float("nan")])), statistics.median(v.get("gated", [float("nan")]))
        lines.append(f"| {test} | {u:.0f} | {g:.0f} | {g / u:.3f}x |" if u else f"| {test} | {u} | {g} | - |")
    text += "\nCost of being attached outside any window (C++ probe, per call or kernel; rounds interleaved):\n\n" + "\n".join(lines) + "\n"
    residual = {t: {k: statistics.median(x) for k, x in v.items()} for t, v in probe.items()}
    gated = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(d, "probe_gated.*.summary.json")))]
    if any(g.get("kernel_count") for g in gated):
        problems.append("probe: kernels recorded although no window was opened")
with open(os.path.join(d, "summary.md"), "w") as f:
    f.write(text)
with open(os.path.join(d, "summary.json"), "w") as f:
    json.dump({"sizes": summary, "residual_probe": residual, "problems": problems}, f, indent=1)
print(text)
if problems:
    print("problems:\n  " + "\n  ".join(problems))
PYEOF
exit $failed
