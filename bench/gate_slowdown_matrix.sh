#!/usr/bin/env bash
# bench/gate_slowdown_matrix.sh RUNS_FOLDER: does `ridge compare` flag a slowdown of each record class of
# the report? Run on the GPU machine after bench/report_repeatability.sh, with its output folder
# (run-1 ... run-N, identical code). For every class below, one more report whose records of that
# class are made slower after they were measured (the testing aid --slow-records/--slow-by: each
# sample x (1 + p) or + d us, so the slowdown meets the record's real run-to-run spread), compared
# with run 1 and with all N runs as baselines. Each compare must exit 5. bench/gate_matrix.py then
# tabulates, per class, which of its records were flagged and whether any record outside it was.
# The amounts: 10% for records of 20 us and more; for shorter ones 20% or 0.5 us, whichever is more
# (the H200's medians decide: see the list). Under 2.5 us that is 0.5 us, exactly the compare's
# resolution (a change must exceed it), so those classes are slowed by 0.6 us, just past it.
set -u
cd "$(dirname "$0")/.."
ridge=${RIDGE:-build/bin/ridge}
runs_folder=${1:?usage: bench/gate_slowdown_matrix.sh RUNS_FOLDER (the output of bench/report_repeatability.sh)}
out=$runs_folder/slowdown_matrix
[ -x "$ridge" ] || { echo "gate_slowdown_matrix: $ridge not found; build first" >&2; exit 2; }
baselines=()
for run in "$runs_folder"/run-*; do baselines+=("$run"); done
[ "${#baselines[@]}" -ge 2 ] || { echo "gate_slowdown_matrix: no run-* report folders in $runs_folder" >&2; exit 2; }
rm -rf "$out"; mkdir -p "$out/compare"
failures=0
# class|selector|amount (medians on the H200 in results/h200/gate/gate_bands.md)
classes='launch-empty|ceiling.launch.empty|0.6us
launch-empty-graph|ceiling.launch.empty_graph|0.6us
bandwidth-1us|bandwidth.add n=1024|0.6us
bandwidth-4us|bandwidth.add n=2097152|20%
bandwidth-200us|bandwidth.add n=67108864|10%
matmul-256|matmul n=256|20%
matmul-1024|matmul n=1024|20%
matmul-2048|matmul n=2048|10%
matmul-4096|matmul n=4096|10%
matmul-8192|matmul n=8192|10%
timing-small|timing case=small|20%
timing-large|timing case=large|10%
decode-eager|decode mode=eager|10%
decode-graph|decode mode=graph|10%
ceiling-hbm|ceiling.hbm.read|10%
ceiling-tensor|ceiling.tensor|10%
profile|profile.decode_step|10%'
# The profile's records are one traced step each, shown and never judged: that class is expected to
# pass (exit 0), as proof that the compare does not pretend to judge them.
while IFS='|' read -r class selector amount; do
  echo "gate_slowdown_matrix: $class: $selector by $amount" >&2
  "$ridge" report -o "$out/$class" --slow-records "$selector" --slow-by "$amount" >"$out/$class.stdout" 2>"$out/$class.stderr"
  rc=$?
  [ "$rc" = 0 ] || { echo "gate_slowdown_matrix: the report for $class exited $rc" >&2; failures=$((failures + 1)); continue; }
  for against in one pooled; do
    if [ "$against" = one ]; then base=("${baselines[0]}"); else base=("${baselines[@]}"); fi
    "$ridge" compare "${base[@]}" "$out/$class" --json "$out/compare/$class-vs-$against.json" \
      --markdown "$out/compare/$class-vs-$against.md" >"$out/compare/$class-vs-$against.stdout" 2>&1
    rc=$?
    echo "$class $against $rc" >>"$out/exit_codes.txt"
    want=5
    [ "$class" = profile ] && want=0
    [ "$rc" = "$want" ] || failures=$((failures + 1))
  done
done <<<"$classes"
printf '%s\n' "$classes" >"$out/classes.txt"
python3 bench/gate_matrix.py "$out" >"$out/matrix.md" || failures=$((failures + 1))
cat "$out/matrix.md"
echo "outputs: $out; compares that did not exit 5: $failures"
[ "$failures" = 0 ]
