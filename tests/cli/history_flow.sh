#!/usr/bin/env bash
# history_flow.sh RIDGE SOURCE_DIR: `ridge history` end to end on two stored H200 reports: add
# (and add again: nothing changes), runs, check (two runs: nothing to judge, exit 6), export,
# import into a second history (the export reads back the same), usage errors (exit 2), and a
# regression at the newest commit of a small fixture (exit 5).
set -euo pipefail
ridge=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run1=$src/results/h200/gate/run-1.results.json.gz
run2=$src/results/h200/gate/run-2.results.json.gz
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() {  # expect_rc RC CMD...: runs CMD, output in $tmp/out, fails unless it exits RC
  local want=$1; shift
  set +e; "$@" >"$tmp/out" 2>&1; local rc=$?; set -e
  [ "$rc" = "$want" ] || { cat "$tmp/out"; fail "expected exit $want, got $rc from: $*"; }
}

expect_rc 0 "$ridge" history add "$tmp/h.db" "$run1" "$run2" --commit aaa --branch main
grep -q "added as run 1 (commit aaa" "$tmp/out" || fail "first add: $(cat "$tmp/out")"
expect_rc 0 "$ridge" history add "$tmp/h.db" "$run1" --commit bbb
grep -q "already in .* as run 1; nothing changed" "$tmp/out" || fail "second add: $(cat "$tmp/out")"
expect_rc 0 "$ridge" history runs "$tmp/h.db"
[ "$(grep -c ' aaa ' "$tmp/out")" = 2 ] || fail "runs should list two runs of aaa: $(cat "$tmp/out")"
expect_rc 6 "$ridge" history check "$tmp/h.db" --json "$tmp/check.json"
grep -q '"nothing_compared": true' "$tmp/check.json" || fail "check JSON: $(cat "$tmp/check.json")"
expect_rc 2 "$ridge" history check "$tmp/h.db" --since nosuchcommit
grep -q "not in the history" "$tmp/out" || fail "since: $(cat "$tmp/out")"
expect_rc 0 "$ridge" history export "$tmp/h.db" -o "$tmp/runs.jsonl"
[ "$(wc -l <"$tmp/runs.jsonl")" = 2 ] || fail "export should have two lines"
expect_rc 0 "$ridge" history import "$tmp/copy.db" "$tmp/runs.jsonl"
grep -q "2 run(s) added, 0 already" "$tmp/out" || fail "import: $(cat "$tmp/out")"
"$ridge" history export "$tmp/copy.db" >"$tmp/copy.jsonl"
cmp -s "$tmp/runs.jsonl" "$tmp/copy.jsonl" || fail "export of the imported copy differs"
expect_rc 2 "$ridge" history runs "$tmp/missing.db"
[ ! -e "$tmp/missing.db" ] || fail "runs created a missing history"
expect_rc 2 "$ridge" history add "$tmp/h.db" "$tmp/runs.jsonl"
# Six runs of one record, the newest 20% slower (tests/cli/history_step.jsonl): exit 5 at it.
expect_rc 0 "$ridge" history import "$tmp/step.db" "$src/tests/cli/history_step.jsonl"
expect_rc 5 "$ridge" history check "$tmp/step.db" --json "$tmp/step.json"
grep -Eq "REGRESSION  matmul cuda_events bf16 n=4096  at commit5 \(after commit4\)  \+(19|20|21)\.[0-9]%" "$tmp/out" ||
  fail "step: $(cat "$tmp/out")"
grep -q '"regression_at_newest": true' "$tmp/step.json" || fail "step JSON: $(cat "$tmp/step.json")"
expect_rc 5 "$ridge" history check "$tmp/step.db" --since commit4
expect_rc 0 "$ridge" history check "$tmp/step.db" --threshold 50%
echo "ok: ridge history add, runs, check, export and import"
