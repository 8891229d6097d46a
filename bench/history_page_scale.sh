#!/usr/bin/env bash
# history_page_scale.sh OUTDIR [RUNS] [RECORDS]: how long the history page of RECORDS series
# (default 100) over a generated history of RUNS runs (default 1000, one per commit) takes to build
# (`ridge history html`) and to load in headless Chromium. The page records performance.now() when
# its script has drawn every chart (data-render-ms: from navigation start, so parsing the HTML and
# its embedded JSON is included); the wall time of `chromium --dump-dom` adds the browser's start.
# Loads the default page (the newest 200 commits) and one with every commit on the axis; an empty
# page first, for the browser's own start.
set -euo pipefail
out=$1; runs=${2:-1000}; records=${3:-100}
ridge=${RIDGE:-build/bin/ridge}
browser=${RIDGE_CHROMIUM:-chromium}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 "$here/history_page_scale.py" "$runs" "$records" >"$tmp/runs.jsonl"
/usr/bin/time -f "%e s" -o "$tmp/import.time" "$ridge" history import "$tmp/h.db" "$tmp/runs.jsonl" >/dev/null
# load URL: the DOM after the page's scripts ran in $tmp/dom; wall and CPU seconds of the whole
# browser (every process it waited for) in $tmp/load.time.
load() {
  /usr/bin/time -f "%e s wall, %U+%S s CPU" -o "$tmp/load.time" "$browser" --headless --no-sandbox --disable-gpu \
    --no-first-run --user-data-dir="$tmp/profile" --dump-dom "$1" >"$tmp/dom" 2>/dev/null
}
echo '<!DOCTYPE html><p>empty</p>' >"$tmp/empty.html"
{
  for attempt in 1 2; do load "file://$tmp/empty.html"; echo "an empty page: chromium --dump-dom $(cat "$tmp/load.time")"; done
  echo "history: $runs runs x $records records x 20 samples (bench/history_page_scale.py); import $(cat "$tmp/import.time")"
  echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $("$browser" --version 2>/dev/null)"
  for commits in 200 "$runs"; do
    /usr/bin/time -f "%e" -o "$tmp/build.time" "$ridge" history html "$tmp/h.db" -o "$tmp/page" --max-commits "$commits" \
      --max-series "$records" >"$tmp/html.out"
    size=$(stat -c %s "$tmp/page/index.html")
    for attempt in 1 2 3; do
      load "file://$tmp/page/index.html"
      render=$(grep -o 'data-render-ms="[0-9.]*"' "$tmp/dom" | grep -o '[0-9.]*')
      charts=$(grep -o '<svg class="chart"' "$tmp/dom" | wc -l)
      points=$(grep -o '<circle class="point"' "$tmp/dom" | wc -l)
      printf 'commits on axis %5s  page %9s bytes  build %6s s  load %d: drawn at %7s ms (performance.now)  chromium --dump-dom %s  charts %s  points %s\n' \
        "$commits" "$size" "$(cat "$tmp/build.time")" "$attempt" "$render" "$(cat "$tmp/load.time")" "$charts" "$points"
    done
    sed 's/^/  ridge: /' "$tmp/html.out"
  done
} | tee "$out/history_page_scale.txt"
