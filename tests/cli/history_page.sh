#!/usr/bin/env bash
# history_page.sh RIDGE SOURCE_DIR: `ridge history html` opened in a real headless Chromium. A
# history of three series on two GPUs (tests/cli/history_step.jsonl, and copies of it on another
# record and another GPU, one named with HTML and script text, quotes and non-ASCII letters) is
# written as a page; the page must load with no console message, draw one chart per series with
# its points and the change marked, list the regressions, keep the hostile name as text, and its
# URL hash filters (GPU, record name) must hide the other charts. Exits 77 (skipped) without Chromium.
set -euo pipefail
ridge=$1; src=$2
fail() { echo "FAIL: $*"; exit 1; }

source "$(dirname "$0")/chromium.sh"
find_chromium "the history page's browser test"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
step=$src/tests/cli/history_step.jsonl
hostile='</script><img src=x onerror=\\"document.title=1\\"> \\"quoted\\" ünïcødé ✓'
sed 's|"name": "matmul"|"name": "bandwidth.add"|' "$step" >"$tmp/add.jsonl"
sed -e "s|\"name\": \"matmul\"|\"name\": \"$hostile\"|" -e 's|"name": "NVIDIA H200"|"name": "NVIDIA H100 80GB HBM3"|' \
  "$step" >"$tmp/hostile.jsonl"
for f in "$step" "$tmp/add.jsonl" "$tmp/hostile.jsonl"; do "$ridge" history import "$tmp/h.db" "$f" >/dev/null; done
"$ridge" history html "$tmp/h.db" -o "$tmp/page" --title 'Fixture <history> & "more"' >"$tmp/out" ||
  fail "history html: $(cat "$tmp/out")"
grep -q "3 of 3 series over 6 of 6 commits, 3 change(s)" "$tmp/out" || fail "html summary line: $(cat "$tmp/out")"
[ -s "$tmp/page/index.html" ] || fail "no index.html"
! grep -Eq '(src|href)="?https?:' "$tmp/page/index.html" || fail "the page references the network"

# load HASH: the page's DOM after its scripts ran, in $tmp/dom; the browser's log in $tmp/log.
load() {
  "$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/profile" \
    --enable-logging=stderr --v=0 --dump-dom "file://$tmp/page/index.html$1" >"$tmp/dom" 2>"$tmp/log" ||
    { cat "$tmp/log"; fail "chromium could not load the page$1"; }
  grep -q 'data-ready="1"' "$tmp/dom" || { cat "$tmp/log"; fail "the page's script did not finish$1"; }
  ! grep -q 'data-errors=' "$tmp/dom" || fail "the page raised a script error$1"
  if grep -q 'CONSOLE' "$tmp/log"; then grep 'CONSOLE' "$tmp/log"; fail "console messages$1"; fi
}
count() { grep -o "$1" "$tmp/dom" | wc -l | tr -d ' '; }

load ""
[ "$(count '<section class="series"')" = 3 ] || fail "expected 3 chart sections, got $(count '<section class="series"')"
[ "$(count '<svg class="chart"')" = 3 ] || fail "expected 3 SVG charts"
[ "$(count '<circle class="point"')" = 18 ] || fail "expected 18 points (6 runs x 3), got $(count '<circle class="point"')"
[ "$(count 'class="change change-regression"')" = 3 ] || fail "expected 3 regressions marked on the charts"
[ "$(count '<rect class="band"')" -ge 3 ] || fail "expected a noise band on each chart"
[ "$(count '<tr class="regression">')" = 3 ] || fail "expected 3 regressions in the summary"
grep -q 'data-shown="3"' "$tmp/dom" || fail "all charts should show without a filter"
# The hostile record name stays text: no element made of it, the title untouched, the letters intact.
[ "$(count '<img')" = 0 ] || fail "the record name became an element"
grep -q '<title>Fixture &lt;history&gt; &amp; "more"</title>' "$tmp/dom" || fail "title changed: $(grep -o '<title>[^<]*' "$tmp/dom")"
grep -q '&lt;/script&gt;&lt;img src=x onerror="document.title=1"&gt; "quoted" ünïcødé ✓' "$tmp/dom" ||
  fail "the hostile name is not shown as text"

load "#gpu=NVIDIA%20H200&name=MATMUL"
grep -q 'data-shown="1"' "$tmp/dom" || fail "gpu=NVIDIA H200 and name=MATMUL should leave one chart"
[ "$(count '<section class="series" hidden=""')" = 2 ] || fail "two charts should be hidden by the filter"
grep -q '<h3>matmul cuda_events bf16 n=4096</h3>' "$tmp/dom" || fail "the matmul chart is missing"

load "#gpu=NVIDIA%20H100%2080GB%20HBM3"
grep -q 'data-shown="1"' "$tmp/dom" || fail "gpu=NVIDIA H100 80GB HBM3 should leave one chart"
grep -Eq '<section class="series"><h3>&lt;/script&gt;' "$tmp/dom" || fail "the H100 chart should be the one shown"

load "#name=no-such-record"
grep -q 'data-shown="0"' "$tmp/dom" || fail "a name matching nothing should hide every chart"
echo "ok: the history page loads in $browser with no console message, draws 3 charts, and filters by GPU and name"
