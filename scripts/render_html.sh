#!/usr/bin/env bash
# render_html.sh HTML[#ANCHOR] PNG [WIDTH] [HEIGHT]: renders an HTML file (e.g. a ridge report.html) to a PNG
# with headless Chromium and no network, to check that the page is self-contained and its plots show.
# A development tool only (Debian: apt-get install chromium); ridge itself never needs it.
# The page is drawn into a WIDTH x HEIGHT window (default 1200 x 7000 CSS pixels); what lies below
# is cut off, so pass a larger HEIGHT for long reports.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 HTML[#ANCHOR] PNG [WIDTH] [HEIGHT]" >&2; exit 2
fi
html=${1%%#*}; anchor=""; [ "$html" != "$1" ] && anchor="#${1#*#}"; png=$2; width=${3:-1200}; height=${4:-7000}
[ -f "$html" ] || { echo "render_html: no such file: $html" >&2; exit 2; }
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "render_html: chromium not found (Debian/Ubuntu: apt-get install chromium)" >&2; exit 1; }
abs_html=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
mkdir -p "$(dirname "$png")"
abs_png=$(cd "$(dirname "$png")" && pwd)/$(basename "$png")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# No network: a new empty network namespace when unshare allows it, and in any case every host name
# resolves to nothing and every request goes to a proxy that does not exist.
isolate=()
if unshare -rn true 2>/dev/null; then isolate=(unshare -rn); fi
"${isolate[@]}" "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$profile" --no-first-run --disable-background-networking --disable-component-update \
  --disable-sync --disable-extensions --host-resolver-rules="MAP * ~NOTFOUND" \
  --proxy-server="http://127.0.0.1:9" --proxy-bypass-list="<-loopback>" \
  --window-size="$width,$height" --screenshot="$abs_png" "file://$abs_html$anchor" >/dev/null 2>&1 || true
if [ ! -s "$abs_png" ]; then echo "render_html: $browser wrote no image" >&2; exit 1; fi
echo "$abs_png"
