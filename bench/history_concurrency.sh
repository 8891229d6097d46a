#!/usr/bin/env bash
# Many writers at once: PROCS processes (default 8) start together, each adding RUNS_EACH (100)
# different runs to one history file with `ridge history add` (one transaction per run). Then
# the same 8 x 100 result files again, all at once (each must be refused as already present).
# Counts the runs, distinct content hashes and commits, and runs PRAGMA integrity_check.
# Usage: bench/history_concurrency.sh OUTDIR   (WORK=/tmp/history_concurrency RIDGE=build/bin/ridge)
set -euo pipefail
out=${1:?usage: history_concurrency.sh OUTDIR}
ridge=$(realpath "${RIDGE:-build/bin/ridge}")
work=${WORK:-/tmp/history_concurrency}
procs=${PROCS:-8}
each=${RUNS_EACH:-100}
mkdir -p "$out" "$work"
db=$work/shared.db
rm -rf "$db" "$db-wal" "$db-shm" "$work"/p*
log=$out/concurrency.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }

for ((p = 0; p < procs; ++p)); do
  python3 bench/history_synth.py files --first $((p * each)) --runs "$each" --records 20 --samples 20 -o "$work/p$p"
done
say "# $procs processes x $each runs (20 records x 20 samples each) into one file at once ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"

wave() {  # $1: label
  local pids=() start end failed=0
  start=$(date +%s.%N)
  for ((p = 0; p < procs; ++p)); do
    # Sorted by run number: the files are run<i>.json, added in order.
    mapfile -t files < <(ls "$work/p$p"/run*.json | sort -V)
    # From outside any git repository: each run's commit is its result file's git sha (c<i>).
    (cd "$work" && exec "$ridge" history add "$db" "${files[@]}") >"$work/p$p.$1.out" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
  end=$(date +%s.%N)
  say "$1: $procs processes done in $(echo "$end - $start" | bc) s; processes that failed: $failed; lines 'added': $(cat "$work"/p*."$1".out | grep -c ': added as run'), 'already in': $(cat "$work"/p*."$1".out | grep -c 'already in')"
}
wave first
say "runs: $(sqlite3 "$db" 'SELECT count(*) FROM runs'), distinct content hashes: $(sqlite3 "$db" 'SELECT count(DISTINCT content_hash) FROM runs'), distinct commits: $(sqlite3 "$db" 'SELECT count(DISTINCT commit_sha) FROM runs'), records: $(sqlite3 "$db" 'SELECT count(*) FROM records') (expected $((procs * each * 20)))"
wave again
say "runs: $(sqlite3 "$db" 'SELECT count(*) FROM runs'), distinct commits: $(sqlite3 "$db" 'SELECT count(DISTINCT commit_sha) FROM runs')"
say "missing commits: $(sqlite3 "$db" "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $((procs * each))) SELECT count(*) FROM n WHERE 'c' || i NOT IN (SELECT commit_sha FROM runs)")"
say "PRAGMA integrity_check: $(sqlite3 "$db" 'PRAGMA integrity_check')"
say "journal_mode: $(sqlite3 "$db" 'PRAGMA journal_mode')"
