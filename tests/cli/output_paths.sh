#!/usr/bin/env bash
# output_paths.sh RIDGE DATA SCRATCH: every output option goes through one writer, so a FIFO, a
# symlink, a character device and a folder are treated by the same rules wherever they are given
# (roofline --svg, compare --json/--markdown, report -o, trace --json), and names that are not
# UTF-8 work. Safe as root: /dev/null is only reached through a symlink, and only after a
# dry check that it is still a character device.
set -u
ridge=$1; data=$2; scratch=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$scratch"; mkdir -p "$scratch"; cd "$scratch" || exit 1
export CUDA_VISIBLE_DEVICES=
roofline=(roofline --device h100-sxm)

# A regular file is replaced; no temporary file is left beside it.
echo old > plot.svg
"$ridge" "${roofline[@]}" --svg plot.svg >/dev/null || fail "roofline --svg plot.svg"
grep -q "<svg" plot.svg || fail "plot.svg was not written"
[ "$(ls -A | wc -l)" = 1 ] || fail "files left beside plot.svg: $(ls -A)"

# A symlink is followed: the target gets the plot, the link stays a link.
mkdir real; echo old > real/target.svg; ln -s real/target.svg link.svg
"$ridge" "${roofline[@]}" --svg link.svg >/dev/null || fail "roofline --svg link.svg"
[ -L link.svg ] || fail "link.svg was replaced by a regular file"
grep -q "<svg" real/target.svg || fail "the link's target did not get the plot"

# A FIFO is written in place (a reader gets the plot) and stays a FIFO.
mkfifo pipe.svg
cat pipe.svg > from_pipe.svg &
reader=$!
"$ridge" "${roofline[@]}" --svg pipe.svg >/dev/null || fail "roofline --svg pipe.svg"
wait "$reader"
[ -p pipe.svg ] || fail "pipe.svg is no longer a FIFO"
grep -q "<svg" from_pipe.svg || fail "the reader of the FIFO got no plot"

# A character device behind a symlink stays a character device.
[ -c /dev/null ] || fail "/dev/null is not a character device before the test"
ln -s /dev/null null.json
"$ridge" compare "$data/base.json" "$data/rerun.json" --json null.json >/dev/null || fail "compare --json null.json"
[ -L null.json ] || fail "null.json is no longer a symlink"
[ -c /dev/null ] || fail "/dev/null is no longer a character device"

# A folder is a usage error that names it, before any work; nothing in it changes.
mkdir folder; echo keep > folder/keep
out=$("$ridge" "${roofline[@]}" --svg folder 2>&1); rc=$?
[ "$rc" = 2 ] || fail "roofline --svg folder: exit $rc, expected 2: $out"
grep -q "folder is a folder" <<<"$out" || fail "the error does not name the folder: $out"
out=$("$ridge" compare "$data/base.json" "$data/rerun.json" --json folder 2>&1); rc=$?
[ "$rc" = 2 ] || fail "compare --json folder: exit $rc, expected 2: $out"
grep -q "folder is a folder" <<<"$out" || fail "compare: the error does not name the folder: $out"
[ "$(ls -A folder)" = keep ] || fail "the folder changed"

# ridge trace --json FILE: FILE survives a run that fails (here: a program without CUDA).
echo precious > summary.json
"$ridge" trace --json summary.json -o trace.json -- true >/dev/null 2>&1
[ "$(cat summary.json)" = precious ] || fail "ridge trace deleted or overwrote --json FILE before the run succeeded"
[ ! -e trace.json ] || fail "ridge trace wrote a trace for a program that ran no CUDA"

# File names that are not valid UTF-8: read, written, and named in messages.
odd=$'r\xff.json'
cp "$data/base.json" "$odd"
out=$("$ridge" compare "$odd" "$data/rerun.json" --json $'cmp\xfe.json' 2>&1); rc=$?
[ "$rc" = 0 ] || fail "compare with a non-UTF-8 file name: exit $rc: $out"
[ -s $'cmp\xfe.json' ] || fail "compare --json to a non-UTF-8 name wrote nothing"
grep -q '"schema": "ridge.compare"' $'cmp\xfe.json' || fail "the comparison written to a non-UTF-8 name is not JSON"
"$ridge" "${roofline[@]}" --svg $'plot\xff.svg' >/dev/null || fail "roofline --svg to a non-UTF-8 name"
grep -q "<svg" $'plot\xff.svg' || fail "no plot in the non-UTF-8 name"
echo "ok: output paths (file, symlink, FIFO, /dev/null via symlink, folder, trace --json, non-UTF-8 names)"
