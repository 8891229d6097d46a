#!/usr/bin/env bash
# deep_json.sh RIDGE SCRATCH: JSON nested 100,000 levels deep is a usage error (exit 2) naming the
# file, in every reader the tool has (result files, saved traces, the catalog), never a crash.
set -u
ridge=$1; scratch=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$scratch"; mkdir -p "$scratch"
deep=$scratch/deep.json  # a valid result file whose record's params nest 100,000 levels deep
{
  printf '{"schema": "ridge.results", "schema_version": 1, "context": {}, "records": [{"name": "x", "samples_ms": [1], "params": {"a": '
  head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'
  printf '}}]}'
} > "$deep"
check() {  # check WHAT ARGS...: exit 2 and a message naming the depth limit
  local what=$1; shift
  out=$(CUDA_VISIBLE_DEVICES= "$ridge" "$@" 2>&1); rc=$?
  [ "$rc" = 2 ] || fail "$what: exit $rc, expected 2: $out"
  grep -q "nested deeper than" <<<"$out" || fail "$what: no word of the nesting limit: $out"
}
check "compare" compare "$deep" "$deep"
grep -q "$deep" <<<"$out" || fail "compare: the message does not name the file: $out"
check "trace --analyze" trace --analyze "$deep"
check "roofline --catalog" roofline --device h100-sxm --catalog "$deep"
echo "ok: 100,000 levels of nesting are refused by every reader"
