#!/usr/bin/env bash
# reader_scale.sh OUTDIR [OLD_RIDGE]: the figures of results/cpu/reader_scale/. Runs
# build/bin/reader_scale (library: read and compare, 1..10 million samples in one record and
# 3,300..330,000 records of 20 samples), then times `ridge compare` end to end on the two largest
# pairs; with OLD_RIDGE (a ridge built before the fix) also the before/after on the pairs it can
# finish. Build first: ninja -C build ridge_cli reader_scale
set -u
out=${1:?usage: reader_scale.sh OUTDIR [OLD_RIDGE]}; old=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd); ridge=$root/build/bin/ridge
mkdir -p "$out"; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
TIMEFORMAT='%R s wall'
{ lscpu | grep -E "Model name|^CPU\(s\)"; free -g | head -2; git -C "$root" log -1 --format='ridge at %h'; } > "$out/machine.txt" 2>&1
"$root/build/bin/reader_scale" --dir "$work" --keep 1 2>&1 | tee "$out/reader_scale.txt"
cd "$work" || exit 1
timed() {  # timed LABEL BINARY FILE_STEM
  echo "\$ ($1) ridge compare $3_base.json $3_new.json"
  time timeout 300 "$2" compare "$3_base.json" "$3_new.json" > run.txt 2>&1
  echo "exit $?"; tail -n 2 run.txt | cut -c1-400; echo
}
for f in one_record_10000000_samples 330000_records; do timed after "$ridge" "$f"; done > "$out/cli_largest.txt" 2>&1
if [ -n "$old" ]; then
  for f in one_record_100000_samples 3300_records 33000_records; do
    timed before "$old" "$f"; timed after "$ridge" "$f"
  done > "$out/before_after.txt" 2>&1
fi
cat "$out/cli_largest.txt" "$out/before_after.txt" 2>/dev/null
