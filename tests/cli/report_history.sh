#!/usr/bin/env bash
# report_history.sh RIDGE: `ridge report --history DB` (every GPU hidden: the model-only report)
# adds its run to the history at the end, under the commit of the git repository it runs in; the
# folder added again is the same run; a history that is not one stops the report before any work
# (exit 2, no folder written).
set -euo pipefail
ridge=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export CUDA_VISIBLE_DEVICES=
# A git repository with one commit, so the commit is known: the run goes in under it.
git -C "$tmp" init -q -b trunk repo
git -C "$tmp/repo" -c user.name=t -c user.email=t@t commit -q --allow-empty -m one
sha=$(git -C "$tmp/repo" rev-parse HEAD)
cd "$tmp/repo"
"$ridge" report -o "$tmp/r1" --history "$tmp/h.db" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "report exited $?"; }
[ "$(cat "$tmp/out")" = "$tmp/r1" ] || fail "stdout should be the folder: $(cat "$tmp/out")"
grep -q "added to $tmp/h.db as run 1 (commit $sha)" "$tmp/err" || fail "no 'added' line: $(cat "$tmp/err")"
"$ridge" history runs "$tmp/h.db" >"$tmp/runs"
[ "$(grep -c " ${sha:0:12} " "$tmp/runs")" = 1 ] || fail "history runs: $(cat "$tmp/runs")"
grep -q " trunk " "$tmp/runs" || fail "the branch should be git's: $(cat "$tmp/runs")"
"$ridge" history add "$tmp/h.db" "$tmp/r1" >"$tmp/out"
grep -q "already in .* as run 1; nothing changed" "$tmp/out" || fail "the folder added again: $(cat "$tmp/out")"
printf 'not a database\n%.0s' {1..100} >"$tmp/notes.db"
set +e; "$ridge" report -o "$tmp/r2" --history "$tmp/notes.db" >"$tmp/out" 2>"$tmp/err"; rc=$?; set -e
[ "$rc" = 2 ] || fail "a history that is not SQLite: exit $rc, expected 2: $(cat "$tmp/err")"
grep -q "not an SQLite database" "$tmp/err" || fail "error: $(cat "$tmp/err")"
[ ! -e "$tmp/r2" ] && [ -z "$(ls -d "$tmp"/r2.partial-* 2>/dev/null)" ] || fail "a folder was written before the error"
echo "ok: ridge report --history adds the run"
