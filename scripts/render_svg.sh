#!/usr/bin/env bash
# render_svg.sh SVG PNG: renders an SVG file to a PNG with headless Chromium, to look at ridge's
# plots the way a browser draws them. A development tool, not a build dependency
# (Debian: apt-get install chromium).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 SVG PNG" >&2
  exit 2
fi
svg=$1
png=$2
[ -r "$svg" ] || { echo "render_svg.sh: cannot read $svg" >&2; exit 2; }
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
[ -n "$browser" ] || { echo "render_svg.sh: no Chromium found; install it (Debian: apt-get install chromium)" >&2; exit 2; }

# The window matches the SVG's own size (its first width/height attributes), so nothing is cut.
width=$(grep -o -m1 '<svg[^>]*' "$svg" | grep -o ' width="[0-9]*"' | grep -o '[0-9]\+' || true)
height=$(grep -o -m1 '<svg[^>]*' "$svg" | grep -o ' height="[0-9]*"' | grep -o '[0-9]\+' || true)
width=${width:-800}
height=${height:-600}

# An HTML page holding the SVG with no margins: Chromium's screenshot is then exactly the plot.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$svg" "$work/plot.svg"
printf '<!doctype html><html><body style="margin:0;background:white"><img src="plot.svg" width="%s" height="%s"></body></html>\n' \
  "$width" "$height" >"$work/page.html"
mkdir -p "$(dirname "$png")"
out=$(cd "$(dirname "$png")" && pwd)/$(basename "$png")
# The virtual-time budget lets the page finish drawing before the screenshot is taken.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --run-all-compositor-stages-before-draw --virtual-time-budget=3000 \
  --user-data-dir="$work/profile" --window-size="$width,$height" --screenshot="$out" \
  "file://$work/page.html" >/dev/null 2>&1
[ -s "$out" ] || { echo "render_svg.sh: Chromium wrote no image to $out" >&2; exit 1; }
echo "$out (${width}x${height})"
