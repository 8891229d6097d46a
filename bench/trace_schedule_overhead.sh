#!/usr/bin/env bash
# What a scheduled trace costs a PyTorch training loop, against an untraced run and a full trace
# (issue 27: a trace recording 1 step in 10 must cost <= 1.01x an untraced run on average).
#
# 1. Processes, interleaved: each round runs bench/trace_schedule_overhead.py `loop` (WARMUP + STEPS
#    steps of bench/trace_vs_torch_profiler.py's TinyGPT, each in an NVTX range "step") three ways,
#    in a random order: untraced; under `ridge trace --step-range step` (everything recorded); under
#    `ridge trace --step-range step --schedule $SCHEDULE`. Per round: the mean step time of each
#    traced run over the untraced one. Each scheduled run's summary must say it saw every step the
#    program began and recorded exactly the schedule's active ones, or the script fails.
# 2. In one process (AB=1, the default): the `ab` mode, blocks untraced, fully traced and scheduled
#    by ridge.trace interleaved, which separate processes' own spread cannot blur (needs the Python
#    package: RIDGE_VENV=build/python-site scripts/test_python.sh --current-env builds it there).
#
#   bench/trace_schedule_overhead.sh        from the repository root; results in ${OUT:-runs}/trace_schedule
#   SIZE=small  STEPS=500  WARMUP=20  ROUNDS=5  SCHEDULE=wait=9,active=1  AB=1  AB_ROUNDS=10  AB_BLOCK=100
#   RIDGE=build/bin/ridge  PYTHON=python3  PYTHON_SITE=build/python-site  CPUS=2-5 (taskset; "" = no pinning)
# Needs python3 with torch on a CUDA GPU and ridge built (bin/ridge, lib/libridge_inject.so). Exits
# non-zero, saying what failed, when any run fails or a trace holds the wrong steps.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RIDGE=${RIDGE:-$ROOT/build/bin/ridge}
PY=${PYTHON:-python3}
LOOP="$ROOT/bench/trace_schedule_overhead.py"
DIR="${OUT:-$ROOT/runs}/trace_schedule"
SIZE=${SIZE:-small}
STEPS=${STEPS:-500}
WARMUP=${WARMUP:-20}
ROUNDS=${ROUNDS:-5}
SCHEDULE=${SCHEDULE:-wait=9,active=1}
PYTHON_SITE=${PYTHON_SITE:-$ROOT/build/python-site}
CPUS=${CPUS-2-5}
PIN=()
if [[ -n $CPUS ]] && command -v taskset > /dev/null; then PIN=(taskset -c "$CPUS"); fi
[[ -x $RIDGE ]] || { echo "trace_schedule_overhead.sh: $RIDGE not found: build ridge first (scripts/setup.sh)" >&2; exit 1; }
(( ROUNDS >= 2 )) || { echo "trace_schedule_overhead.sh: ROUNDS must be at least 2" >&2; exit 2; }
mkdir -p "$DIR"
rm -f "$DIR"/*.json "$DIR"/*.log
common=(--size "$SIZE" --steps "$STEPS" --warmup "$WARMUP")

# One run of KIND in ROUND; its log is kept, and shown when it fails.
run() {
  local kind=$1 round=$2 log="$DIR/$1.$2.log"
  local loop=("$PY" "$LOOP" loop "${common[@]}" --out "$DIR/$kind.$round.json")
  case $kind in
    untraced) "${PIN[@]}" "${loop[@]}" > "$log" 2>&1 ;;
    full) "${PIN[@]}" "$RIDGE" trace --step-range step -o "" --json "$DIR/$kind.$round.summary.json" -- "${loop[@]}" > "$log" 2>&1 ;;
    scheduled) "${PIN[@]}" "$RIDGE" trace --step-range step --schedule "$SCHEDULE" -o "" \
                 --json "$DIR/$kind.$round.summary.json" -- "${loop[@]}" > "$log" 2>&1 ;;
  esac || { echo "trace_schedule_overhead.sh: the $kind run of round $round failed:" >&2; tail -20 "$log" >&2; exit 1; }
  grep "^trace_schedule_overhead loop:" "$log" | sed "s/^/round $round $kind: /" ||
    { echo "trace_schedule_overhead.sh: the $kind run of round $round printed no result (see $log)" >&2; exit 1; }
}

for round in $(seq 0 $((ROUNDS - 1))); do
  for kind in $(printf '%s\n' untraced full scheduled | shuf); do run "$kind" "$round"; done
done

"$PY" - "$DIR" "$ROUNDS" "$SCHEDULE" "$LOOP" <<'PYEOF'
import json, os, statistics, sys
d, rounds, schedule_text, loop_py = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.path.insert(0, os.path.dirname(loop_py))
from trace_schedule_overhead import active_steps, parse_schedule
schedule = parse_schedule(schedule_text)

def load(name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)

errors, rows, ratios = [], [], {"full": [], "scheduled": []}
for r in range(rounds):
    base = load(f"untraced.{r}.json")
    cells = [f"{base['mean_ms']:.4f}"]
    for kind in ("full", "scheduled"):
        run = load(f"{kind}.{r}.json")
        if not run["under_injection"]:
            errors.append(f"round {r}: the {kind} run did not run under ridge's injection library")
        ratios[kind].append(run["mean_ms"] / base["mean_ms"])
        cells.append(f"{run['mean_ms']:.4f} (x{ratios[kind][-1]:.4f})")
    # The scheduled trace must have counted every step and recorded exactly the active ones.
    stats = load(f"scheduled.{r}.summary.json")
    seen, recorded = stats["collector_stats"]["steps_seen"], stats["collector_stats"]["steps_recorded"]
    numbers = [s["number"] for s in stats.get("steps", [])]
    want = active_steps(schedule, base["steps_total"])
    if seen != base["steps_total"] or recorded != want or len(numbers) != want:
        errors.append(f"round {r}: the scheduled trace saw {seen} steps (the program began {base['steps_total']}), "
                      f"recorded {recorded} and analysed {len(numbers)} (the schedule makes {want} active)")
    if stats["collector_stats"].get("cupti_errors"):
        errors.append(f"round {r}: CUPTI errors while switching: {stats['collector_stats']['last_cupti_error']}")
    full = load(f"full.{r}.summary.json")
    if len(full.get("steps", [])) != base["steps_total"]:
        errors.append(f"round {r}: the full trace analysed {len(full.get('steps', []))} steps of {base['steps_total']}")
    rows.append(f"| {r} | " + " | ".join(cells) + f" | {recorded} of {seen} |")

text = (f"Mean step time, ms (x over the same round's untraced run); schedule {schedule_text}\n\n"
        "| round | untraced | fully traced | scheduled | steps recorded |\n|---|---|---|---|---|\n" + "\n".join(rows) +
        "\n\n" + "\n".join(f"{k}: mean ratio x{statistics.mean(v):.4f}, median x{statistics.median(v):.4f}, "
                           f"min x{min(v):.4f}, max x{max(v):.4f} over {len(v)} rounds" for k, v in ratios.items()) + "\n")
with open(os.path.join(d, "processes.md"), "w") as f:
    f.write(text)
print(text)
if errors:
    print("trace_schedule_overhead.sh: FAILED:\n  " + "\n  ".join(errors), file=sys.stderr)
    sys.exit(3)
PYEOF

if [[ ${AB:-1} == 1 ]]; then
  echo "== in one process: untraced, fully traced and scheduled blocks interleaved"
  PYTHONPATH="$PYTHON_SITE${PYTHONPATH:+:$PYTHONPATH}" "${PIN[@]}" "$PY" "$LOOP" ab --size "$SIZE" --warmup "$WARMUP" \
      --rounds "${AB_ROUNDS:-10}" --block "${AB_BLOCK:-100}" --schedule "$SCHEDULE" --out "$DIR/ab.json" 2>&1 |
      tee "$DIR/ab.log"
fi
echo "trace_schedule_overhead.sh: results in $DIR"
