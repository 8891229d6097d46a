#!/usr/bin/env bash
# Hardware counters replayed by the program's own steps, on the GPU machine, in one run (about 5
# minutes, nothing built here: carry build/ or build with CUDAARCHS=90-real first):
#   plan     the pass plan of the roofline set on this GPU's chip (CUPTI's Profiler Host API)
#   hang     ridge's own timers traced with counters (the run that hung on the H100): each must end
#            by itself, well inside its `timeout`, with no exit-watch message
#   gpt2     bench/counters_workload.py (GPT-2 small BF16 decode + a Triton add, 24 steps) untraced,
#            traced without counters, and traced with --counters roofline on 3 profiled steps
#            (10..12, replayed by steps: on Hopper 2 passes, so the window takes steps 10..15);
#            the wall-time ratio against the untraced run (target <= 2x), the cost ridge reports
#            (profiled steps against the others), the launches that got counters and those named
#            as differing between passes
#   timing   kernel time per step after the window (steps 16+), with and without counters (within 1%)
#   gputest  the counter GPU tests (TraceCountersGpu.*, WorkCounters.*)
#   ncu      (NCU=1) Nsight Compute on the same window and metrics with --cache-control none (CUPTI
#            does not flush the L2 either), for bench/counters_check.py ncu: kernel replay (60 launches)
#            and application replay (the first profiled step, whose kernels start from the L2 the
#            program left, as ridge's do)
# Usage: [OUT=dir] [NCU=1] bench/counters_user_replay.sh      Logs, traces and summary.txt in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
RIDGE=${RIDGE:-build/bin/ridge}
PY=${PYTHON:-python3}
OUT=${OUT:-runs/counters-replay-$(date -u +%Y%m%dT%H%M%SZ)}
STEPS=24
WINDOW=10..12       # the profiled steps
TAKEN=10..15        # what the window takes at 2 passes (the plan printed first says; checked below)
AFTER=16            # first step after the steps taken
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
# seconds NAME CMD...: runs CMD, writes its wall time to $OUT/NAME.seconds, returns its status.
seconds() {
  local name=$1; shift
  local start; start=$(date +%s%N)
  "$@"; local rc=$?
  awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }' > "$OUT/$name.seconds"
  echo "$rc" > "$OUT/$name.rc"
  return $rc
}

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv || true
  "$RIDGE" --version
  git rev-parse HEAD 2>/dev/null || true
} > "$OUT/environment.txt" 2>&1

# ---- plan ----------------------------------------------------------------------------------------
"$RIDGE" trace --counters roofline --counters-steps $WINDOW --step-range step --counters-plan GH100 \
  > "$OUT/plan_gh100.txt" 2>&1
say "plan (GH100, offline): $(head -1 "$OUT/plan_gh100.txt")"

# ---- hang: ridge's own timers under counters -----------------------------------------------------
for method in events spin graph; do
  seconds "hang_$method" timeout 120 "$RIDGE" trace --counters memory -o "$OUT/bandwidth_$method.json" -- \
    "$RIDGE" bandwidth --ops add,copy --variants vec4 --sizes 2^28 --method "$method" --samples 3 --warmup 1 \
    --ceilings none > "$OUT/hang_$method.txt" 2>&1
  rc=$(cat "$OUT/hang_$method.rc")
  watch=$(grep -c "ridge trace: at exit\|still exiting" "$OUT/hang_$method.txt")
  say "hang check, bandwidth --method $method under --counters memory: rc $rc in $(cat "$OUT/hang_$method.seconds") s" \
      "(rc 124 = hung until timeout), exit-watch messages: $watch"
done

# ---- gpt2: untraced, traced, traced with counters replayed by steps ------------------------------
seconds untraced "$PY" bench/counters_workload.py --steps $STEPS --window $TAKEN > "$OUT/gpt2_untraced.txt" 2>&1
seconds plain "$RIDGE" trace --step-range step -o "$OUT/gpt2_plain.json" -- \
  "$PY" bench/counters_workload.py --steps $STEPS --window $TAKEN > "$OUT/gpt2_plain.txt" 2>&1
seconds counters timeout 300 "$RIDGE" trace --counters roofline --counters-steps $WINDOW --step-range step \
  -o "$OUT/gpt2_counters.json" -- "$PY" bench/counters_workload.py --steps $STEPS --window $TAKEN \
  > "$OUT/gpt2_counters.txt" 2>&1
u=$(cat "$OUT/untraced.seconds"); p=$(cat "$OUT/plain.seconds"); c=$(cat "$OUT/counters.seconds")
say "gpt2 wall: untraced $u s, traced $p s, traced with counters $c s (rc $(cat "$OUT/counters.rc"))"
say "gpt2 ratio counters/untraced: $(awk -v a="$c" -v b="$u" 'BEGIN { printf "%.2f", a / b }')x (target <= 2)"
say "gpt2 plan as printed: $(grep -m1 "^Counter plan" "$OUT/gpt2_counters.txt")"
say "gpt2 window: $(grep -m1 "replay by steps" "$OUT/gpt2_counters.txt")"
grep -A8 "^Counters:" "$OUT/gpt2_counters.txt" | sed 's/^/  /' | tee -a "$SUMMARY"
"$PY" - "$OUT/gpt2_counters.json" <<'PY' | tee -a "$SUMMARY"
import json, sys
meta = json.load(open(sys.argv[1]))["ridge"]["counters"]
print(f"  counters in the trace: replay {meta.get('replay')}, passes {meta.get('passes')}, steps taken "
      f"{meta.get('steps_taken')}, profiled steps complete {meta.get('steps_profiled')}, launches with counters "
      f"{len(meta['rows'])}, perturbed {len(meta.get('perturbed', []))}, differences named {len(meta.get('mismatches', []))}, "
      f"error '{meta.get('error', '')}'")
for line in meta.get("mismatches", [])[:10]:
    print("    differs:", line)
PY

# ---- timing: kernel time per step after the window ------------------------------------------------
"$PY" bench/counters_check.py timing "$OUT/gpt2_plain.json" "$OUT/gpt2_counters.json" $AFTER > "$OUT/timing.txt" 2>&1
rc=$?
say "timing: $(tail -1 "$OUT/timing.txt") (rc $rc: 0 = within 1%)"

# ---- gputest -------------------------------------------------------------------------------------
if [[ -x build/tests/ridge_gpu_tests ]]; then
  timeout 300 build/tests/ridge_gpu_tests --gtest_filter='TraceCountersGpu.*:WorkCounters.*' --gtest_brief=1 \
    > "$OUT/gpu_tests.txt" 2>&1
  say "GPU counter tests (rc $?): $(grep -E "PASSED|FAILED" "$OUT/gpu_tests.txt" | tr '\n' ' ')"
fi

# ---- ncu (optional) ------------------------------------------------------------------------------
if [[ ${NCU:-0} == 1 ]]; then
  metrics=$("$PY" -c "import json,sys; print(','.join(json.load(open(sys.argv[1]))['ridge']['counters']['metrics']))" \
    "$OUT/gpt2_counters.json")
  seconds ncu timeout 240 ncu --clock-control none --cache-control none --nvtx --nvtx-include "profiled/" \
    --launch-count 60 --metrics "$metrics" --csv --page raw --print-units base --log-file "$OUT/ncu.csv" \
    "$PY" bench/counters_workload.py --steps $STEPS --window $WINDOW > "$OUT/gpt2_ncu.txt" 2>&1
  "$PY" bench/counters_check.py ncu "$OUT/gpt2_counters.json" "$OUT/ncu.csv" > "$OUT/vs_ncu.txt" 2>&1
  say "ncu (60 launches of steps $WINDOW, --cache-control none): $(cat "$OUT/ncu.seconds") s, rc $(cat "$OUT/ncu.rc");" \
      "comparison in vs_ncu.txt: $(tail -1 "$OUT/vs_ncu.txt")"
  # The same cache state as ridge's: kernel replay saves and restores memory between its passes, so
  # each pass after the first starts from another L2. Application replay runs the program once per
  # pass, and each kernel starts from the L2 its predecessor left, as under ridge's step replay
  # (both serialize the profiled kernels). One step (its 261 launches) keeps the reruns short.
  first=${WINDOW%%..*}
  seconds ncu_app timeout 420 ncu --clock-control none --cache-control none --replay-mode application --nvtx \
    --nvtx-include "profiled/" --metrics "$metrics" --csv --page raw --print-units base --log-file "$OUT/ncu_app.csv" \
    "$PY" bench/counters_workload.py --steps $((first + 1)) --window "$first..$first" > "$OUT/gpt2_ncu_app.txt" 2>&1
  "$PY" bench/counters_check.py ncu "$OUT/gpt2_counters.json" "$OUT/ncu_app.csv" > "$OUT/vs_ncu_app.txt" 2>&1
  say "ncu application replay (step $first, --cache-control none): $(cat "$OUT/ncu_app.seconds") s, rc $(cat "$OUT/ncu_app.rc");" \
      "comparison in vs_ncu_app.txt: $(tail -1 "$OUT/vs_ncu_app.txt")"
fi
say "logs and traces: $OUT"
