# Sourced by the browser tests: sets $browser to a working Chromium ($RIDGE_CHROMIUM, chromium,
# chromium-browser or google-chrome), or exits 77 (skipped), saying which test needed one.
# Usage: find_chromium "the history page's browser test"
find_chromium() {
  browser=${RIDGE_CHROMIUM:-}
  if [ -z "$browser" ]; then
    for candidate in chromium chromium-browser google-chrome; do
      if command -v "$candidate" >/dev/null 2>&1; then browser=$candidate; break; fi
    done
  fi
  if [ -z "$browser" ] || ! "$browser" --version >/dev/null 2>&1; then
    echo "SKIP: no working Chromium (chromium, chromium-browser, google-chrome or \$RIDGE_CHROMIUM): $1" \
         "needs one; scripts/setup.sh installs Debian's chromium"
    exit 77
  fi
}
