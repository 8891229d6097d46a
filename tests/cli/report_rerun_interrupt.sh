#!/usr/bin/env bash
# report_rerun_interrupt.sh RIDGE WORKDIR: the model-only report (every GPU hidden) never mixes old
# and new files and survives interrupts:
# - an existing non-empty folder is refused (exit 2) and left as it was;
# - --force replaces only ridge's own files and keeps the user's;
# - SIGINT / SIGTERM between sections (the testing aid --pause-between-sections holds the run there)
#   exits 130 / 143, leaves DEST untouched and a partial folder marked INCOMPLETE naming the sections run;
# - a second SIGINT exits at once.
set -u
ridge=$1; work=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"; cd "$work" || exit 1
report() { CUDA_VISIBLE_DEVICES= "$ridge" report "$@"; }

# Refused: an existing folder with something in it, untouched.
mkdir old; echo keep > old/notes.txt; echo stale > old/report.md
report -o old >/dev/null 2>err; rc=$?
[ "$rc" = 2 ] || fail "a report into a non-empty folder exited $rc (expected 2)"
grep -q -- "--force" err || fail "the refusal does not mention --force: $(cat err)"
[ "$(ls old | tr '\n' ' ')" = "notes.txt report.md " ] || fail "the refused folder changed: $(ls old)"
[ "$(cat old/report.md)" = stale ] || fail "the refused folder's report.md changed"
ls -d old.partial-* 2>/dev/null && fail "a refused run left a partial folder"

# --force: ridge's own files replaced (a stale plot removed), the user's kept and named.
echo stale > old/old-plot.svg; echo stale > old/trace-old.json
report -o old --force >out 2>err; rc=$?
[ "$rc" = 0 ] || { cat err; fail "--force exited $rc"; }
[ "$(cat out)" = old ] || fail "stdout should be 'old', got '$(cat out)'"
[ "$(cat old/notes.txt)" = keep ] || fail "--force touched the user's notes.txt"
grep -q "notes.txt" err || fail "--force does not say it kept notes.txt"
grep -q "ridge report" old/report.md || fail "--force did not write a new report.md"
[ -e old/old-plot.svg ] && fail "--force kept a stale SVG (old and new files mixed)"
[ -e old/trace-old.json ] && fail "--force kept a stale trace*.json"
[ -e old/INCOMPLETE ] && fail "a finished report is marked INCOMPLETE"
ls -d old.partial-* 2>/dev/null && fail "a finished run left its partial folder"

# An empty existing folder is fine: nothing to mix.
mkdir empty; report -o empty >/dev/null 2>err || fail "a report into an empty folder failed: $(cat err)"
[ -s empty/report.md ] || fail "no report.md in the empty folder"

# interrupted SIGNAL RC: stopped after the first section, DEST absent, partial folder marked.
interrupted() {
  local sig=$1 want=$2 dest=dest-$1
  rm -f err  # the wait below reads the new run's stderr, never an earlier one's
  CUDA_VISIBLE_DEVICES= "$ridge" report -o "$dest" --pause-between-sections 30 >out 2>err &
  local pid=$!
  for _ in $(seq 200); do grep -q "done in" err 2>/dev/null && break; sleep 0.05; done
  [ -f "$dest.partial-$pid/INCOMPLETE" ] || fail "no $dest.partial-$pid/INCOMPLETE while running"
  kill -"$sig" "$pid"; wait "$pid"; rc=$?
  [ "$rc" = "$want" ] || { cat err; fail "SIG$sig exited $rc (expected $want)"; }
  [ -e "$dest" ] && fail "SIG$sig: the destination $dest exists"
  grep -q "stopped by SIG$sig" "$dest.partial-$pid/INCOMPLETE" || fail "INCOMPLETE does not name SIG$sig"
  grep -q "finished.*Roofline" "$dest.partial-$pid/INCOMPLETE" || fail "INCOMPLETE does not list the finished section"
  grep -q "not run:.*Predictions" "$dest.partial-$pid/INCOMPLETE" || fail "INCOMPLETE does not list the sections not run"
  grep -q "Incomplete report" "$dest.partial-$pid/report.md" || fail "the partial report.md is not labelled incomplete"
  grep -q "$dest.partial-$pid" err || fail "stderr does not say where the partial report is"
}
interrupted INT 130
interrupted TERM 143

# SIGINT into an existing folder with --force: the old report stays as it was.
before=$(cat old/report.md)
rm -f err
CUDA_VISIBLE_DEVICES= "$ridge" report -o old --force --pause-between-sections 30 >out 2>err &
pid=$!
for _ in $(seq 200); do grep -q "done in" err 2>/dev/null && break; sleep 0.05; done
kill -INT "$pid"; wait "$pid"; rc=$?
[ "$rc" = 130 ] || fail "SIGINT into an existing folder exited $rc (expected 130)"
[ "$(cat old/report.md)" = "$before" ] || fail "an interrupted --force run changed the old report"
[ "$(cat old/notes.txt)" = keep ] || fail "an interrupted --force run touched notes.txt"

# A second SIGINT exits at once, even while the first is being honoured.
rm -f err
CUDA_VISIBLE_DEVICES= "$ridge" report -o twice --pause-between-sections 30 >out 2>err &
pid=$!
for _ in $(seq 200); do [ -f "twice.partial-$pid/INCOMPLETE" ] && break; sleep 0.05; done
kill -INT "$pid"; kill -INT "$pid"; wait "$pid"; rc=$?
[ "$rc" = 130 ] || fail "two SIGINTs exited $rc (expected 130)"
[ -e twice ] && fail "two SIGINTs: the destination exists"
echo "ok: refusal, --force, SIGINT/SIGTERM between sections"
