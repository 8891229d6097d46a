#!/usr/bin/env bash
# expect.sh RC REGEX -- CMD ARGS...: runs CMD, passes when its exit code is RC and its combined
# output matches the extended regex REGEX.
set -u
want_rc=$1; pattern=$2; shift 2
[ "$1" = "--" ] && shift
out=$("$@" 2>&1); rc=$?
if [ "$rc" != "$want_rc" ]; then
  echo "expected exit code $want_rc, got $rc from: $*"; echo "$out"; exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
  echo "output of '$*' does not match /$pattern/:"; echo "$out"; exit 1
fi
echo "ok: $* -> rc $rc"
