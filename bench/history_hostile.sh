#!/usr/bin/env bash
# Hostile input to `ridge history`: truncated, corrupted and foreign files, a folder, a FIFO, and a
# full disk (a 3 MiB tmpfs; needs root to mount, else the case says so). For each: the command, its
# exit code and message, and afterwards whether the file is unchanged (sha256) and PRAGMA
# integrity_check. Usage: bench/history_hostile.sh OUTDIR  (WORK=/tmp/history_hostile RIDGE=build/bin/ridge)
set -uo pipefail
out=${1:?usage: history_hostile.sh OUTDIR}
ridge=${RIDGE:-build/bin/ridge}
work=${WORK:-/tmp/history_hostile}
mkdir -p "$out"
rm -rf "$work"; mkdir -p "$work"
log=$out/hostile.md
: >"$log"
say() { echo "$*" | tee -a "$log"; }

python3 bench/history_synth.py files --first 0 --runs 40 --records 20 --samples 20 -o "$work/runs"
good=$work/good.db
"$ridge" history add "$good" "$work"/runs/run{0..29}.json --commit base >/dev/null  # 30 runs
sqlite3 "$good" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
new_run=$work/runs/run35.json

# try LABEL FILE CMD...: runs CMD (10 s at most), records exit code and stderr, then the file's state.
try() {
  local label=$1 file=$2; shift 2
  local before after rc msg integrity
  before=$( [ -f "$file" ] && sha256sum <"$file" | cut -c1-16 || echo "-")
  msg=$(timeout 10 "$@" 2>&1 >/dev/null); rc=$?
  after=$( [ -f "$file" ] && sha256sum <"$file" | cut -c1-16 || echo "-")
  if [ -f "$file" ]; then integrity=$(timeout 10 sqlite3 "$file" 'PRAGMA integrity_check' 2>&1 | head -n2 | tr '\n' ' ')
  else integrity="(not a regular file)"; fi
  say "### $label"
  say ""
  say "- command: \`${*/#$ridge/ridge}\`"
  say "- exit code: $rc"
  say "- message: \`$msg\`"
  say "- file unchanged: $( [ "$before" = "$after" ] && echo yes || echo "NO ($before -> $after)")"
  say "- PRAGMA integrity_check after: \`$integrity\`"
  say ""
}

say "# ridge history on hostile input ($(date -u +%F), $("$ridge" --version 2>/dev/null | head -n1))"
say ""
cp "$good" "$work/truncated.db"; truncate -s $(( $(stat -c %s "$good") / 2 )) "$work/truncated.db"
try "truncated to half (add)" "$work/truncated.db" "$ridge" history add "$work/truncated.db" "$new_run"
try "truncated to half (check)" "$work/truncated.db" "$ridge" history check "$work/truncated.db"
cp "$good" "$work/header.db"; printf 'this is not sqlite' | dd of="$work/header.db" conv=notrunc status=none
try "header overwritten (add)" "$work/header.db" "$ridge" history add "$work/header.db" "$new_run"
cp "$good" "$work/corrupt.db"
size=$(stat -c %s "$good")
for off in $((size / 3)) $((size / 2)) $((2 * size / 3)); do head -c 512 /dev/urandom | dd of="$work/corrupt.db" bs=1 seek=$off conv=notrunc status=none; done
try "random bytes in three pages (check)" "$work/corrupt.db" "$ridge" history check "$work/corrupt.db"
try "random bytes in three pages (add)" "$work/corrupt.db" "$ridge" history add "$work/corrupt.db" "$new_run"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE runs (id INTEGER PRIMARY KEY, x TEXT)'); c.execute(\"INSERT INTO runs (x) VALUES ('hello')\"); c.commit()" "$work/foreign.db"
try "foreign SQLite database (add)" "$work/foreign.db" "$ridge" history add "$work/foreign.db" "$new_run"
gzip -c "$work/runs/run0.json" >"$work/gzip.db"
try "a gzip file (check)" "$work/gzip.db" "$ridge" history check "$work/gzip.db"
cp "$work/runs/run0.json" "$work/json.db"
try "a JSON file (add)" "$work/json.db" "$ridge" history add "$work/json.db" "$new_run"
mkdir "$work/folder.db"
try "a folder (add)" "$work/folder.db" "$ridge" history add "$work/folder.db" "$new_run"
try "a folder (check)" "$work/folder.db" "$ridge" history check "$work/folder.db"
mkfifo "$work/fifo.db"
try "a FIFO (add)" "$work/fifo.db" "$ridge" history add "$work/fifo.db" "$new_run"
try "a FIFO (check)" "$work/fifo.db" "$ridge" history check "$work/fifo.db"
try "the good file, for comparison (check)" "$good" "$ridge" history check "$good"

# Full disk: a 3 MiB tmpfs holding a copy of the good history; add runs until it fails.
mnt=$work/tmpfs; mkdir -p "$mnt"
if mount -t tmpfs -o size=3m tmpfs "$mnt" 2>/dev/null; then
  cp "$good" "$mnt/full.db"
  before=$(sqlite3 "$mnt/full.db" 'SELECT count(*) FROM runs')
  python3 bench/history_synth.py files --first 100 --runs 60 --records 100 --samples 50 -o "$work/more"
  added=0 rc=0 msg=""
  for ((i = 100; i < 160; ++i)); do
    msg=$("$ridge" history add "$mnt/full.db" "$work/more/run$i.json" 2>&1 >/dev/null); rc=$?
    [ $rc -ne 0 ] && break
    added=$((added + 1))
  done
  say "### full disk (a 3 MiB tmpfs)"
  say ""
  say "- $before runs in the file; $added more added before the disk was full; then exit code $rc"
  say "- message: \`$msg\`"
  say "- runs after: $(sqlite3 "$mnt/full.db" 'SELECT count(*) FROM runs') (expected $((before + added)))"
  say "- PRAGMA integrity_check after: \`$(sqlite3 "$mnt/full.db" 'PRAGMA integrity_check' 2>&1 | head -n2 | tr '\n' ' ')\`"
  msg=$("$ridge" history check "$mnt/full.db" 2>&1 >/dev/null); rc=$?
  say "- \`ridge history check\` on the full disk afterwards: exit $rc"
  say ""
  umount "$mnt"
else
  say "### full disk: not run (mounting a tmpfs needs root; the unit test HistoryTest covers RLIMIT_FSIZE)"
fi
