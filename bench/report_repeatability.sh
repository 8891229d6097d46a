#!/usr/bin/env bash
# bench/report_repeatability.sh [N]: does `ridge compare` fail identical code? Run on the GPU machine
# after building (N defaults to 10, or RUNS=N).
#   1. N back-to-back full `ridge report` runs of the same build;
#   2. `ridge compare` on all N(N-1)/2 pairs (earlier run as base): every one must exit 0;
#   3. the last run against the other N-1 as baselines (their run-to-run spread widens each
#      record's noise band): must exit 0;
#   4. one report with `--inject-slowdown-us` chosen to make the timing exercise's large matmul
#      SLOWDOWN_PERCENT (default 10) percent slower, from run 1's own median of that record, compared
#      with run 1 and with all N runs as baselines: both must exit 5 (flagged).
# Writes everything to $OUT/report_repeatability (or runs/report_repeatability); prints the pairs'
# flagged records and a summary table last. Exit status: 0 when every expectation held.
# RIDGE=path/to/ridge overrides the binary; python3 reads the JSON (as on the H200).
set -u
cd "$(dirname "$0")/.."
ridge=${RIDGE:-build/bin/ridge}
runs=${1:-${RUNS:-10}}
percent=${SLOWDOWN_PERCENT:-10}
out=${OUT:-runs}/report_repeatability
[ -x "$ridge" ] || { echo "report_repeatability: $ridge not found; build first" >&2; exit 2; }
command -v python3 >/dev/null || { echo "report_repeatability: python3 is needed to read the JSON" >&2; exit 2; }
[[ "$runs" =~ ^[0-9]+$ ]] && [ "$runs" -ge 2 ] || { echo "report_repeatability: N must be an integer >= 2, got '$runs'" >&2; exit 2; }
rm -rf "$out"; mkdir -p "$out/compare"

declare -a rows
failures=0
now_ns() { date +%s%N; }
# Names of the records a comparison JSON flags, "-" when none.
flagged() {
  python3 - "$1" <<'EOF'
import json, sys
try:
    rows = json.load(open(sys.argv[1]))["rows"]
except (OSError, ValueError, KeyError):
    print("(no comparison JSON)"); sys.exit()
names = [f"{r['name']} {r['method']} {r['dtype']} " + ",".join(f"{k}={v}" for k, v in sorted(r["params"].items()))
         + f" {100 * (r['ratio'] - 1):+.1f}% (band {100 * r['noise_band']:.1f}% {r['noise_band_source']})"
         for r in rows if r["verdict"] == "REGRESSION"]
print("; ".join(names) if names else "-")
EOF
}
# step NAME EXPECTED_RC CMD...: runs CMD (stdout/stderr to files), records its wall time, exit code and,
# for a compare, what it flagged.
step() {
  local name=$1 want=$2; shift 2
  local t0 t1 rc secs verdict what=""
  echo "report_repeatability: $name: $*" >&2
  t0=$(now_ns); "$@" >"$out/$name.stdout" 2>"$out/$name.stderr"; rc=$?; t1=$(now_ns)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  verdict=ok
  [ "$rc" = "$want" ] || { verdict="FAIL (expected $want)"; failures=$((failures + 1)); }
  [ -f "$out/compare/$name.json" ] && what=$(flagged "$out/compare/$name.json")
  rows+=("$(printf '%-22s %7s %4s %4s  %-22s %s' "$name" "$secs" "$want" "$rc" "$verdict" "$what")")
  return 0
}
compare() {  # compare NAME EXPECTED_RC FILES...
  local name=$1 want=$2; shift 2
  step "$name" "$want" "$ridge" compare "$@" --json "$out/compare/$name.json" --markdown "$out/compare/$name.md"
}

"$ridge" --version >"$out/version.txt" 2>&1
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.csv" 2>&1 || true

for i in $(seq 1 "$runs"); do step "report-$i" 0 "$ridge" report -o "$out/run-$i"; done

pairs=0
for i in $(seq 1 "$runs"); do
  for j in $(seq $((i + 1)) "$runs"); do
    compare "pair-$i-$j" 0 "$out/run-$i" "$out/run-$j"
    pairs=$((pairs + 1))
  done
done
baselines=()
for i in $(seq 1 $((runs - 1))); do baselines+=("$out/run-$i"); done
compare "last-vs-others" 0 "${baselines[@]}" "$out/run-$runs"

# The slowdown: percent x run 1's median of the large matmul's events record, in microseconds.
slowdown_us=$(python3 - "$out/run-1/results.json" "$percent" <<'EOF'
import json, statistics, sys
records = json.load(open(sys.argv[1]))["records"]
large = [r for r in records if r["name"] == "timing" and r["method"] == "cuda_events"
         and r["params"].get("case") == "large"]
# The median of the samples, as ridge computes it when it reads a file.
print(f"{float(sys.argv[2]) / 100 * statistics.median(large[0]['samples_ms']) * 1e3:.1f}" if large else "")
EOF
)
if [ -z "$slowdown_us" ]; then
  echo "report_repeatability: run 1 has no timing cuda_events large record to size the slowdown" >&2
  slowdown_us=275  # 10% of 2.74 ms, the FP32 4096³ matmul on an H200 (results/h200/report)
  failures=$((failures + 1))
fi
step "report-slowed" 0 "$ridge" report -o "$out/slowed" --inject-slowdown-us "$slowdown_us"
compare "slowed-vs-run-1" 5 "$out/run-1" "$out/slowed"
compare "slowed-vs-all-runs" 5 "${baselines[@]}" "$out/run-$runs" "$out/slowed"

echo
echo "== run 1 vs run 2 (expect exit 0) =="
cat "$out/pair-1-2.stdout"
echo
echo "== run 1 vs slowed by $slowdown_us us per call of the large matmul, $percent% (expect exit 5) =="
cat "$out/slowed-vs-run-1.stdout"
echo
echo "$runs reports, $pairs pairwise compares; slowdown $slowdown_us us ($percent% of run 1's large matmul)"
printf '%-22s %7s %4s %4s  %-22s %s\n' "step" "wall s" "want" "exit" "verdict" "flagged records"
for r in "${rows[@]}"; do echo "$r"; done
# Each judged record's band on identical code and the smallest slowdown it could flag (bench/gate_bands.py).
python3 bench/gate_bands.py "$out" >"$out/gate_bands.md" 2>&1 || failures=$((failures + 1))
python3 - "$out"/run-*/results.json <<'EOF' >"$out/settle.txt"
import json, sys
# Time the launch-free timers spent settling the SM clock, per report, against the report's wall time.
for path in sys.argv[1:]:
    doc = json.load(open(path))
    settle = sum(r.get("extra", {}).get("settle_ms", 0) for r in doc["records"]) / 1e3
    print(f"{path}: settling {settle:.2f} s of {doc['report']['wall_seconds']:.2f} s")
EOF
echo "outputs: $out; failures: $failures"
[ "$failures" = 0 ]
