#!/usr/bin/env bash
# Scale of `ridge history`: one history of RUNS runs x RECORDS records (SAMPLES samples each), then
# the time of `history add` of one more report (5 reports, each timed) and of `history check` of
# everything. Usage: bench/history_scale.sh OUTDIR   (RUNS=10000 RECORDS=100 SAMPLES=20
# IMPORTED=500 WORK=/tmp/history_scale RIDGE=build/bin/ridge). The database stays under WORK, out of git.
set -euo pipefail
out=${1:?usage: history_scale.sh OUTDIR}
ridge=${RIDGE:-build/bin/ridge}
work=${WORK:-/tmp/history_scale}
runs=${RUNS:-10000}
records=${RECORDS:-100}
samples=${SAMPLES:-20}
mkdir -p "$out" "$work"
db=$work/history.db
rm -f "$db" "$db-wal" "$db-shm"
log=$out/scale.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }
now() { date +%s.%N; }

say "# ridge history at scale: $runs runs x $records records x $samples samples ($(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg))"
# The first IMPORTED runs through `ridge history import` (CPU time measured), then copied in SQL
# to RUNS (bench/history_scale_db.py: importing all through the CLI takes ~10 CPU-minutes).
imported=${IMPORTED:-500}
python3 bench/history_synth.py lines --first 0 --runs "$imported" --records "$records" --samples "$samples" -o "$work/first.jsonl"
t=$( { /usr/bin/time -f "%e s wall, %U s user, %S s sys" "$ridge" history import "$db" "$work/first.jsonl" >/dev/null; } 2>&1 )
say "history import of $imported runs: $t"
python3 bench/history_scale_db.py "$db" "$runs" >/dev/null
say "copied in SQL to $(sqlite3 "$db" 'SELECT count(*) FROM runs') runs; database $(du -h "$db" | cut -f1)"

python3 bench/history_synth.py files --first "$runs" --runs 5 --records "$records" --samples "$samples" -o "$work/extra"
for ((i = runs; i < runs + 5; ++i)); do
  t=$( { /usr/bin/time -f "%e s wall, %U s user, %S s sys" "$ridge" history add "$db" "$work/extra/run$i.json" --commit "c$i" >/dev/null; } 2>&1 )
  say "history add of one report (run $((i + 1))): $t (load $(cut -d' ' -f1 /proc/loadavg))"
done

for repeat in 1 2; do
  set +e
  t=$( { /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS" "$ridge" history check "$db" --json "$work/check.json" >"$work/check.txt"; } 2>&1 )
  rc=$?
  set -e
  say "history check of everything ($repeat): $t, exit $rc (load $(cut -d' ' -f1 /proc/loadavg))"
done
say "check summary: $(head -n1 "$work/check.txt")"
say "runs in the history: $(sqlite3 "$db" 'SELECT count(*) FROM runs'), records $(sqlite3 "$db" 'SELECT count(*) FROM records'), samples $(sqlite3 "$db" 'SELECT sum(length(samples_ms)) / 8 FROM records')"
