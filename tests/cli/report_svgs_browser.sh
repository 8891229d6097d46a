#!/usr/bin/env bash
# report_svgs_browser.sh KNOWN FOLDER...: every SVG under the folders (a report's, results/) drawn by
# a real headless Chromium, with its real fonts. Each SVG is screenshot to a PNG in a temporary
# folder (never committed; RIDGE_SVG_PNG_DIR=DIR keeps them there to look at), and a page holding
# them all measures every drawn text and data marker (getBoundingClientRect): no two texts and no
# text and marker may overlap by more than 1 px either way, except in the SVGs the KNOWN file lists
# (tests/cli/data/svg_overlaps_known.txt: drawn before the layout, no stored data to draw them
# again from), where no more pairs than it says. Also fails when an SVG does not draw (no texts).
# Exits 77 (skipped) without Chromium.
set -euo pipefail
known=$1; shift
fail() { echo "FAIL: $*"; exit 1; }

source "$(dirname "$0")/chromium.sh"
find_chromium "the SVGs' browser test"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pngs=${RIDGE_SVG_PNG_DIR:-$tmp/png}
mkdir -p "$pngs"
mapfile -t svgs < <(find "$@" -name '*.svg' -type f | sort)
[ "${#svgs[@]}" -gt 0 ] || fail "no SVG under $*"
chrome() {
  "$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/profile" --hide-scrollbars "$@"
}

# One page with every SVG inline (prolog dropped), each in a <div data-file>, and a script that
# counts the overlapping pairs per SVG into data-pairs.
{
  echo '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
  for f in "${svgs[@]}"; do
    printf '<div class="plot" data-file="%s">' "$f"
    sed '/^<?xml/d' "$f"
    echo '</div>'
  done
  cat <<'EOF'
<script>
for (const div of document.querySelectorAll('div.plot')) {
  const boxes = [];
  for (const t of div.querySelectorAll('svg text')) {
    const b = t.getBoundingClientRect();
    if (b.width > 0) boxes.push({b, text: true, what: t.firstChild ? t.firstChild.textContent : ''});
  }
  for (const c of div.querySelectorAll('svg circle.marker')) boxes.push({b: c.getBoundingClientRect(), text: false, what: 'marker'});
  const pairs = [];
  for (let i = 0; i < boxes.length; ++i)
    for (let j = i + 1; j < boxes.length; ++j) {
      const p = boxes[i].b, q = boxes[j].b;
      if (!boxes[i].text && !boxes[j].text) continue;
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left), h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 1 && h > 1) pairs.push(boxes[i].what + ' / ' + boxes[j].what);
    }
  div.setAttribute('data-texts', boxes.filter(x => x.text).length);
  div.setAttribute('data-pairs', pairs.length);
  div.setAttribute('data-first', pairs.slice(0, 2).join(' | '));
}
document.body.setAttribute('data-ready', '1');
</script></body></html>
EOF
} >"$tmp/all.html"
chrome --dump-dom "file://$tmp/all.html" >"$tmp/dom" 2>"$tmp/log" || { cat "$tmp/log"; fail "chromium could not load the page"; }
grep -q 'data-ready="1"' "$tmp/dom" || fail "the page's script did not finish"

bad=0; total=0
for f in "${svgs[@]}"; do
  line=$(grep -o "data-file=\"$f\"[^>]*" "$tmp/dom" | head -1)
  texts=$(sed -n 's/.*data-texts="\([0-9]*\)".*/\1/p' <<<"$line")
  pairs=$(sed -n 's/.*data-pairs="\([0-9]*\)".*/\1/p' <<<"$line")
  first=$(sed -n 's/.*data-first="\([^"]*\)".*/\1/p' <<<"$line")
  [ -n "$texts" ] && [ "$texts" -gt 0 ] || fail "$f: Chromium drew no text"
  allowed=0
  while read -r n path; do case "$f" in *"$path") allowed=$n ;; esac; done <"$known"
  total=$((total + pairs))
  if [ "$pairs" -gt "$allowed" ]; then echo "$f: $pairs overlapping pairs in Chromium (allowed $allowed): $first"; bad=1; fi
  # The picture a person sees (820 px wide: the plots are 800).
  chrome --screenshot="$pngs/$(echo "$f" | tr '/' '_' | sed 's/\.svg$/.png/')" --window-size=820,700 "file://$(readlink -f "$f")" \
    >/dev/null 2>&1 || fail "$f: Chromium could not draw it"
done
n_png=$(find "$pngs" -name '*.png' -size +2k | wc -l)
[ "$n_png" -ge "${#svgs[@]}" ] || fail "only $n_png of ${#svgs[@]} screenshots were written"
[ "$bad" = 0 ] || fail "labels overlap in Chromium"
echo "ok: ${#svgs[@]} SVGs drawn by $browser ($n_png screenshots), $total overlapping pairs, all within the known ones"
