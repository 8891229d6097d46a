#!/usr/bin/env bash
# no_flag_text_in_src.sh SOURCE_DIR: fails when a string literal under src/ holds command-line flag
# text ("--samples"). The library's errors and findings reach Python users too, so they name the
# field or argument ("samples must be >= 1"); the CLI adds the option that sets it (cli::naming_option).
set -u
cd "$1" || exit 2

# Lines that match without being flag text, per file.
declare -A allowed=(
  [src/report/markdown_html.cpp]=1             # report: CSS custom properties (var(--ink)), not flags
)

status=0
while read -r count file; do
  limit=${allowed[$file]:-0}
  if (( count > limit )); then
    echo "$file: $count line(s) with --flag text in a string (allowed: $limit). Name the field or argument instead:"
    grep -nE -- '"[^"]*--[a-z][a-z-]+' "$file" | sed 's/^/  /'
    status=1
  fi
done < <(grep -rcE -- '"[^"]*--[a-z][a-z-]+' src | awk -F: '$2 > 0 {print $2, $1}')
[ "$status" = 0 ] && echo "ok: no new --flag text in src/"
exit $status
