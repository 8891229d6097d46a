#!/usr/bin/env bash
# bench/report_compare.sh: run on the GPU machine (after building; no arguments).
#   1. two consecutive full `ridge report` runs, then `ridge compare` between them: no significant
#      regression expected (exit 0: no false alarm);
#   2. a `--quick` report (wall-time target <= 20 s; full target <= 90 s);
#   3. a run deliberately slowed by `ridge report --inject-slowdown-us` (a testing aid: a GPU busy-wait
#      after every call of the timing exercise's large matmul), compared with the first: must be
#      flagged (exit 5).
# Writes everything to $OUT/report_compare (or runs/report_compare) and prints a short table last.
# Exit status: 0 when every expectation held. RIDGE=path/to/ridge overrides the binary.
set -u
cd "$(dirname "$0")/.."
ridge=${RIDGE:-build/bin/ridge}
slowdown_us=${SLOWDOWN_US:-500}
out=${OUT:-runs}/report_compare
rm -rf "$out"; mkdir -p "$out"
[ -x "$ridge" ] || { echo "report_compare: $ridge not found; build first" >&2; exit 2; }

declare -a rows
failures=0
now_ns() { date +%s%N; }
# run NAME TARGET_S EXPECTED_RC CMD...: runs CMD with stdout/stderr to files, records wall time and rc.
run() {
  local name=$1 target=$2 want=$3; shift 3
  local t0 t1 rc secs verdict
  echo "report_compare: $name: $*" >&2
  t0=$(now_ns); "$@" >"$out/$name.stdout" 2>"$out/$name.stderr"; rc=$?; t1=$(now_ns)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  verdict=ok
  [ "$rc" = "$want" ] || verdict="FAIL (exit $rc, expected $want)"
  if [ "$target" != "-" ] && awk -v s="$secs" -v t="$target" 'BEGIN { exit !(s > t) }'; then
    verdict="$verdict; SLOW (> $target s)"
  fi
  [ "$verdict" = ok ] || failures=$((failures + 1))
  rows+=("$(printf '%-26s %8s %8s %6s  %s' "$name" "$secs" "$target" "$rc" "$verdict")")
}

"$ridge" --version > "$out/version.txt" 2>&1
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/nvidia-smi.csv" 2>&1 || true

run report-full-1 90 0 "$ridge" report -o "$out/full-1" \
  --predict naive_over_sync=0.01 --predict hbm_tb_per_s=4.2 --predict matmul_70pct_n=2048
run report-full-2 90 0 "$ridge" report -o "$out/full-2"
run report-quick 20 0 "$ridge" report --quick -o "$out/quick"
run report-slowed 90 0 "$ridge" report -o "$out/slowed" --inject-slowdown-us "$slowdown_us"
run compare-rerun - 0 "$ridge" compare "$out/full-1" "$out/full-2" --json "$out/compare-rerun.json" \
  --markdown "$out/compare-rerun.md"
run compare-slowed - 5 "$ridge" compare "$out/full-1" "$out/slowed" --json "$out/compare-slowed.json" \
  --markdown "$out/compare-slowed.md"

echo
echo "== ridge compare full-1 full-2 (expect no regression) =="
cat "$out/compare-rerun.stdout"
echo
echo "== ridge compare full-1 slowed (--inject-slowdown-us $slowdown_us; expect exit 5) =="
cat "$out/compare-slowed.stdout"
echo
printf '%-26s %8s %8s %6s  %s\n' "step" "wall s" "target" "exit" "verdict"
for r in "${rows[@]}"; do echo "$r"; done
echo "outputs: $out"
[ "$failures" = 0 ]
